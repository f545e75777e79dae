"""The iterations section: how the run was cut into iterations, which were aggregated, and each
iteration's GPU time.

It owns the words for how iterations were found (:func:`~tcreport.analysis.slicing.method_text`),
what counts as an outlier (:data:`derived.OUTLIER_FACTOR`) and the card that says how long an
iteration takes.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from tcreport import fmt
from tcreport.analysis import derived, slicing
from tcreport.analysis.derived import IterationRow
from tcreport.analysis.iterations import Selection
from tcreport.analysis.key_nodes import KeyNodeCandidate
from tcreport.analysis.sections.headline import Headline, Tone
from tcreport.model import IterationInfo, IterationMethod, Run

#: The methods that cut a run at its ``ProfilerStep#N`` ranges, whose numbers label the steps.
_STEP_METHODS = (IterationMethod.PROFILER_STEP, IterationMethod.PROFILER_STEP_RANGES)
#: What each step-time measure is, in every output's words (:attr:`StepTime.measure`).
STEP_MEASURES = {
    "GPU": "GPU step time: from a step's first GPU activity to the next step's first",
    "host": "wall-clock iteration time",
}


@dataclass(frozen=True)
class StepTime:
    """The aggregated iterations' step times by the measure outliers and the variance finding
    (IT003) judge (:func:`derived.step_times`: the GPU's where the step breakdown measured it),
    a leading warm-up by that measure left out. It is not the card's mean iteration time, which
    is wall-clock over every aggregated iteration: the two differ where the GPU's pace is
    measured or a warm-up is left out, and each output names which it shows."""

    basis: str  # "GPU" or "host" (:data:`STEP_MEASURES`)
    times: tuple[tuple[int, int], ...]  # (iteration, step time in ns), in iteration order
    warmup_left_out: bool

    @property
    def measure(self) -> str:
        return STEP_MEASURES[self.basis]

    @property
    def mean_ns(self) -> float | None:
        return statistics.fmean(t for _, t in self.times) if self.times else None

    @property
    def std_ns(self) -> float | None:
        return statistics.pstdev(t for _, t in self.times) if self.times else None

    @property
    def median_ns(self) -> float | None:
        return float(statistics.median(t for _, t in self.times)) if self.times else None


def step_time(rows: Sequence[IterationRow]) -> StepTime:
    """The aggregated iterations' step times (:class:`StepTime`), decided once here: the
    warm-up by the same measure, as :func:`derived.warmup` decides it by the host's."""
    kept = [r for r in rows if r.aggregated and r.duration_ns > 0]
    times, basis = derived.step_times(kept)
    timed = [(r.iteration, times[r.iteration]) for r in kept if r.iteration in times]
    left_out = False
    if len(timed) >= derived.WARMUP_MIN_ITERATIONS:
        median = statistics.median(t for _, t in timed[1:])
        if median > 0 and timed[0][1] >= derived.WARMUP_RATIO * median:
            timed, left_out = timed[1:], True
    return StepTime(basis, tuple(timed), left_out)


@dataclass(frozen=True)
class Iterations:
    info: IterationInfo  # the split and the aggregated range
    key_node_found: bool  # False when the given key node never occurs
    candidates: tuple[str, ...]  # names an error may offer as key nodes
    sliced: bool  # rows were filtered to the aggregated range
    #: key nodes that could split a run that was not split, with their evidence
    suggestions: tuple[KeyNodeCandidate, ...]
    #: every iteration, warm-up included, with its step breakdown where there is one
    rows: tuple[IterationRow, ...]
    card: Headline  # the mean iteration time, or the aggregated wall time without iterations
    #: the step times the variance finding judges (not the card's figure: see :class:`StepTime`)
    step_time: StepTime
    #: an iteration this many times slower (or faster) than the median is an outlier
    outlier_factor: float = derived.OUTLIER_FACTOR
    #: each iteration's ``ProfilerStep#N`` number (the script's step, counted from 0, for a
    #: ``tcreport profile`` run), where the run was cut at those steps; () otherwise
    step_numbers: tuple[int, ...] = ()

    @property
    def card_phrase(self) -> str | None:
        """The card's mean iteration time as a sentence says it, naming its measure, for text
        that shows another measure beside it (IT003); ``None`` without a mean."""
        info = self.info
        if info.mean_ns is None:
            return None
        spread = f" ± {fmt.ns(info.std_ns)}" if info.std_ns is not None else ""
        return (
            f"the mean iteration time, {fmt.ns(info.mean_ns)}{spread}, is wall-clock over all "
            f"{fmt.count(info.aggregated)} aggregated iterations"
        )

    @property
    def warm_up(self) -> tuple[IterationRow, float] | None:
        """The first aggregated iteration when it is a warm-up, with the others' median
        (:func:`derived.warmup`; the row is flagged an outlier too)."""
        return derived.warmup(self.rows)

    def name_of(self, index: int) -> str:
        """``Iteration 0``, with its step label where the trace numbers steps otherwise
        (``Iteration 0 (ProfilerStep#10)``): the report counts iterations from 0."""
        n = self._step(index)
        return f"Iteration {index}" + (f" (ProfilerStep#{n})" if n is not None else "")

    def iter_start(self, index: int) -> str:
        """The option that aggregates from iteration ``index``, in the numbers each command
        means: ``report``/``summary`` count this trace's iterations from 0, ``profile`` counts
        the script's steps, which the ``ProfilerStep#N`` labels carry."""
        n = self._step(index)
        if n is None:
            return f"--iter-start {index}"
        return (
            f"--iter-start {index} when re-reading this trace (`tcreport report`), or "
            f"`tcreport profile --iter-start {n}` to record from the script's step {n} "
            f"(ProfilerStep#{n})"
        )

    def _step(self, index: int) -> int | None:
        """The step number of iteration ``index`` where it differs from the index."""
        if 0 <= index < len(self.step_numbers) and self.step_numbers[index] != index:
            return self.step_numbers[index]
        return None

    @property
    def how(self) -> str | None:
        """How the iterations were found, in the report's words (``key node 'train_step'``)."""
        return slicing.method_text(self.info)

    @property
    def phrase(self) -> str:
        """Which iterations were aggregated, as a heading says it: ``iterations 2–9 of 10`` for a
        real range, the rest plainly (``all 10 iterations``, ``whole run (no iterations found)``)."""
        total, start, stop = self.info.total, self.info.start, self.info.stop
        if not total:
            return "whole run (no iterations found)"
        if total == 1:
            return "1 iteration"
        if start is None or stop is None or (start == 0 and stop == total - 1):
            return f"all {total} iterations"
        if start == stop:
            return f"iteration {start} of {total}"
        return f"iterations {start}–{stop} of {total}"

    @property
    def whole_run(self) -> bool:
        """No iteration marker cut the run: it is aggregated as one."""
        return self.info.method is IterationMethod.WHOLE_RUN

    @property
    def marked(self) -> bool:
        """A marker cut the run, even into one iteration (a single ``ProfilerStep#N``)."""
        steps = (IterationMethod.PROFILER_STEP, IterationMethod.PROFILER_STEP_RANGES)
        return self.info.key_node is not None or self.info.method in steps

    @property
    def several_aggregated(self) -> bool:
        return (self.info.aggregated or 0) > 1

    @property
    def outliers(self) -> tuple[int, ...]:
        return tuple(r.iteration for r in self.rows if r.outlier)

    @property
    def warmup(self) -> tuple[int, ...]:
        """Iterations not aggregated."""
        return tuple(r.iteration for r in self.rows if not r.aggregated)


def _card(info: IterationInfo, wall_ns: int | None) -> Headline:
    if info.mean_ns is None:  # no iteration split: the aggregated wall time is the next "how long"
        return Headline(
            fmt.ns(wall_ns), "wall time aggregated", slicing.method_text(info) or "", Tone.NEUTRAL
        )
    n = info.aggregated
    detail = f"{fmt.count(n)} iteration{'s' if n != 1 else ''} aggregated"
    if info.std_ns is not None and (n or 0) > 1:
        detail = f"± {fmt.ns(info.std_ns)}; {detail}"
    # "wall clock": IT003 judges the GPU step time where it was measured (StepTime)
    return Headline(fmt.ns(info.mean_ns), "mean iteration time (wall clock)", detail, Tone.NEUTRAL)


def step_numbers(run: Run, info: IterationInfo, count: int) -> tuple[int, ...]:
    """Each iteration's ``ProfilerStep#N`` number, in time order, where the run was cut at those
    steps and the trace has one per iteration (``count``); () otherwise."""
    it = run.iterations
    if it is None or info.method not in _STEP_METHODS or it.num_rows != count:
        return ()
    ordered = it.sort_by([("start_ns", "ascending")]).column("iteration").to_pylist()
    return tuple(int(n) for n in ordered if n is not None) if None not in ordered else ()


def build(
    selection: Selection,
    suggestions: tuple[KeyNodeCandidate, ...],
    rows: tuple[IterationRow, ...],
    wall_ns: int | None,
    steps: tuple[int, ...] = (),
) -> Iterations:
    return Iterations(
        info=selection.info,
        key_node_found=selection.key_node_found,
        candidates=selection.candidates,
        sliced=selection.sliced,
        suggestions=suggestions,
        rows=rows,
        card=_card(selection.info, wall_ns),
        step_time=step_time(rows),
        step_numbers=steps,
    )
