"""TC004: eligible ops missed the Tensor Cores for a reason other than their precision or shapes.

TC001 owns "the op ran in fp32/fp64" and TC003 "its dimensions are misaligned"; what is left here is
an fp32 op inside an otherwise fp16/bf16 run (outside autocast), a problem too small for Tensor
Core kernels, a dtype with no Tensor Core path, a library's own choice of a CUDA-core kernel while
its TF32 kernels ran elsewhere (low severity: the library judged it faster), or no explanation at
all. Each op belongs to exactly
one of the three rules, so their savings never count the same op twice. The saving assumes the op's
GPU time shrinks by ``TC_SPEEDUP`` on Tensor Cores.
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.analysis.why_not import Reason
from tcreport.rules import _common as c
from tcreport.rules import tc001_mixed_precision_off, tc003_unaligned_dims, thresholds
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity

ID = "TC004"
_OTHER_RULES = tc001_mixed_precision_off.REASONS | tc003_unaligned_dims.REASONS
_UNKNOWN_FIX = "check the op's kernels and dtype in the tables; profile with shapes recorded"


def check(analysis: Analysis) -> list[Finding]:
    explained = c.why_not_by_op(analysis)
    rows = [(o, w) for o, w in explained if w.reason not in _OTHER_RULES]
    names = {o.name for o, _ in explained}
    # eligible misses without a why-not row (should not happen): reported, never dropped
    extra = [o for o in analysis.breakdown.ops if o.missed_tc and o.name not in names]
    ops = [o for o, _ in rows] + extra
    if not ops:
        return []
    reasons = sorted({w.reason for _, w in rows} | ({"unknown"} if extra else set()))
    gpu = c.missed_ns(ops)
    sh = c.share(gpu, analysis.time.gpu_kernel_ns)
    fix = "; ".join(dict.fromkeys(w.fix for _, w in rows[:3])) or _UNKNOWN_FIX
    unit = analysis.verdict.words
    eligible = fmt.plural(len(ops), f"{unit.unit_one} eligible op")
    detail = f"{eligible} did not use {unit.unit}{c.partly(ops)} (why: {', '.join(reasons)})"
    if sh is not None:
        detail += f"; {c.whose_time(ops)} take {fmt.pct_text(sh)} of GPU kernel time"
    if rows:
        detail += f". {rows[0][1].message}"
    title = f"{eligible} did not use {unit.unit}"
    if reasons == [Reason.FLOAT32_AMONG_HALF]:  # the cause is known: name it in the title
        where = (
            "outside the mixed-precision policy"
            if c.flavour(analysis) is c.Flavour.TF
            else "outside autocast"
            if analysis.verdict.autocast
            else "beside fp16/bf16 work"  # no autocast entered, or none the trace can show
        )
        title = f"{fmt.plural(len(ops), 'eligible op')} run in float32 {where}"
    title += c.partly(ops)  # the headline counts an op on TC in some calls as using them
    return [
        Finding(
            id=ID,
            # the library chose a CUDA-core kernel on purpose: worth a look, not a known win
            severity=Severity.LOW if reasons == ["library-choice"] else c.tc_severity(sh),
            title=title,
            detail=detail + ".",
            fix=fix[:1].upper() + fix[1:] + ".",
            estimated_saving_ns=c.tc_saving(gpu),
            assumptions=f"these ops' GPU time shrinks {thresholds.TC_SPEEDUP:g}x on {unit.unit}; "
            "GPU time saved becomes wall time only where the GPU is the bottleneck",
            evidence=tuple(Evidence(EvidenceKind.OP, o.name) for o in ops),
        )
    ]
