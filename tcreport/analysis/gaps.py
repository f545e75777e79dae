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
_SPLIT_SLICE = 1 << 20


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
    t0 = int(start.min())
    width = int(max(end.max(), start.max())) - t0 + 1
    dev = _device_codes(device, width)
    key = dev.astype(np.int64)  # built in place: one array of intervals, not three
    key *= width
    key += start
    key -= t0
    order = np.argsort(key, kind="stable")  # stable: ties in input order, deterministic
    del key
    # At most one gap per interval, written in place: the pages past the last gap are never
    # touched, so never resident; rows as int32 where they fit (a gap per launch on a long run)
    rows = np.int32 if n < 2**31 else np.int64
    out = Gaps(np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, rows), np.empty(n, rows))
    found = 0
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
        k = found + at.size
        out.start[found:k] = prev[at] - (prev[at] // width) * width + t0
        out.length[found:k] = ps[at] - prev[at]
        out.before[found:k] = order[prev_at[at]]
        out.after[found:k] = o[at]
        found = k
        carry, carry_at = reach[-1], int(reach_at[-1])
    return Gaps(out.start[:found], out.length[:found], out.before[:found], out.after[:found])


def _device_codes(device: np.ndarray, width: int) -> np.ndarray:
    """Each interval's GPU as a code in the order of the keys, to pack with a time of ``width``:
    its offset from the lowest key (a subtraction, where ``np.unique`` sorts every interval), or
    its rank among the distinct keys when the offsets would not fit."""
    low, high = int(device.min()), int(device.max())
    if (high - low + 1) * width >= 2**62:
        ranks: np.ndarray = np.unique(device, return_inverse=True)[1].reshape(-1)
        return ranks
    codes: np.ndarray = np.subtract(device, low, dtype=np.int64)
    return codes.astype(np.int32) if high - low < 2**31 else codes


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
    host launch time of the event that closed each gap; ``None`` when no event has one. A million
    gaps at a time: a run can have a gap per launch, and the sums of exact slice sums are the
    same sums."""
    if not (launch >= 0).any():
        return None
    sums = [np.zeros(ngroups, np.int64) for _ in range(3)]
    for a in range(0, len(gaps), _SPLIT_SLICE):
        part = slice(a, a + _SPLIT_SLICE)
        before, after = gaps.before[part], gaps.after[part]
        g = group[before]
        inside = g == group[after]
        g, length, opened = g[inside], gaps.length[part][inside], gaps.start[part][inside]
        queued_late = launch[after[inside]] > opened  # a launch of -1 (none): never late
        short = ~queued_late & (length < KERNEL_WAIT_NS)
        other = ~queued_late & ~short
        for total, flag in zip(sums, (queued_late, short, other), strict=True):
            total += exact_sums(g, np.where(flag, length, 0), ngroups)
    return QueueSplit(*sums)
