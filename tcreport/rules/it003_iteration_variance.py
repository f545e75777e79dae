"""IT003: aggregated iteration times vary a lot.

Steady training steps vary by a few per cent. A high coefficient of variation means some steps do
extra work: recompilation for new input shapes (XLA, torch.compile, cuDNN autotuning per shape),
data-loader stalls, host synchronisation, garbage collection. A leading warm-up outlier is IT002's
and is left out here. The saving assumes every step above the median could run at the median.

The step time judged is the GPU's where the step breakdown measured it (each step's window on the
GPU, :attr:`IterationRow.gpu_step_ns`): when the host runs ahead of the GPU and then waits for it,
host step lengths swing (35 ms, 72 ms, 185 ms) while the GPU's pace is steady, and those swings
cost nothing. The finding shows both measures. The step times, their measure and the warm-up left
out are the analysis' figure (:class:`~tcreport.analysis.sections.iterations.StepTime`); where it
is not the headline card's mean iteration time (wall clock, every aggregated iteration), the
finding says so beside that card's figure.
"""

from __future__ import annotations

import statistics

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.analysis.sections.iterations import StepTime
from tcreport.rules import _common as c
from tcreport.rules import _iters, thresholds
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity

ID = "IT003"


def _cv(values: list[int]) -> float | None:
    if len(values) < thresholds.MIN_ITERATIONS:
        return None
    mean = statistics.fmean(values)
    return statistics.pstdev(values) / mean if mean > 0 else None


def _which(n: int, st: StepTime, short: bool) -> str:
    """Which iterations the figures are of: those with a step time by the measure, the warm-up
    left out."""
    one = (
        (" with a GPU step time" if st.basis == "GPU" else " with a complete step") if short else ""
    )
    left_out = ", the warm-up left out," if st.warmup_left_out else ""
    return f"The {fmt.count(n)} aggregated iterations{one}{left_out}"


def check(analysis: Analysis) -> list[Finding]:
    rows = _iters.aggregated(analysis)
    st = analysis.iterations.step_time
    timed, basis = st.times, st.basis
    saving: int | None = None
    evidence: tuple[Evidence, ...] = ()
    other = ""
    info = analysis.iterations.info
    if len(timed) >= thresholds.MIN_ITERATIONS:
        mean, std, median = st.mean_ns or 0.0, st.std_ns or 0.0, st.median_ns or 0.0
        slow = sorted(((i, t) for i, t in timed if t > median), key=lambda p: -p[1])
        saving = int(sum(t - median for _, t in slow))
        evidence = tuple(Evidence(EvidenceKind.ITERATION, str(i)) for i, _ in slow[:10])
        host_cv = _cv([r.duration_ns for r in _iters.steady(rows)])
        if basis == "GPU" and host_cv is not None:
            other = f" Host-side step lengths vary by {host_cv:.0%}."
        # not the card's figure (wall clock over every aggregated iteration): say so beside it
        short = len(timed) < (info.aggregated or 0) and not st.warmup_left_out
        which = _which(len(timed), st, short)
        phrase = analysis.iterations.card_phrase
        if phrase and (basis == "GPU" or len(timed) != info.aggregated):
            other += f" In the headline, {phrase}."
    elif basis == "GPU":
        # too few GPU step times to judge (the last step has none); the host's lengths are no
        # substitute: they are exactly what swings when the host runs ahead of the GPU
        return []
    else:
        if (
            (info.aggregated or 0) < thresholds.MIN_ITERATIONS
            or not info.mean_ns
            or info.std_ns is None
        ):
            return []
        mean, std = info.mean_ns, info.std_ns  # the card's own figure
        which = f"The {fmt.count(info.aggregated)} aggregated iterations"
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
            detail=f"{which} average {fmt.ns(mean)} with a standard deviation of {fmt.ns(std)} "
            f"({st.measure}); steady training steps vary by a few per cent." + other,
            fix=f"Find what the slow iterations do differently; typically {shapes}.",
            estimated_saving_ns=saving,
            assumptions="every iteration slower than the median could run at the median",
            evidence=evidence,
        )
    ]
