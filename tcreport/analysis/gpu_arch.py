"""GPU generation when the input does not say: a compute capability from the device table.

DLProf CSVs and many nsys exports name the GPU but not its compute capability, yet whether fp32
can reach the Tensor Cores (TF32, Ampere on), bf16 has a Tensor Core path, or the GPU has Tensor
Cores at all (not before Volta, not on a GeForce GTX 16) depends on it. The model's capability
comes from the sourced device table (:mod:`tcreport.analysis.device_table`): an RTX 2070 SUPER is
7.5 (Turing), a GTX 1060 6.1 (Pascal); a name the table does not know gives ``None``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from tcreport.analysis import device_table
from tcreport.model import Gpu


def compute_capability(gpu: Gpu) -> float | None:
    """The GPU's compute capability: as recorded, else its model's in the device table, else
    ``None``. Only NVIDIA GPUs have one (an AMD device's HIP architecture number is not one)."""
    if gpu.vendor not in (None, "nvidia"):
        return None
    facts = device_table.describe(gpu)
    if facts.vendor not in (None, "nvidia"):
        return None
    for cc in (gpu.compute_capability, facts.compute_capability):
        if cc:
            try:
                return float(cc)
            except ValueError:
                continue
    return None


def has_matrix_units(gpus: Iterable[Gpu]) -> bool | None:
    """Whether the run's GPUs have matrix units: ``False`` only when every GPU is identified and
    none has any (a Pascal GeForce, a GTX 16), ``True`` when one does, ``None`` when not known."""
    verdicts = [device_table.describe(g).has_matrix_units for g in gpus]
    if not verdicts or None in verdicts:
        return True if True in verdicts else None
    return any(verdicts)


def matrix_units_caveat(gpus: Iterable[Gpu]) -> str | None:
    """What is known of the matrix units of the GPUs that only a compute capability identifies,
    where that capability is shared by parts without them (7.5: an RTX 2080 or a GTX 1650), in
    words every output shows; ``None`` when no GPU of the run is such. The one place this doubt
    is worded: the verdict carries it, TC006 shows it, renderers only format it."""
    doubtful: dict[str, list[str]] = {}
    for g in gpus:
        facts = device_table.describe(g)
        words = facts.matrix_unit_words
        if facts.parts_without is None or words is None:
            continue
        unnamed = f"{g.name!r}, a name the device table does not know" if g.name else "no name"
        what = f"compute capability {facts.compute_capability} ({facts.architecture}) and {unnamed}"
        doubtful.setdefault(f"{what}: {words}", []).append(str(g.device_id))
    if not doubtful:
        return None
    return "; ".join(
        f"GPU{'s' if len(ids) > 1 else ''} {', '.join(ids)}: {text}"
        for text, ids in doubtful.items()
    )


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


@dataclass(frozen=True)
class GpuIdentity:
    """Which GPU a run ran on, as every output names it: the recorded model, else the generation
    of the compute capability recorded for the unnamed GPUs, else the generation its kernel names
    were built for, else unknown (``label`` ``None``). One decision, so the diff's GPU row and its
    comparability warning cannot disagree ("unknown" beside "Hopper"), nor the heading with the
    finding that reads the capability (a 7.5 export running ``volta_`` cuBLAS kernels is a
    Turing GPU, not "Volta (inferred from kernel names)")."""

    model: str | None  # the recorded GPU model(s), ", "-joined
    generation: str | None  # the generation the kernel names were built for (None: CPU-only)
    #: the unnamed GPUs' recorded compute capability and its generation, "Turing (compute
    #: capability 7.5)" (several, "; "-joined); None where no unnamed GPU records one
    by_capability: str | None = None
    #: the generation of every GPU's compute capability (recorded, else its model's), in the
    #: kernel names' words (:data:`_GENERATION_CC`): what the diff compares; None where the GPUs
    #: give none, or several
    capability_generation: str | None = None

    @property
    def best_generation(self) -> str | None:
        """The run's GPU generation: its GPUs' compute capability's, else its kernel names'."""
        return self.capability_generation or self.generation

    @property
    def inferred(self) -> str | None:
        """The name a GPU the trace does not name is given: its recorded capability's generation,
        else its kernels' generation, said to be inferred."""
        if self.by_capability:
            return self.by_capability
        return f"{self.generation} (inferred from kernel names)" if self.generation else None

    @property
    def label(self) -> str | None:
        return self.model or self.inferred

    def unnamed_device(self, gpu: Gpu) -> str:
        """What a report says of one device with no recorded name in a list that shows each
        device's compute capability beside it: its own capability's generation alone ("Hopper",
        not "Hopper (compute capability 9.0), compute capability 9.0"; among unnamed GPUs of
        several capabilities, each its own), else the kernel names' generation, said to be
        inferred (never a bare "unknown" where the diff, reading the same names, says "Hopper")."""
        for cc, architecture in _capabilities((gpu,)).items():
            return _kernel_words(cc, architecture)
        return f"{self.generation} (inferred from kernel names)" if self.generation else "unknown"


def identity(gpus: Iterable[Gpu], kernel_names: Iterable[str], cpu_only: bool) -> GpuIdentity:
    """The run's :class:`GpuIdentity`; a CPU-only run has no GPU to infer."""
    devices = tuple(gpus)
    names = sorted({g.name for g in devices if g.name})
    generation = None if cpu_only else generation_from_kernels(kernel_names)
    unnamed = {} if cpu_only else _capabilities(g for g in devices if not g.name)
    words = "; ".join(f"{arch} (compute capability {cc})" for cc, arch in sorted(unnamed.items()))
    every = {} if cpu_only else _capabilities(devices)
    kinds = {_kernel_words(cc, arch) for cc, arch in every.items()}
    return GpuIdentity(
        ", ".join(names) if names else None,
        generation,
        words or None,
        kinds.pop() if len(kinds) == 1 else None,
    )


def _capabilities(gpus: Iterable[Gpu]) -> dict[str, str]:
    """Each compute capability of ``gpus`` (recorded, else their model's in the device table) with
    its generation from the table; capabilities the table does not know are left out."""
    out: dict[str, str] = {}
    for g in gpus:
        facts = device_table.describe(g)
        cc = g.compute_capability or facts.compute_capability
        if cc and facts.architecture and facts.vendor in (None, "nvidia"):
            out[str(cc)] = facts.architecture
    return out


def _kernel_words(cc: str, architecture: str) -> str:
    """A capability's generation as the kernel names call it ("Ada", not "Ada Lovelace"): the
    newest of :data:`_GENERATION_CC` it reaches; the device table's name before Volta."""
    try:
        value = float(cc)
    except ValueError:
        return architecture
    reached = [name for name, first in _GENERATION_CC.items() if first <= value]
    return reached[-1] if reached else architecture


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


def may_run_on(kernel_generation: str, capability_generation: str) -> bool:
    """Whether kernels built for ``kernel_generation`` may have run on a GPU of
    ``capability_generation``: a kernel runs on its generation and newer ones (``volta_`` cuBLAS
    kernels on a Turing part), so a kernel-name generation is a lower bound, never a match. A
    capability before Volta (not in :data:`_GENERATION_CC`) runs none of them."""
    return _GENERATION_CC[kernel_generation] <= _GENERATION_CC.get(capability_generation, 0.0)


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
