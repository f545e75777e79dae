"""GPU generation when the input does not say: a compute capability from the marketing name.

DLProf CSVs and many nsys exports name the GPU but not its compute capability, yet whether fp32
can reach the Tensor Cores (TF32, Ampere on) or bf16 has a Tensor Core path depends on it. The
guess is deliberately coarse (7.0 for pre-Ampere, 8.0 for Ampere or newer): enough for the advice,
never shown as a figure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tcreport.model import Gpu

_PRE_AMPERE = re.compile(
    r"\b(V100|T4|TITAN V|TITAN RTX|RTX 20\d0|GTX|P100|P40|P4|K80|Quadro RTX)", re.I
)
_AMPERE_PLUS = re.compile(
    r"\b(A100|A30|A40|A10G?|A16|A2|A800|H100|H200|H800|H20|GH200|B100|B200|GB200|L4|L40S?|"
    r"RTX [345]0\d0|RTX A\d{4}|RTX \d{4} Ada|RTX PRO)",
    re.I,
)


def compute_capability(gpu: Gpu) -> float | None:
    """The GPU's compute capability: as recorded, else guessed from its name, else ``None``.
    Only NVIDIA GPUs have one (an AMD device's HIP architecture number is not one)."""
    if gpu.vendor not in (None, "nvidia"):
        return None
    if gpu.compute_capability:
        try:
            return float(gpu.compute_capability)
        except ValueError:
            pass
    name = gpu.name or ""
    if _AMPERE_PLUS.search(name):
        return 8.0
    if _PRE_AMPERE.search(name):
        return 7.0
    return None


#: Kernel-name marks of the architecture a kernel was built for, oldest first. A kernel built for
#: a newer architecture cannot run on an older GPU (sm80 kernels do run on a Hopper), so the newest
#: mark seen is the best guess of the GPU's generation. ``nvjet`` is cuBLAS's Hopper-era JIT GEMM.
_GENERATIONS = (
    ("Volta", re.compile(r"(?:^|\W|_)(?:sm70_|volta_)", re.I)),
    ("Turing", re.compile(r"(?:^|\W|_)(?:sm75_|turing_)", re.I)),
    ("Ampere", re.compile(r"(?:^|\W|_)(?:sm8[06]_|ampere_)", re.I)),
    ("Ada", re.compile(r"(?:^|\W|_)sm89_", re.I)),
    ("Hopper", re.compile(r"(?:^|\W|_)(?:sm90a?_|hopper_)|nvjet_", re.I)),
    ("Blackwell", re.compile(r"(?:^|\W|_)(?:sm1[02]\da?_|blackwell_)", re.I)),
)


def generation_from_kernels(names: Iterable[str]) -> str | None:
    """The GPU generation ("Hopper") the kernel names were built for, the newest one seen;
    ``None`` when no name carries an architecture mark. Used where the trace names no GPU."""
    best = -1
    for name in names:
        for i in range(len(_GENERATIONS) - 1, best, -1):
            if _GENERATIONS[i][1].search(name):
                best = i
                break
    return _GENERATIONS[best][0] if best >= 0 else None


#: The compute capability of each generation's first GPUs: what a kernel built for it proves the
#: GPU has at least.
_GENERATION_CC = {
    "Volta": 7.0,
    "Turing": 7.5,
    "Ampere": 8.0,
    "Ada": 8.9,
    "Hopper": 9.0,
    "Blackwell": 10.0,
}


def run_compute_capability(gpus: Iterable[Gpu], kernel_names: Iterable[str]) -> float | None:
    """The run's compute capability for advice: the lowest of its GPUs' (recorded, else guessed from
    the name); when no GPU yields one, that of the generation the kernel names were built for (the
    fallback the diff guard uses to identify an unnamed GPU: a Kineto trace or an nsys export
    without a GPU table still runs ``sm90_``/``nvjet_`` kernels). ``None`` for a GPU known not to
    be NVIDIA's, or when nothing says."""
    devices = tuple(gpus)
    caps = [c for g in devices if (c := compute_capability(g)) is not None]
    if caps:
        return min(caps)
    if any(g.vendor not in (None, "nvidia") for g in devices):
        return None
    generation = generation_from_kernels(kernel_names)
    return _GENERATION_CC[generation] if generation else None
