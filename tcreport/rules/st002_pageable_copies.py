"""ST002: host-to-device copies from pageable memory stall the step.

A copy from pageable host memory (``Memcpy HtoD (Pageable -> Device)``) is staged through a
driver bounce buffer: the host blocks until it is done, so nothing else is queued and the GPU
idles after it, and it cannot overlap compute. Pinned memory (``DataLoader(pin_memory=True)``,
``tensor.pin_memory()``) with ``.to(device, non_blocking=True)`` makes it asynchronous. The idle
is the gaps that open when such a copy ends (:mod:`tcreport.analysis.stalls`).
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.analysis.stalls import StallKind
from tcreport.rules import _common as c
from tcreport.rules import _stalls, thresholds
from tcreport.rules.base import Finding, Severity

ID = "ST002"


def check(analysis: Analysis) -> list[Finding]:
    s = _stalls.summary(analysis, StallKind.PAGEABLE)
    if s is None or not s.idle_ns or s.share < thresholds.STALL_MIN_SHARE:
        return []
    fix = {
        c.Flavour.TORCH: "Pin the host memory and copy asynchronously: DataLoader(..., "
        "pin_memory=True) and batch.to('cuda', non_blocking=True) (or tensor.pin_memory() for "
        "tensors built by hand), so the copy overlaps compute and the host keeps queueing.",
        c.Flavour.TF: "Feed through tf.data with prefetch (tf.data.experimental.prefetch_to_device"
        ") so host-to-device copies come from pinned buffers and overlap the step.",
        c.Flavour.ANY: "Copy from pinned (page-locked) host memory with asynchronous copies so "
        "they overlap compute.",
    }[c.flavour(analysis)]
    top = s.ops[0][0] or "unnamed copies"
    return [
        Finding(
            id=ID,
            severity=Severity.MEDIUM if s.share >= 5 * thresholds.STALL_MIN_SHARE else Severity.LOW,
            title=f"Pageable host-to-device copies idle the GPU {fmt.ns(s.idle_per_step_ns)} per "
            f"step ({fmt.pct_text(s.share)}), launched by {top}",
            detail=f"{fmt.plural(s.copies, 'copy', 'copies')} from pageable memory "
            f"({fmt.nbytes(s.bytes)}) in {fmt.plural(s.steps, 'aggregated step')}; the host "
            "blocked on each, and the GPU then waited "
            f"{fmt.ns(s.idle_ns)} in all for the next launch.",
            fix=fix,
            estimated_saving_ns=s.saving_ns,
            assumptions=f"{thresholds.STALL_RECOVERABLE:.0%} of the idle after each pageable copy "
            "is recovered once copies are asynchronous (per GPU); faster pinned transfers not counted",
            evidence=s.evidence(),
        )
    ]
