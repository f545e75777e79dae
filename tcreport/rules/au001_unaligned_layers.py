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
from tcreport.analysis import layer_sizes
from tcreport.analysis.layer_sizes import LayerSizes, Seen
from tcreport.analysis.result import Analysis
from tcreport.analysis.shapes import ALIGN, normalise_dtype
from tcreport.rules import _audit
from tcreport.rules import _common as c
from tcreport.rules.base import Finding, Severity

ID = "AU001"


def _trace_words(rows: tuple[LayerSizes, ...], unit: str) -> str:
    """What the trace of this run shows for the layers' sizes; "" where it cannot tell."""
    missed = [r.layer for r in rows if r.seen is Seen.MISSED]
    clean = [r.layer for r in rows if r.seen is Seen.NOT_MISSED]
    words = ""
    if missed:
        words += (
            f" In this trace, calls with the sizes of {_audit.names(missed)} missed {unit} "
            "(TC003 measures them)."
        )
    if clean:
        words += (
            f" No call with the sizes of {_audit.names(clean)} missed {unit} in this trace; "
            "aligned sizes can still pick faster kernels."
        )
    return words


def check(analysis: Analysis) -> list[Finding]:
    a = _audit.audit(analysis)
    half = _audit.half_precision(a) if a is not None else None
    if a is None or half is None:
        return []
    precision = normalise_dtype(half) or "fp16"
    align = ALIGN[precision]
    rows = layer_sizes.judge(
        a.layers,
        precision,
        analysis.verdict.why_not,
        analysis.breakdown.ops,
        c.flavour(analysis) is c.Flavour.TF,
        gpu_trace=not analysis.host.cpu_only,
    )
    if not rows:
        return []
    pads = "; ".join(
        f"{_audit.where(r.layer)}: " + ", ".join(f"{name} {v} → {p}" for name, v, p in r.pads)
        for r in rows[:8]
    ) + (f"; and {len(rows) - 8} more" if len(rows) > 8 else "")
    fix = {
        "keras": f"Choose multiples of {align}: Dense units, Conv filters and Embedding sizes as "
        "listed; pad the input features with zeros (and the class count with unused classes) "
        "to the padded size.",
        "pytorch": f"Choose multiples of {align} for nn.Linear in/out_features, nn.Conv "
        "channels and nn.Embedding sizes as listed; pad the input features with zeros, the "
        "vocabulary and the class count with unused entries.",
    }.get(a.framework, f"Pad the listed sizes up to multiples of {align}.")
    w = analysis.verdict.words
    traced = _trace_words(rows, w.unit)
    all_clean = all(r.seen is Seen.NOT_MISSED for r in rows)
    return [
        Finding(
            id=ID,
            # the trace shows none of these sizes missing the matrix units: worth a look only
            severity=Severity.LOW if all_clean else Severity.MEDIUM,
            title=f"{fmt.plural(len(rows), 'layer')} with sizes not multiples of {align} for "
            f"{half}",
            detail=f"The model computes in {half}; cuBLAS and cuDNN choose {w.unit_one} kernels "
            f"reliably only for GEMM and convolution sizes that are multiples of {align}, and "
            + (
                "may fall back to slower kernels otherwise."
                if traced
                else f"may fall back to slower kernels otherwise{_audit.expected(a)}."
            )
            + f"{traced} Padded sizes: {pads}.",
            fix=fix,
            estimated_saving_ns=None,
            assumptions="read from the model object; no saving is claimed (the trace-based "
            "TC003 measures it on a GPU run)",
            evidence=_audit.layer_evidence(r.layer for r in rows),
        )
    ]
