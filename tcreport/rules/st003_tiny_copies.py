"""ST003: many tiny host-device copies per step.

Each copy of a few bytes between host and GPU (a Python scalar made a tensor every step, a loss
read back, per-sample metadata) costs a launch and often a synchronisation, for nothing the GPU
needed to wait for. Counted per step and GPU under ``analysis.stalls.TINY_COPY_BYTES``; the idle
is the gaps that end at such a copy (the GPU waited for it to be issued).
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis import stalls
from tcreport.analysis.result import Analysis
from tcreport.analysis.stalls import StallKind
from tcreport.rules import _common as c
from tcreport.rules import _stalls, thresholds
from tcreport.rules.base import Finding, Severity

ID = "ST003"


def check(analysis: Analysis) -> list[Finding]:
    s = _stalls.summary(analysis, StallKind.TINY)
    if s is None or not s.idle_ns or s.share < thresholds.STALL_MIN_SHARE:
        return []
    per_step = s.copies / max(1, s.steps)
    if per_step < thresholds.TINY_COPIES_PER_STEP:
        return []
    fix = {
        c.Flavour.TORCH: "Build small tensors on the GPU (torch.tensor(x, device='cuda'), "
        "torch.full) or batch them into one copy per step; keep scalars that only feed GPU math "
        "on the GPU, and read metrics back every N steps.",
        c.Flavour.TF: "Keep per-step scalars on the device inside tf.function and read metrics "
        "back every N steps.",
        c.Flavour.ANY: "Batch small host-device transfers into one per step, or create the values "
        "on the GPU.",
    }[c.flavour(analysis)]
    top = s.ops[0][0] or "unnamed copies"
    return [
        Finding(
            id=ID,
            severity=Severity.LOW,
            title=f"{per_step:.0f} tiny host-device copies per step idle the GPU "
            f"{fmt.ns(s.idle_per_step_ns)} per step ({fmt.pct_text(s.share)})",
            detail=f"{fmt.plural(s.copies, 'copy', 'copies')} under "
            f"{fmt.nbytes(stalls.TINY_COPY_BYTES)} ({fmt.nbytes(s.bytes)} in all) in "
            f"{fmt.plural(s.steps, 'aggregated step')}, mostly from {top}; "
            f"the GPU waited {fmt.ns(s.idle_ns)} in all for them to be issued.",
            fix=fix,
            estimated_saving_ns=s.saving_ns,
            assumptions=f"{thresholds.STALL_RECOVERABLE:.0%} of the idle before the copies is "
            "recovered once they are batched or made on the GPU (per GPU)",
            evidence=s.evidence(),
        )
    ]
