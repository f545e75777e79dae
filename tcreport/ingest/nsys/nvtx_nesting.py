"""Nesting of NVTX ranges in time, per thread, with sorts and binary searches only.

Ranges pushed and popped on one thread nest properly; an export holds tens of millions of them on
a few hundred threads, so nothing here loops over ranges in Python (a loop over threads, at most).
Ranges are taken in (thread, start, -end) order: a parent comes before its children, and of two
ranges with equal bounds the first pushed is the outer one.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_I64_MIN = np.iinfo(np.int64).min
_BLOCK = 1 << 20


class Keys:
    """(thread, time) packed into one sortable int64, so that one binary search finds a time on
    its own thread; times are ranked instead when threads x span would overflow."""

    def __init__(self, n_threads: int, times: np.ndarray) -> None:
        self._tmin = int(times.min()) if len(times) else 0
        span = (int(times.max()) - self._tmin) if len(times) else 0
        self._uniq: np.ndarray | None = None
        if max(n_threads, 1) * (span + 3) >= 2**62:
            self._uniq = np.unique(times)
            span = 2 * len(self._uniq)
        self.m = span + 3

    def __call__(self, tcode: np.ndarray, t: np.ndarray) -> np.ndarray:
        if self._uniq is None:
            off = np.clip(t - self._tmin + 1, 0, self.m - 1)
        else:
            r = np.searchsorted(self._uniq, t, "left")
            exact = (r < len(self._uniq)) & (self._uniq[np.minimum(r, len(self._uniq) - 1)] == t)
            off = 2 * r + np.where(exact, 2, 1)
        key: np.ndarray = tcode * self.m + off
        return key


class Nesting:
    """Properly nested ranges of many threads, sorted by (thread, start, -end).

    Depth is "ranges opened before me on my thread minus ranges closed by my start"; the parent
    is the last range before me one level up. Both are binary searches over keys that pack the
    thread in the high part, so no per-range Python runs.
    """

    def __init__(self, tcode: np.ndarray, start: np.ndarray, end: np.ndarray) -> None:
        self.n = len(start)
        n_threads = int(tcode.max()) + 1 if self.n else 0
        self._key = Keys(n_threads, np.concatenate([start, end]))
        self.key_start = self._key(tcode, start)
        self.key_end = np.sort(self._key(tcode, end))
        # where each thread's keys begin, searched once per thread rather than once per range
        bases = np.arange(n_threads, dtype=np.int64) * self._key.m
        self._first_start = np.searchsorted(self.key_start, bases, "left")
        self._first_end = np.searchsorted(self.key_end, bases, "left")
        first = self._first_start[tcode]
        ends_before = (
            np.searchsorted(self.key_end, self.key_start, "right") - self._first_end[tcode]
        )
        self.depth = np.maximum(np.arange(self.n) - first - ends_before, 0)
        order = np.argsort(self.depth, kind="stable")
        counts = np.bincount(self.depth) if self.n else np.zeros(0, dtype=np.int64)
        self.levels = np.split(order, np.cumsum(counts)[:-1]) if self.n else []
        self.parent = self._last_at_depth(np.arange(self.n), self.depth - 1)

    def _last_at_depth(self, before: np.ndarray, want: np.ndarray) -> np.ndarray:
        out = np.full(len(before), -1, dtype=np.int64)
        small = want.max(initial=0) < 2**15  # depths: a radix sort on int16
        order = np.argsort(want.astype(np.int16) if small else want, kind="stable")
        sorted_want = want[order]
        for d in np.unique(sorted_want[sorted_want >= 0]):
            lo, hi = np.searchsorted(sorted_want, [d, d + 1])
            sel = order[lo:hi]
            pos = self.levels[int(d)]
            k = np.searchsorted(pos, before[sel], "left") - 1
            out[sel] = np.where(k >= 0, pos[np.maximum(k, 0)], -1)
        return out

    def innermost(self, tcode: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Innermost range open at time ``t`` on thread ``tcode`` (-1: none; tcode -1: unknown).
        Millions of queries go in blocks, which bounds the temporaries."""
        if self.n == 0:
            return np.full(len(t), -1, dtype=np.int64)
        if len(t) > _BLOCK:
            return np.concatenate(
                [
                    self.innermost(tcode[i : i + _BLOCK], t[i : i + _BLOCK])
                    for i in range(0, len(t), _BLOCK)
                ]
            )
        valid = (tcode >= 0) & (tcode < len(self._first_start))
        tc = np.where(valid, tcode, 0)
        key = self._key(tc, t)
        p = np.searchsorted(self.key_start, key, "right")
        opened = p - self._first_start[tc]
        closed = np.searchsorted(self.key_end, key, "right") - self._first_end[tc]
        depth = np.where(valid, opened - closed, 0)
        return self._last_at_depth(p, depth - 1)


