"""GPU generation when the input does not say: a compute capability from the marketing name.

DLProf CSVs and many nsys exports name the GPU but not its compute capability, yet whether fp32
can reach the Tensor Cores (TF32, Ampere on) or bf16 has a Tensor Core path depends on it. The
guess is deliberately coarse (7.0 for pre-Ampere, 8.0 for Ampere or newer): enough for the advice,
never shown as a figure.
"""

from __future__ import annotations

import re

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
