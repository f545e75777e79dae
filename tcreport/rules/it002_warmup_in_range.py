"""IT002: warm-up or compilation sits inside the aggregated iterations.

The first iterations carry one-off work (cuDNN autotuning, XLA / torch.compile compilation, CUDA
context and allocator growth). If the aggregated range starts there, every share in the report is
skewed towards that work. Detected when the first aggregated iteration takes at least
``WARMUP_RATIO`` times the median of the others. No time saving is claimed: the fix is where to
measure, not a faster model.
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.rules import _common as c
from tcreport.rules import _iters
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity

ID = "IT002"


def check(analysis: Analysis) -> list[Finding]:
    its = analysis.iterations
    hit = its.warm_up
    if hit is None:
        return []
    first, median = hit
    rows = _iters.aggregated(analysis)
    excess = first.duration_ns - median
    total = sum(r.duration_ns for r in rows)
    sh = c.share(int(excess), total)
    name = its.name_of(first.iteration)
    return [
        Finding(
            id=ID,
            severity=Severity.HIGH if sh is not None and sh >= 0.25 else Severity.MEDIUM,
            title=f"{name} is {first.duration_ns / median:.1f}x the median: "
            "warm-up is inside the aggregated range",
            detail=f"{name} took {fmt.ns(first.duration_ns)} against a median "
            f"of {fmt.ns(median)}; its extra {fmt.ns(excess)} is {fmt.pct_text(sh)} of the aggregated time "
            "(autotuning, XLA/torch.compile compilation, allocator warm-up) and skews every share.",
            fix=f"Aggregate from the first steady iteration: {its.iter_start(first.iteration + 1)} "
            "(or profile with torch.profiler's schedule(wait=1, warmup=1, ...) / DLProf --iter_start).",
            estimated_saving_ns=None,
            assumptions="measurement finding: the excess is one-off cost, not a per-step saving",
            evidence=(Evidence(EvidenceKind.ITERATION, str(first.iteration)),),
        )
    ]
