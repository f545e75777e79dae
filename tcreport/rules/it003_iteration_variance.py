"""IT003: aggregated iteration times vary a lot.

Steady training steps vary by a few per cent. A high coefficient of variation means some steps do
extra work: recompilation for new input shapes (XLA, torch.compile, cuDNN autotuning per shape),
data-loader stalls, host synchronisation, garbage collection. A leading warm-up outlier is IT002's
and is left out here. The saving assumes every step above the median could run at the median.
"""

from __future__ import annotations

import statistics

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.rules import _common as c
from tcreport.rules import _iters, thresholds
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity

ID = "IT003"


def check(analysis: Analysis) -> list[Finding]:
    rows = _iters.steady(_iters.aggregated(analysis))
    saving: int | None = None
    evidence: tuple[Evidence, ...] = ()
    if len(rows) >= thresholds.MIN_ITERATIONS:
        d = [r.duration_ns for r in rows]
        mean, std = statistics.fmean(d), statistics.pstdev(d)
        median = statistics.median(d)
        slow = sorted((r for r in rows if r.duration_ns > median), key=lambda r: -r.duration_ns)
        saving = int(sum(r.duration_ns - median for r in slow))
        evidence = tuple(Evidence(EvidenceKind.ITERATION, str(r.iteration)) for r in slow[:10])
    else:
        info = analysis.iterations.info
        if (
            (info.aggregated or 0) < thresholds.MIN_ITERATIONS
            or not info.mean_ns
            or info.std_ns is None
        ):
            return []
        mean, std = info.mean_ns, info.std_ns
    cv = std / mean if mean > 0 else 0.0
    if cv <= thresholds.ITERATION_CV:
        return []
    fl = c.flavour(analysis)
    shapes = {
        c.Flavour.TORCH: "keep input shapes fixed (pad/bucket sequence lengths; drop_last=True) so "
        "torch.compile and cudnn.benchmark do not re-tune, use DataLoader(num_workers>0, "
        "pin_memory=True), and remove .item()/.cpu() syncs from the step",
        c.Flavour.TF: "keep input shapes fixed (padded_batch, drop_remainder=True) so XLA does not "
        "recompile, prefetch the tf.data pipeline, and avoid per-step host transfers",
        c.Flavour.ANY: "keep input shapes fixed so compilers and autotuners do not re-run, prefetch "
        "input data, and avoid host synchronisation inside the step",
    }[fl]
    return [
        Finding(
            id=ID,
            severity=Severity.MEDIUM if cv >= 2 * thresholds.ITERATION_CV else Severity.LOW,
            title=f"Iteration times vary by {cv:.0%} (coefficient of variation)",
            detail=f"Aggregated iterations average {fmt.ns(mean)} with a standard deviation of "
            f"{fmt.ns(std)}; steady training steps vary by a few per cent.",
            fix=f"Find what the slow iterations do differently; typically {shapes}.",
            estimated_saving_ns=saving,
            assumptions="every iteration slower than the median could run at the median",
            evidence=evidence,
        )
    ]
