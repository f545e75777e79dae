"""IT003: aggregated iteration times vary a lot.

Steady training steps vary by a few per cent. A high coefficient of variation means some steps do
extra work: recompilation for new input shapes (XLA, torch.compile, cuDNN autotuning per shape),
data-loader stalls, host synchronisation, garbage collection. A leading warm-up outlier is IT002's
and is left out here. The saving assumes every step above the median could run at the median.

The step time judged is the GPU's where the step breakdown measured it (each step's window on the
GPU, :attr:`IterationRow.gpu_step_ns`): when the host runs ahead of the GPU and then waits for it,
host step lengths swing (35 ms, 72 ms, 185 ms) while the GPU's pace is steady, and those swings
cost nothing. The finding shows both measures.
"""

from __future__ import annotations

import statistics

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.rules import _common as c
from tcreport.rules import _iters, thresholds
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity

ID = "IT003"
_MEASURE = {
    "GPU": "GPU step time: from a step's first GPU activity to the next step's first",
    "host": "host step time",
}


def _cv(values: list[int]) -> float | None:
    if len(values) < thresholds.MIN_ITERATIONS:
        return None
    mean = statistics.fmean(values)
    return statistics.pstdev(values) / mean if mean > 0 else None


def check(analysis: Analysis) -> list[Finding]:
    rows = _iters.aggregated(analysis)
    timed, basis = _iters.steady_times(rows)
    saving: int | None = None
    evidence: tuple[Evidence, ...] = ()
    other = ""
    if len(timed) >= thresholds.MIN_ITERATIONS:
        d = [t for _, t in timed]
        mean, std = statistics.fmean(d), statistics.pstdev(d)
        median = statistics.median(d)
        slow = sorted(((r, t) for r, t in timed if t > median), key=lambda p: -p[1])
        saving = int(sum(t - median for _, t in slow))
        evidence = tuple(Evidence(EvidenceKind.ITERATION, str(r.iteration)) for r, _ in slow[:10])
        host_cv = _cv([r.duration_ns for r in _iters.steady(rows)])
        if basis == "GPU" and host_cv is not None:
            other = f" Host-side step lengths vary by {host_cv:.0%}."
    elif basis == "GPU":
        # too few GPU step times to judge (the last step has none); the host's lengths are no
        # substitute: they are exactly what swings when the host runs ahead of the GPU
        return []
    else:
        info = analysis.iterations.info
        if (
            (info.aggregated or 0) < thresholds.MIN_ITERATIONS
            or not info.mean_ns
            or info.std_ns is None
        ):
            return []
        mean, std, basis = info.mean_ns, info.std_ns, "host"
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
    if c.is_jax(analysis):
        shapes = (
            "keep input shapes fixed (pad or bucket batches) so jax.jit does not recompile, "
            "prefetch the input pipeline, and read values back to the host every N steps"
        )
    return [
        Finding(
            id=ID,
            severity=Severity.MEDIUM if cv >= 2 * thresholds.ITERATION_CV else Severity.LOW,
            title=f"{'GPU step' if basis == 'GPU' else 'Iteration'} times vary by {cv:.0%} "
            "(coefficient of variation)",
            detail=f"Aggregated iterations average {fmt.ns(mean)} with a standard deviation of "
            f"{fmt.ns(std)} ({_MEASURE[basis]}); steady training steps vary by a few per cent."
            + other,
            fix=f"Find what the slow iterations do differently; typically {shapes}.",
            estimated_saving_ns=saving,
            assumptions="every iteration slower than the median could run at the median",
            evidence=evidence,
        )
    ]
