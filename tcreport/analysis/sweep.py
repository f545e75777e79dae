"""The one interval sweep: per group (an iteration on a GPU, or a GPU), what was active when.

Every interval contributes two events, its start and its end; sorted by (group, time), a running
count per category says which categories are active in each elementary segment between two
consecutive events, and the highest-priority active one (:class:`activity.Cat`: Tensor Core
compute before other compute before communication before memory) takes the segment. Overlapped
time is therefore counted once, and each group's segments tile exactly its span, first start to
last end.

Speed and memory are what decide the design, because a training trace has millions of launches:

* one ``int64`` per event packs (group, time, start/end, category), so a single in-place sort of
  one array replaces an argsort and four gathers (a lexsort on three arrays is kept for the rare
  trace whose time range is too wide to pack);
* starts sort before ends at equal times, so no running count is ever negative;
* the sorted events are walked in chunks of :data:`CHUNK` events, carrying the counts from one
  chunk to the next, and only the sums are kept: time per (group, winning category), the union
  of collective time and the part of it compute hid, and the idle segments at least
  ``long_gap_ns`` long (the host-bound gaps, few). Temporaries are a chunk's size, whatever the
  trace's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from tcreport._arrays import exact_sums
from tcreport.analysis.activity import COMPUTE_MASK, IDLE, N_CATS, Cat

#: Events per chunk: big enough that numpy's per-call overhead vanishes (a chunk costs a few
#: dozen numpy calls, ~40 chunks on a 4.7-million-launch trace), small enough that the chunk's
#: temporaries (~100 bytes per event) stay near 25 MiB: they come on top of the activity arrays
#: and the packed events, at the step analysis' highest point.
CHUNK = 1 << 18
#: Intervals per slab of sorted events (:func:`_slabs`): a slab's events are 16 bytes per
#: interval, the sweep's largest array.
SLAB = 1 << 20
#: Most slabs: each slab is one pass over every event's slab id, so the passes are capped
#: (past MAX_SLABS * SLAB intervals the slabs grow instead of multiplying).
MAX_SLABS = 16
#: Bits below the (group, time) part of a packed event: 3 for the category, 1 for start/end.
_LOW = 4
_END = 1 << 3
#: Column of the long idle segments in :attr:`SweepSums.by_winner` (column ``IDLE`` holds the
#: short ones).
LONG_IDLE = IDLE + 1
_COLS = IDLE + 2


def _lowest_active() -> np.ndarray:
    """Per state bit mask, the highest-priority (lowest) active category, or IDLE."""
    lowest = np.full(1 << N_CATS, IDLE, np.int64)
    for mask in range(1, 1 << N_CATS):
        lowest[mask] = (mask & -mask).bit_length() - 1
    return lowest


_WINNER = _lowest_active()


@dataclass(frozen=True)
class SweepSums:
    """Sums over each group's segments (``ngroups`` rows), and its long idle segments."""

    by_winner: np.ndarray  # (ngroups, IDLE + 2) int64 ns: Cat columns, short idle, long idle
    comm_total: np.ndarray  # (ngroups,) int64: union of collective time
    comm_hidden: np.ndarray  # (ngroups,) int64: of which some compute ran at the same time
    memory_total: np.ndarray  # (ngroups,) int64: union of copy/set time, hidden or not
    gap_group: np.ndarray  # per long idle segment: its group
    gap_start: np.ndarray  # absolute ns
    gap_length: np.ndarray  # ns, >= long_gap_ns

    @property
    def span(self) -> np.ndarray:
        result: np.ndarray = self.by_winner.sum(axis=1)
        return result


@dataclass
class _Events:
    """One chunk of sorted events, plus the next event (for the last segment's end), if any."""

    group: np.ndarray
    time: np.ndarray
    cat: np.ndarray
    is_end: np.ndarray


