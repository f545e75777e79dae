"""The steps section: each (iteration, GPU) cut into compute, communication, memory and idle time,
each instant counted once, and one iteration laid out as a timeline.

It owns which iteration the timeline shows and, when that is not the one asked for
(``Slice.timeline_iter``), the sentence that says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from tcreport.analysis.derived import StepIdle, aggregated_idle
from tcreport.analysis.host_wait import HostWait
from tcreport.analysis.iteration_timeline import IterationTimeline
from tcreport.analysis.steps import StepRow
from tcreport.errors import OptionText
from tcreport.model import IterationInfo


@dataclass(frozen=True)
class Steps:
    rows: tuple[StepRow, ...]  # per (iteration, GPU), warm-up included; () without timestamps
    #: the step rows of the aggregated iterations, summed: the launch-bound figure the finding
    #: (GP002) and the chart share
    idle: StepIdle | None
    #: the aggregated steps' idle and the named host work behind it (GP001 reads it); None for a
    #: run without iteration markers
    host_wait: HostWait | None
    timeline: IterationTimeline | None  # only when the HTML report asked for it
    #: the timeline covers the whole run: it has no iteration markers (a one-row iteration table
    #: of a run that was not split is no "median iteration" to a reader)
    timeline_whole_run: bool
    #: why the timeline does not show the iteration ``Slice.timeline_iter`` asked for, if not
    timeline_ignored: OptionText | None


def _ignored(tl: IterationTimeline | None, requested: int | None, whole: bool) -> OptionText | None:
    if requested is None or tl is None or tl.chosen == "requested":
        return None
    if whole:
        return OptionText.of(
            "{timeline_iter} {n} ignored: the run has no iteration markers; the timeline shows "
            "the whole run",
            n=requested,
        )
    return OptionText.of(
        "{timeline_iter} {n} ignored: no iteration {n} with GPU activity; the timeline shows "
        "iteration {shown}, the median aggregated one",
        n=requested,
        shown=tl.iteration,
    )


def build(
    rows: tuple[StepRow, ...],
    timeline: IterationTimeline | None,
    info: IterationInfo,
    whole_run: bool,
    requested: int | None,
    host_wait: HostWait | None = None,
) -> Steps:
    whole = whole_run or (timeline is not None and timeline.chosen == "whole run")
    return Steps(
        rows=rows,
        idle=aggregated_idle(rows, info),
        host_wait=host_wait,
        timeline=timeline,
        timeline_whole_run=whole,
        timeline_ignored=_ignored(timeline, requested, whole),
    )
