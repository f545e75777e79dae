"""TC003: eligible fp16/bf16 (or TF32) ops missed the Tensor Cores because a dimension is misaligned.

cuBLAS and cuDNN pick Tensor Core kernels when GEMM M/N/K and convolution C/K are multiples of 8
for fp16/bf16 (16 for int8/fp8, 4 for TF32); otherwise they fall back to CUDA cores or to slower
Tensor Core paths. The why-not analysis computes the exact padding ("pad N 50257 → 50264").
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.analysis.shapes import ALIGN
from tcreport.rules import _common as c
from tcreport.rules import thresholds
from tcreport.rules.base import Evidence, EvidenceKind, Finding

ID = "TC003"
REASONS = frozenset({"unaligned-dims"})


def check(analysis: Analysis) -> list[Finding]:
    rows = [(o, w) for o, w in c.why_not_by_op(analysis) if w.reason in REASONS]
    if not rows:
        return []
    ops = [o for o, _ in rows]
    gpu = c.missed_ns(ops)
    sh = c.share(gpu, analysis.time.gpu_kernel_ns)
    w = analysis.verdict.words
    pads = "; ".join(f"{fmt.tail(o.name, 40)}: {w.padding or w.fix}" for o, w in rows[:5]) + (
        f"; and {len(rows) - 5} more" if len(rows) > 5 else ""  # the count, as AU001 says it
    )
    layout = (
        " For convolutions in PyTorch, also use channels_last memory format."
        if c.flavour(analysis) is not c.Flavour.TF
        and any("conv" in (o.type or o.name).lower() for o in ops)
        and _channels_first(analysis)
        else ""
    )
    # The multiple the title names is the judged precision's (4 for TF32 on a float32 run), not
    # always fp16's 8; several precisions at once keep the commonest case, 8, with each op's own
    # multiple in the detail.
    multiples = {ALIGN[p] for _, y in rows if (p := y.precision) in ALIGN}
    multiple = multiples.pop() if len(multiples) == 1 else 8
    tf32 = any(y.precision == "tf32" for _, y in rows)
    return [
        Finding(
            id=ID,
            severity=c.tc_severity(sh),
            title=f"{fmt.plural(len(ops), 'op')} missed {w.unit}: dimensions not multiples of "
            f"{multiple}",
            # "the calls that missed" already says some ops used Tensor Cores in other calls
            detail=f"{rows[0][1].message}. {c.whose_time(ops, 'these ops').capitalize()}"
            + f" take {fmt.ns(gpu)}"
            + (f" ({fmt.pct_text(sh)} of GPU kernel time)" if sh is not None else "")
            + f". Padding needed: {pads}.",
            fix="Pad the named dimensions (vocabulary, hidden size, channels, batch) up to a "
            "multiple of 8 for fp16/bf16 (16 for int8/fp8"
            + (", 4 for TF32" if tf32 else "")
            + "); pad data or weights once, not per step."
            + layout,
            estimated_saving_ns=c.tc_saving(gpu),
            assumptions=f"padded ops run {thresholds.TC_SPEEDUP:g}x faster on {w.unit}; the "
            "extra padded work (under 1 % for large dimensions) is ignored",
            evidence=tuple(Evidence(EvidenceKind.OP, o.name) for o in ops),
        )
    ]


def _channels_first(analysis: Analysis) -> bool:
    """Whether "also use channels_last" is advice here: the trace shows cuDNN transposing to
    NHWC (under CV003's threshold, else CV003 says it with its own figures), or names no kernels
    to tell by. A run whose kernels include no transpose already feeds cuDNN channels-last."""
    if not analysis.breakdown.kernels:
        return True
    hits = c.layout_conversions(analysis)
    if not hits:
        return False
    share = c.share(sum(k.gpu_ns for k in hits), analysis.time.gpu_kernel_ns)
    return share is not None and share < thresholds.LAYOUT_CONVERSION_SHARE
