"""AU001: layer sizes that are not multiples of 8 in a model that computes in float16/bfloat16.

The model audit reads the sizes from the layer objects themselves (Dense units, Conv filters and
channels, embedding sizes, the input features), so this works on a CPU, before any kernel runs:
cuBLAS and cuDNN use Tensor Cores for fp16/bf16 GEMMs and convolutions whose dimensions are
multiples of 8, so an unaligned size is expected to miss them (or take a slower path) on a GPU.
The trace-based TC003 says the same from recorded shapes and measures the cost; this one points at
the line of the script that chose the size.
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.model import AuditLayer
from tcreport.rules import _audit, thresholds
from tcreport.rules.base import Finding, Severity

ID = "AU001"


def _padded(n: int, align: int) -> int:
    return -(-n // align) * align


def _unaligned(layer: AuditLayer, align: int) -> list[tuple[str, int]]:
    return [(n, v) for n, v in layer.dims if v % align and v >= thresholds.AUDIT_MIN_DIM]


def check(analysis: Analysis) -> list[Finding]:
    a = _audit.audit(analysis)
    half = _audit.half_precision(a) if a is not None else None
    if a is None or half is None:
        return []
    align = thresholds.AUDIT_HALF_ALIGN
    rows = [(layer, bad) for layer in a.layers if (bad := _unaligned(layer, align))]
    if not rows:
        return []
    pads = "; ".join(
        f"{_audit.where(layer)}: "
        + ", ".join(f"{name} {v} → {_padded(v, align)}" for name, v in bad)
        for layer, bad in rows[:8]
    ) + (f"; and {len(rows) - 8} more" if len(rows) > 8 else "")
    fix = {
        "keras": f"Choose multiples of {align}: Dense units, Conv filters and Embedding sizes as "
        "listed; pad the input features with zeros (and the class count with unused classes) "
        "to the padded size.",
        "pytorch": f"Choose multiples of {align} for nn.Linear in/out_features, nn.Conv "
        "channels and nn.Embedding sizes as listed; pad the input features with zeros, the "
        "vocabulary and the class count with unused entries.",
    }.get(a.framework, f"Pad the listed sizes up to multiples of {align}.")
    return [
        Finding(
            id=ID,
            severity=Severity.MEDIUM,
            title=f"{fmt.plural(len(rows), 'layer')} with sizes not multiples of {align} for "
            f"{half}",
            detail=f"The model computes in {half}, where GEMMs and convolutions use Tensor Cores "
            f"only with dimensions that are multiples of {align}; otherwise they fall back to "
            f"slower kernels{_audit.expected(a)}. Padded sizes: {pads}.",
            fix=fix,
            estimated_saving_ns=None,
            assumptions="read from the model object; no saving is claimed (the trace-based "
            "TC003 measures it on a GPU run)",
            evidence=_audit.layer_evidence(layer for layer, _ in rows),
        )
    ]
