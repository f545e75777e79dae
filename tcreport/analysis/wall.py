"""The run's wall time and the measure it is: decided here once, so that nothing downstream
compares two different measures as if they were one.

A run's wall time comes from the first of three sources it has: the aggregated iterations' span
(first start to last end), the profiler's own figure (DLProf's Wall Clock Time, the span the
Nsight Systems reader takes), or the first to last GPU activity of a trace with no step marker.
They are different measures of one run: the DLProf CNN's CSVs read 2.8 s with its summary (DLProf's
Wall Clock Time) and 5.1 ms without it (its kernels' span). A diff or gate compares two runs' wall
times only where both are the same measure (:func:`unlike`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import pyarrow.compute as pc

from tcreport.model import IterationInfo, Run


class WallSource(StrEnum):
    """Which measure a run's wall time is."""

    ITERATIONS = "iterations"
    REPORTED = "reported"
    GPU_ACTIVITY = "gpu_activity"


@dataclass(frozen=True)
class Wall:
    ns: int | None
    source: WallSource | None  # None exactly when ``ns`` is


def wall(run: Run, it: IterationInfo) -> Wall:
    """The aggregated range: the iterations ``it`` kept (one is enough: a single
    ``ProfilerStep#N`` is a range too), else what the profiler reported, else first to last
    kernel or copy (a trace with no step marker is its GPU activity, the range the busy share is
    taken over)."""
    if (
        run.iterations is not None
        and run.iterations.num_rows
        and it.start is not None
        and it.stop is not None
    ):
        t = run.iterations
        mask = pc.and_(
            pc.greater_equal(t.column("iteration"), it.start),
            pc.less_equal(t.column("iteration"), it.stop),
        )
        sel = t.filter(mask)
        if sel.num_rows:
            first = pc.min(sel.column("start_ns")).as_py()
            last = pc.max(sel.column("end_ns")).as_py()
            if first is not None and last is not None and last >= first:  # inverted: damage
                return Wall(int(last - first), WallSource.ITERATIONS)
    if run.meta.reported.wall_ns is not None:
        return Wall(run.meta.reported.wall_ns, WallSource.REPORTED)
    span = _activity_span(run)
    return Wall(span, None if span is None else WallSource.GPU_ACTIVITY)


def _activity_span(run: Run) -> int | None:
    lo: list[int] = []
    hi: list[int] = []
    for t in (run.kernels, run.memory):
        if t is None or t.num_rows == 0:
            continue
        timed = t.filter(pc.is_valid(t.column("start_ns")))
        if timed.num_rows:
            lo.append(pc.min(timed.column("start_ns")).as_py())
            ends = pc.add(timed.column("start_ns"), timed.column("duration_ns"))
            hi.append(pc.max(ends).as_py())
    return int(max(hi) - min(lo)) if lo else None


def words(source: WallSource, profiler: str | None) -> str:
    """What a wall time of ``source`` measures, in a sentence's words."""
    if source is WallSource.ITERATIONS:
        return "the aggregated iterations' span"
    if source is WallSource.REPORTED:
        return f"{profiler or 'the profiler'}'s own wall time"
    return "first to last GPU activity (no iteration marker)"


def unlike(
    base: WallSource | None,
    head: WallSource | None,
    base_profiler: str | None,
    head_profiler: str | None,
) -> str:
    """Why two runs' wall times are not compared ("" when they are, or either has none): they
    are different measures of a run, so their difference is no change of the run's."""
    if base is None or head is None or base == head:
        return ""
    return (
        f"wall time not compared: the base's is {words(base, base_profiler)}, the head's "
        f"{words(head, head_profiler)}, two different measures"
    )
