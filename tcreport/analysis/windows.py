"""Step windows on each GPU: ordered, disjoint, and what crosses a window's edge.

Every GPU event belongs to the step whose host code launched it (:mod:`tcreport.analysis.
iterations`), but the GPU runs it when it gets to it: with several streams, a straggler of step N
(a collective, a copy on its own stream) can still run after step N+1's first kernel started.
Measured from first to last event, the two steps' spans would then overlap, and the overlap would
be counted twice (the sum of step spans outgrowing the time the GPU was active).

So each GPU's timeline is cut into windows, one per step that ran on it: step N's window opens at
its first GPU event (or where step N-1's opened, if that is later: windows never go back in time)
and closes where the next step's opens (the GPU's first window opens at its first event). An event is counted in the window it runs in: a straggler
is cut at the edge, and its part past the edge is counted in the next step's window, where the
GPU really was busy with it. Where no event crosses an edge (every real trace we have), nothing is
cut and every step's span is exactly first-to-last of its own events, as HolisticTraceAnalysis
measures it.

The GPU step time of a step (:attr:`Windows.length`) is its window: from its first GPU event to the
next step's first on that GPU, so a stall between steps (data loading, a host sync at the end of
the step) counts in the step that caused it; the last step's runs to its last event.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_MAX = np.iinfo(np.int64).max


@dataclass(frozen=True)
class Pieces:
    """The intervals after cutting at window edges (the input arrays themselves when nothing
    crossed an edge); ``source``: the input interval each piece comes from (None: one to one)."""

    group: np.ndarray
    start: np.ndarray
    end: np.ndarray
    cat: np.ndarray
    source: np.ndarray | None


@dataclass(frozen=True)
class Windows:
    """Per (iteration, GPU) group: where its window opens and how long it is, and the group after
    it on the same GPU (-1: the last)."""

    opens: np.ndarray
    length: np.ndarray
    next_group: np.ndarray
    cut: int  # intervals that crossed an edge and were cut


def _per_device(g_dev: np.ndarray, g_iter: np.ndarray, first: np.ndarray) -> tuple[np.ndarray, ...]:
    """Groups in (device, iteration) order, each one's opening edge (running maximum of first
    starts per device) and the next group on its device."""
    order = np.lexsort((g_iter, g_dev))
    dev = g_dev[order]
    new = np.r_[True, dev[1:] != dev[:-1]]
    opens = np.empty(order.size, np.int64)
    for a, b in zip(np.flatnonzero(new), [*np.flatnonzero(new)[1:], order.size], strict=True):
        mine = first[order[a:b]]  # one slice per GPU: few
        opens[a:b] = np.maximum.accumulate(mine)
        opens[a] = mine.min()  # the first window holds whatever ran before the next opened
    last_of_dev = np.r_[new[1:], True]
    nxt = np.where(last_of_dev, -1, np.roll(order, -1))
    out_opens = np.empty_like(opens)
    out_opens[order] = opens
    out_next = np.empty(order.size, np.int64)
    out_next[order] = nxt
    return order, out_opens, out_next, new


def windows(
    group: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    cat: np.ndarray,
    g_iter: np.ndarray,
    g_dev: np.ndarray,
) -> tuple[Pieces, Windows]:
    """Cut the intervals of each GPU into its step windows (see the module docstring)."""
    ng = g_iter.size
    first = np.full(ng, _MAX, np.int64)
    np.minimum.at(first, group, start)
    last = np.full(ng, np.iinfo(np.int64).min, np.int64)
    np.maximum.at(last, group, end)
    order, opens, nxt, new = _per_device(g_dev, g_iter, first)
    closes = np.where(nxt >= 0, opens[np.maximum(nxt, 0)], _MAX)
    crossing = (start < opens[group]) | (end > closes[group])
    pieces = (
        Pieces(group, start, end, cat, None)
        if not crossing.any()
        else _cut(group, start, end, cat, order, opens, new)
    )
    if pieces.source is not None:
        last = np.full(ng, np.iinfo(np.int64).min, np.int64)
        np.maximum.at(last, pieces.group, pieces.end)
    length = np.where(nxt >= 0, closes - opens, np.maximum(last - opens, 0))
    return pieces, Windows(opens, length, nxt, int(np.count_nonzero(crossing)))


def _cut(
    group: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    cat: np.ndarray,
    order: np.ndarray,
    opens: np.ndarray,
    new: np.ndarray,
) -> Pieces:
    """Each interval split at the window edges of its GPU it crosses, each piece in the window it
    runs in (before the GPU's first edge: in its first window)."""
    dev_rank = np.cumsum(new) - 1  # per position in ``order``: which GPU
    rank_of_group = np.empty(order.size, np.int64)
    rank_of_group[order] = dev_rank
    t0 = int(min(start.min(), opens.min()))
    width = int(max(end.max(), opens.max())) - t0 + 2
    edges = dev_rank * width + (opens[order] - t0)  # sorted: by GPU, then edge
    base = rank_of_group[group] * width
    lo = np.searchsorted(edges, base + (start - t0), side="right") - 1
    hi = np.searchsorted(edges, base + (np.maximum(end - 1, start) - t0), side="right") - 1
    floor = np.searchsorted(edges, base, side="left")  # the GPU's first window
    lo, hi = np.maximum(lo, floor), np.maximum(hi, floor)
    count = hi - lo + 1
    source = np.repeat(np.arange(start.size), count)
    step = np.arange(source.size) - np.repeat(np.cumsum(count) - count, count)
    pos = lo[source] + step
    edge = opens[order]
    last_pos = np.r_[np.flatnonzero(new)[1:] - 1, order.size - 1][dev_rank]
    p_start = np.maximum(start[source], np.where(step > 0, edge[pos], start[source]))
    upper = np.where(pos < last_pos[pos], edge[np.minimum(pos + 1, order.size - 1)], _MAX)
    p_end = np.minimum(end[source], upper)
    keep = (p_end > p_start) | (count[source] == 1)
    return Pieces(order[pos][keep], p_start[keep], p_end[keep], cat[source][keep], source[keep])
