"""TC005: the GPU has no matrix units at all, so "no Tensor Core use" is the hardware's doing.

A GeForce GTX 1060 (Pascal, compute capability 6.1), a GTX 1660 (Turing TU116) or an NVIDIA T1000
(TU117) has no Tensor Cores: a Tensor Core share of 0 there says nothing about the model's
precision, and advice to turn on mixed precision "to use the Tensor Cores" would be wrong. The
device table (:mod:`tcreport.analysis.device_table`) knows which devices have none; when every GPU of the run is
identified and none has matrix units (the verdict section's ``no_matrix_units``), this finding
says so in the verdict section's words, and the rules that presume matrix units
(:data:`PRESUME_MATRIX_UNITS`) do not run.
"""

from __future__ import annotations

from tcreport.analysis import device_table
from tcreport.analysis.result import Analysis
from tcreport.rules import _common as c
from tcreport.rules.base import Finding, Severity

ID = "TC005"
#: Rules whose advice only makes sense on a GPU with matrix units (mixed precision *for Tensor
#: Cores*, Tensor Core shape alignment, bf16 over fp16, heavy ops "with no Tensor Core path").
PRESUME_MATRIX_UNITS = frozenset({"TC001", "TC003", "TC004", "PR001", "OP001"})


def _device(analysis: Analysis) -> str:
    """'NVIDIA GeForce GTX 1060 6GB (Pascal, compute capability 6.1)', one per distinct model."""
    seen: dict[str, str] = {}
    for g in analysis.meta.gpus:
        facts = device_table.describe(g)
        name = g.name or facts.model or "this GPU"
        what = [facts.architecture] if facts.architecture else []
        if facts.compute_capability:
            what.append(f"compute capability {facts.compute_capability}")
        seen.setdefault(name, f"{name} ({', '.join(what)})" if what else name)
    return " and ".join(sorted(seen.values()))


def _nvidia_parts_without() -> str:
    """The parts of NVIDIA's Tensor Core generations that have none, in the device table's words
    (the GTX 16 series and, as much, the MX450/MX550 and T400-T2000: a T1000 user must not read
    that only a GTX 16 lacks them)."""
    return "; ".join(
        a.parts_without
        for a in device_table.table().architectures
        if a.vendor == "nvidia" and a.parts_without
    )


def check(analysis: Analysis) -> list[Finding]:
    if not analysis.verdict.no_matrix_units:
        return []
    device = _device(analysis)
    w = analysis.verdict.words
    if c.is_nvidia(analysis):
        detail = (
            "No kernel of this run could use Tensor Cores: the GPU has none (NVIDIA GPUs have them "
            f"from Volta, compute capability 7.0, on, except the {_nvidia_parts_without()} "
            "parts). A Tensor Core share of 0 here is the hardware's, not the model's precision; "
            "op eligibility is shown for reference only."
        )
        fix = (
            "To use Tensor Cores, run on a GPU that has them (Volta or newer, not one of those "
            "parts). On this GPU, float16 still halves memory traffic, but matrix work stays on the "
            "CUDA cores."
        )
    else:  # another vendor's device the table knows without matrix units: no NVIDIA words
        detail = (
            f"No kernel of this run could use {w.unit}: the GPU has none. {w.a_unit_one[:1].upper()}"
            f"{w.a_unit_one[1:]} share of 0 here is the hardware's, not the model's precision; op "
            "eligibility is shown for reference only."
        )
        fix = f"To use {w.unit}, run on a GPU that has them."
    return [
        Finding(
            id=ID,
            severity=Severity.INFO,
            title=f"{device} has no {w.unit}",
            detail=detail,
            fix=fix,
        )
    ]