def _packed(
    group: np.ndarray, start: np.ndarray, end: np.ndarray, cat: np.ndarray, ngroups: int
) -> tuple[Iterator[np.ndarray], int, int] | None:
    """Every event as ``((group * width + time - t0) << 4) | end << 3 | cat``, sorted, in slabs
    (:func:`_slabs`); ``None`` when that does not fit in 63 bits (a time range of years, or
    hostile timestamps)."""
    t0, t1 = int(min(start.min(), end.min())), int(max(start.max(), end.max()))
    width = t1 - t0 + 1
    if ngroups * width >= 1 << (62 - _LOW):
        return None
    return _slabs(group, start, end, cat, t0, width), t0, width


def _pack(
    out: np.ndarray, times: np.ndarray, offset: np.ndarray, low: np.ndarray, flag: int, t0: int
) -> None:
    """Packed events of some intervals into ``out`` (``offset``: their group * width)."""
    np.subtract(times, t0, out=out)  # first: times near the int64 limits must not wrap
    out += offset
    out <<= _LOW
    out |= low | flag


def _slabs(
    group: np.ndarray, start: np.ndarray, end: np.ndarray, cat: np.ndarray, t0: int, width: int
) -> Iterator[np.ndarray]:
    """The packed events, sorted, as consecutive slabs of about :data:`SLAB` intervals' worth.

    Sorting all 2n events at once made one int64 array of them, the step analysis' largest
    (72 MiB for 4.7 M launches). Instead each event gets a slab from its (group, time) (quantiles
    of a sample of starts: equal (group, time) means the same slab), and each slab's events are
    packed and sorted in turn: every event of a slab sorts before every event of the next, so
    the slabs, one after the other, are the one sorted array."""
    n = start.size
    nslabs = min(-(-n // SLAB), MAX_SLABS)
    chunks = [(a, min(n, a + CHUNK)) for a in range(0, n, CHUNK)]
    if nslabs <= 1:
        key = np.empty(2 * n, np.int64)
        for a, b in chunks:  # in chunks: the temporaries stay a chunk's size
            low, offset = cat[a:b].astype(np.int64), group[a:b].astype(np.int64) * width
            _pack(key[a:b], start[a:b], offset, low, 0, t0)
            _pack(key[n + a : n + b], end[a:b], offset, low, _END, t0)
        key.sort()
        yield key
        return
    step = max(1, n // (64 * nslabs))
    sample = np.sort(group[::step].astype(np.int64) * width + (start[::step] - t0))
    edges = np.unique(sample[np.arange(1, nslabs) * sample.size // nslabs])
    slab = np.empty(2 * n, np.int8 if edges.size < 127 else np.int32)  # per event: its slab
    counts = np.zeros(edges.size + 1, np.int64)
    for a, b in chunks:
        offset = group[a:b].astype(np.int64) * width
        for at, times in ((0, start), (n, end)):
            hi = times[a:b] - t0
            hi += offset
            ids = np.searchsorted(edges, hi, side="right")
            slab[at + a : at + b] = ids
            counts += np.bincount(ids, minlength=counts.size)
    for k in range(edges.size + 1):
        key = np.empty(int(counts[k]), np.int64)
        pos = 0
        for a, b in chunks:
            for at, times, flag in ((0, start, 0), (n, end, _END)):
                rows = np.flatnonzero(slab[at + a : at + b] == k) + a
                if rows.size:
                    offset = group[rows].astype(np.int64) * width
                    low = cat[rows].astype(np.int64)
                    _pack(key[pos : pos + rows.size], times[rows], offset, low, flag, t0)
                    pos += rows.size
        key.sort()
        yield key
        del key  # before the next slab is built


def _chunks_packed(slabs: Iterator[np.ndarray], t0: int, width: int) -> Iterator[_Events]:
    """The sorted events in chunks of CHUNK, each with one event past it (the end of its last
    segment). A chunk that straddles two slabs is the only one put together from pieces."""
    rest = np.empty(0, np.int64)  # walked events of earlier slabs: fewer than a chunk and one
    for key in slabs:
        a = 0
        if rest.size:
            need = CHUNK + 1 - rest.size  # events of this slab that complete the chunk
            if key.size < need:
                rest = np.concatenate([rest, key])
                continue
            yield _events(np.concatenate([rest, key[:need]]), t0, width)
            a = need - 1  # the chunk's last event is the next chunk's first
        while key.size - a > CHUNK:  # a whole chunk, and the event past it, are here
            yield _events(key[a : a + CHUNK + 1], t0, width)
            a += CHUNK
        rest = key[a:].copy()  # at most a chunk: the slab itself can go
        del key
    if rest.size:
        yield _events(rest, t0, width)


def _events(k: np.ndarray, t0: int, width: int) -> _Events:
    hi = k >> _LOW
    grp = hi // width
    return _Events(grp, hi - grp * width + t0, (k & 7).astype(np.int8), (k & _END) != 0)


def _chunks_sorted(
    group: np.ndarray, start: np.ndarray, end: np.ndarray, cat: np.ndarray
) -> Iterator[_Events]:
    """The same events for a time range too wide to pack: a lexsort, then gathers per chunk."""
    n = start.size
    times = np.concatenate([start, end])
    groups = np.concatenate([group, group])
    is_end = np.arange(2 * n) >= n
    order = np.lexsort((is_end, times, groups))  # starts before ends at equal times
    for a in range(0, order.size, CHUNK):
        idx = order[a : a + CHUNK + 1]
        yield _Events(groups[idx], times[idx], cat[idx % n], is_end[idx])


def sweep(
    group: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    cat: np.ndarray,
    ngroups: int,
    long_gap_ns: int,
) -> SweepSums:
    """Sweep the intervals of every group at once; ``group`` holds codes ``0..ngroups-1``."""
    by_winner = np.zeros(ngroups * _COLS, np.int64)
    comm_total = np.zeros(ngroups, np.int64)
    comm_hidden = np.zeros(ngroups, np.int64)
    memory_total = np.zeros(ngroups, np.int64)
    gaps: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    if start.size == 0:
        empty = np.empty(0, np.int64)
        return SweepSums(by_winner.reshape(ngroups, _COLS), comm_total, comm_hidden,
                         memory_total, empty, empty, empty)  # fmt: skip
    present = [c for c in range(N_CATS) if (cat == c).any()]
    packed = _packed(group, start, end, cat, ngroups)
    chunks = (
        _chunks_packed(*packed) if packed is not None else _chunks_sorted(group, start, end, cat)
    )
    carry = np.zeros(N_CATS, np.int64)
    for ev in chunks:
        m = ev.group.size - 1  # segments in this chunk (the last event only closes one)
        if m <= 0:
            break
        sign = np.where(ev.is_end[:m], -1, 1).astype(np.int64)
        state = np.zeros(m, np.uint8)
        for c in present:
            counts = np.cumsum(np.where(ev.cat[:m] == c, sign, 0))
            counts += carry[c]
            carry[c] = counts[-1]
            state |= (counts > 0).astype(np.uint8) << np.uint8(c)
        grp = ev.group[:m]
        length = np.where(ev.group[1:] == grp, ev.time[1:] - ev.time[:m], 0)
        win = _WINNER[state]
        long = (win == IDLE) & (length >= long_gap_ns)
        col = np.where(long, LONG_IDLE, win)
        by_winner += exact_sums(grp * _COLS + col, length, ngroups * _COLS)
        comm = (state >> np.uint8(Cat.COMM)) & 1 == 1
        comm_total += exact_sums(grp, np.where(comm, length, 0), ngroups)
        hidden = comm & ((state & np.uint8(COMPUTE_MASK)) != 0)
        comm_hidden += exact_sums(grp, np.where(hidden, length, 0), ngroups)
        if Cat.MEMORY in present:
            copying = (state >> np.uint8(Cat.MEMORY)) & 1 == 1
            memory_total += exact_sums(grp, np.where(copying, length, 0), ngroups)
        at = np.flatnonzero(long)
        if at.size:
            gaps.append((grp[at], ev.time[at], length[at]))
    g, s, ln = (
        (np.concatenate(x) for x in zip(*gaps, strict=True))
        if gaps
        else (np.empty(0, np.int64) for _ in range(3))
    )
    return SweepSums(
        by_winner.reshape(ngroups, _COLS), comm_total, comm_hidden, memory_total, g, s, ln
    )