def thread_codes(gtid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Threads in ascending order and each range's index among them (a hash, not a sort)."""
    enc = pc.dictionary_encode(pa.array(gtid))
    seen = np.asarray(enc.dictionary.to_numpy(zero_copy_only=False), dtype=np.int64)
    rank = np.empty(len(seen), dtype=np.int64)
    rank[np.argsort(seen)] = np.arange(len(seen))
    return np.sort(seen), rank[np.asarray(enc.indices.to_numpy(zero_copy_only=False), np.int64)]


def time_order(tcode: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Indices that sort ranges by (thread, start, -end), stable. Exports are in time order, so
    a stable sort by thread alone usually does it, and it is checked rather than assumed."""
    order = np.argsort(
        tcode.astype(np.int16 if tcode.max(initial=0) < 2**15 else np.int64), kind="stable"
    )
    for a in range(0, max(len(order) - 1, 0), _BLOCK):  # checked in blocks: bounded temporaries
        o = order[a : a + _BLOCK + 1]  # one row of overlap, so every neighbouring pair is seen
        t, s, e = tcode[o], start[o], end[o]
        same = t[1:] == t[:-1]
        if bool((same & ((s[1:] < s[:-1]) | ((s[1:] == s[:-1]) & (e[1:] > e[:-1])))).any()):
            # ~end, not -end: -INT64_MIN overflows to itself, which put an end of INT64_MIN after
            # every other end, where the check above (comparing ends) has it first
            return np.lexsort((~end, start, tcode))
    return order


def inside_op(tcode: np.ndarray, start: np.ndarray, end: np.ndarray, op: np.ndarray) -> np.ndarray:
    """Whether an op range (of positive length) earlier in (thread, start, -end) order is still
    open at each range's start: a running maximum of op ends per thread, one pass."""
    return op_cover(tcode, start, end, op)[0]


def op_cover(
    tcode: np.ndarray, start: np.ndarray, end: np.ndarray, op: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`inside_op`, and which of the ranges inside an op outlast every op open at their
    start. Push/pop stacks are per thread *and domain*, so a range of one domain may cross an op
    of another: it is inside, but if it is an op itself its end still hides what starts after the
    outer op ends. A reader that drops inside ranges chunk by chunk keeps these (whether a range is
    an op may be known only once something is seen inside it), so the next chunk sees that end."""
    inside = np.zeros(len(start), dtype=bool)
    outlasting = np.zeros(len(start), dtype=bool)
    bounds = np.flatnonzero(tcode[1:] != tcode[:-1]) + 1
    op_end = np.where(op, end, _I64_MIN)
    for a, b in zip(np.r_[0, bounds], np.r_[bounds, len(start)], strict=True):
        run = np.maximum.accumulate(op_end[a:b])
        before = run[:-1]
        inside[a + 1 : b] = before > start[a + 1 : b]
        outlasting[a + 1 : b] = end[a + 1 : b] > before
    outlasting &= inside
    return inside, outlasting


def find_open(
    tcode: np.ndarray, start: np.ndarray, end: np.ndarray, q_tcode: np.ndarray, q_time: np.ndarray
) -> np.ndarray:
    """For each query (thread, time), the range open then (start <= time < end), or -1; the ranges
    must not overlap on a thread and come sorted by (thread, start): outermost ops do and are."""
    if len(start) == 0:
        return np.full(len(q_time), -1, dtype=np.int64)
    keys = Keys(int(tcode.max()) + 1, np.concatenate([start, end]))
    valid = q_tcode >= 0
    p = np.searchsorted(keys(tcode, start), keys(np.where(valid, q_tcode, 0), q_time), "right") - 1
    r = np.maximum(p, 0)
    hit = valid & (p >= 0) & (tcode[r] == q_tcode) & (start[r] <= q_time) & (q_time < end[r])
    return np.where(hit, p, -1)
