"""The time section: the aggregated range's headline times and how busy the GPUs were in it.

It owns wall, kernel, matrix-unit, memory and unknown-verdict kernel time (one definition each,
:func:`tcreport.analysis.figures.time_figures`), the GPU busy share (:func:`derived.gpu_busy`), the
threshold below which "busy" is bad news, and the card that says so.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tcreport import fmt
from tcreport.analysis import derived, figures, timeline
from tcreport.analysis.derived import GpuBusy
from tcreport.analysis.figures import TimeFigures
from tcreport.analysis.sections.headline import Headline, Tone
from tcreport.analysis.timeline import TimelineFigures
from tcreport.model import IterationInfo, Run

#: GPU busy share of the aggregated range below which the GPUs wait more than they compute: the
#: card turns red and the low-utilisation finding (GP001) fires.
BUSY_LOW = 0.5


@dataclass(frozen=True)
class Time(TimeFigures):
    """The headline times (:class:`TimeFigures`) with the GPU busy share over them."""

    busy: GpuBusy | None = None
    #: per-launch interval figures (union busy time, span, gaps); ``None`` without per-launch
    #: kernel timestamps
    timeline: TimelineFigures | None = None

    @property
    def non_tc_kernel_ns(self) -> int:
        """Kernel time judged not to use the matrix units (neither on them nor unknown)."""
        return max(
            0, (self.gpu_kernel_ns or 0) - (self.tc_kernel_ns or 0) - (self.unknown_kernel_ns or 0)
        )

    @property
    def busy_card(self) -> Headline | None:
        """The busy share as a card; ``None`` when the run gives no busy share."""
        b = self.busy
        if b is None or b.share is None:
            return None
        tone = Tone.BAD if b.share < BUSY_LOW else Tone.NEUTRAL
        return Headline(fmt.pct(b.share), "GPU busy", b.source, tone)


def build(run: Run, info: IterationInfo) -> Time:
    """The times of ``run`` sliced to the iterations ``info`` aggregated."""
    t = figures.time_figures(run, info)
    tl = timeline.kernel_timeline(run.kernels)
    fields = {f.name: getattr(t, f.name) for f in dataclasses.fields(TimeFigures)}
    return Time(**fields, busy=derived.gpu_busy(run.meta, t, tl), timeline=tl)
