"""Every idle gap of every GPU, with the event that closed it, and the idle split by queue state.

The sweep (:mod:`tcreport.analysis.sweep`) sums idle time per step and keeps only the long gaps.
Two questions need each gap with its neighbours:

* HolisticTraceAnalysis's idle vocabulary is about the launch queue, not the gap's length: a gap
  is **host wait** when the event that ends it was launched after the GPU ran dry (nothing was
  queued: the host was late), **kernel wait** when it was already queued and the gap is under
  HTA's 30 µs consecutive-kernel delay (launch overhead between back-to-back kernels), and
  **other** when it was queued and the gap is longer (a dependency: an event, another stream).
  tcreport's own split, launch-bound (under 100 µs) and host-bound (longer), is by length only;
  both cut the same idle time (docs/report.md puts them side by side). HTA splits the gaps of
  each stream; here they are the GPU's gaps (no stream busy), so the three parts sum to the
  step's idle time.
* The stall findings (:mod:`tcreport.analysis.stalls`) ask which event's end opened a gap (a
  pageable copy) and what the host was doing then (a synchronisation).

One pass: the intervals sorted by (GPU, start) a chunk at a time, with a running maximum of
packed ends, which needs no reset between GPUs (a GPU's packed ends stay below the next one's
packed starts). Temporaries are a chunk's size besides the sort order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tcreport._arrays import exact_sums

#: HTA's ``consecutive_kernel_delay`` default (30, in the trace's microseconds): a gap before an
#: already-queued event shorter than this is launch overhead ("kernel wait").
KERNEL_WAIT_NS = 30_000
_CHUNK = 1 << 18


@dataclass(frozen=True)
class Gaps:
    """Idle gaps between the intervals of each GPU, in (GPU, time) order."""

    start: np.ndarray  # ns: where the GPU ran dry
    length: np.ndarray  # ns, > 0
    before: np.ndarray  # interval whose end opened the gap
    after: np.ndarray  # interval whose start closed it (of several starting there, the first)

    def __len__(self) -> int:
        return int(self.start.size)


def find(start: np.ndarray, end: np.ndarray, device: np.ndarray) -> Gaps:
    """The gaps of the intervals (``device``: any int64-comparable GPU key per interval)."""
    n = start.size
    empty = np.empty(0, np.int64)
    if n == 0:
        return Gaps(empty, empty, empty, empty)
    _, dev = np.unique(device, return_inverse=True)
    t0 = int(start.min())
    width = int(max(end.max(), start.max())) - t0 + 1
    key = dev.astype(np.int64) * width + (start - t0)
    order = np.argsort(key, kind="stable")  # stable: ties in input order, deterministic
    del key
    parts: list[tuple[np.ndarray, ...]] = []
    carry, carry_at = np.int64(-1), -1
    for a in range(0, n, _CHUNK):
        o = order[a : a + _CHUNK]
        base = dev[o].astype(np.int64) * width
        ps = base + (start[o] - t0)
        pe = np.maximum(base + (end[o] - t0), ps)
        reach = np.maximum.accumulate(np.maximum(pe, carry))
        setter = np.where(pe >= reach, np.arange(a, a + o.size), carry_at)
        reach_at = np.maximum.accumulate(setter)
        prev = np.r_[carry, reach[:-1]]
        prev_at = np.r_[carry_at, reach_at[:-1]]
        gap = (prev_at >= 0) & (ps > prev) & (ps // width == prev // width)
        at = np.flatnonzero(gap)
        if at.size:
            opened = prev[at] - (prev[at] // width) * width + t0
            parts.append((opened, ps[at] - prev[at], order[prev_at[at]], o[at]))
        carry, carry_at = reach[-1], int(reach_at[-1])
    if not parts:
        return Gaps(empty, empty, empty, empty)
    s, ln, b, f = (np.concatenate(x) for x in zip(*parts, strict=True))
    return Gaps(s, ln, b, f)


@dataclass(frozen=True)
class QueueSplit:
    """Per group, the idle time inside its span split HTA's way (see the module docstring)."""

    host_wait: np.ndarray
    kernel_wait: np.ndarray
    other: np.ndarray


def queue_split(
    gaps: Gaps, group: np.ndarray, launch: np.ndarray, ngroups: int
) -> QueueSplit | None:
    """HTA's split of the gaps inside each group's span (both neighbours in the group), from the
    host launch time of the event that closed each gap; ``None`` when no event has one."""
    if not (launch >= 0).any():
        return None
    g = group[gaps.before]
    inside = g == group[gaps.after]
    g, length, opened = g[inside], gaps.length[inside], gaps.start[inside]
    queued_late = launch[gaps.after[inside]] > opened  # a launch of -1 (none): never late
    short = ~queued_late & (length < KERNEL_WAIT_NS)
    other = ~queued_late & ~short
    return QueueSplit(
        exact_sums(g, np.where(queued_late, length, 0), ngroups),
        exact_sums(g, np.where(short, length, 0), ngroups),
        exact_sums(g, np.where(other, length, 0), ngroups),
    )
