"""Timeline events folded into at most a few thousand drawable blocks, for any number of events.

An event at least one column wide is one block; shorter events of a lane are merged per column
into one cell that counts them and is led by the longest (then the earliest, then the first),
and the column doubles until the blocks fit. The events can be every launch of a run, read
straight from the activity's or the op table's own arrays: they are folded into cells of the
finest column a slice at a time (:data:`SLICE` events), with ``bincount``-style passes and no
sort, so nothing per event outlives its slice but the few events that lead or stand alone.
Split from :mod:`tcreport.analysis.iteration_timeline`, which decides what is drawn.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tcreport._arrays import exact_sums


@dataclass(frozen=True)
class Items:
    """Events, or cells of events merged per (lane, column), as arrays.

    An event is its own item (``count`` 1, ``alone_ns`` its duration); a cell has ``alone_ns``
    -1 (never drawn alone) and the lead of its events: the longest, then the earliest, then the
    first in source order (``lead_id``)."""

    lane: np.ndarray
    start: np.ndarray  # ns from the window start (a cell: its column's start)
    alone_ns: np.ndarray  # an event's duration; -1 for a cell
    count: np.ndarray
    work: np.ndarray  # summed duration
    lead_ns: np.ndarray  # the lead's duration, start and id
    lead_start: np.ndarray
    lead_id: np.ndarray
    cat: np.ndarray  # the lead's
    src: np.ndarray
    ref: np.ndarray  # the lead's row in its source

    def take(self, idx: np.ndarray) -> Items:
        return Items(*(getattr(self, f)[idx] for f in _ITEM_FIELDS))


_ITEM_FIELDS = tuple(Items.__dataclass_fields__)


def premerge(
    lane: np.ndarray, start: np.ndarray, end: np.ndarray, origin: int, cat: np.ndarray | int,
    src: int, ref: np.ndarray | None, first_id: int, lo: int,
    clip: tuple[int, int] | None = None, lengths: bool = False,
) -> Items:  # fmt: skip
    """Raw events of one source as items at resolution ``lo``: those at least ``lo`` long as
    they are, the rest folded into (lane, column) cells. ``start``/``end`` are absolute, drawn
    from ``origin`` (``lengths``: ``end`` holds lengths, the ends are start + length); ``ref``
    None: the row is the index; ``clip``: the window the events are cut to (host ranges and ops
    overhang it; a negative duration is no time).

    The raw arrays can hold every launch of a run (the activity's own arrays, not copies), so
    they are read a slice at a time: durations and cell keys are recomputed per slice rather
    than kept, and nothing per event outlives its slice but a few index arrays of the events
    that matter (those drawn alone, the candidate leads of each cell)."""
    n = lane.size
    cats = np.full(n, cat, np.int8) if isinstance(cat, int) else cat
    parts = [slice(a, a + SLICE) for a in range(0, n, SLICE)]

    def dur(rows: slice | np.ndarray) -> np.ndarray:
        s = start[rows]
        return window_dur(s, s + end[rows] if lengths else end[rows], clip)

    def rel(rows: slice | np.ndarray) -> np.ndarray:
        s = start[rows] if clip is None else np.maximum(start[rows], clip[0])
        result: np.ndarray = s - origin
        return result

    alone = np.concatenate([np.flatnonzero(dur(p) >= lo) + p.start for p in parts])
    a_start, a_dur = rel(alone), dur(alone)
    at = alone if ref is None else ref[alone]
    items = [Items(lane[alone].astype(np.int64), a_start, a_dur, np.ones(alone.size, np.int64),
                    a_dur, a_dur, a_start, first_id + alone, cats[alone],
                    np.full(alone.size, src, np.int8), at)]  # fmt: skip
    if alone.size < n:
        last = int(start.max()) if clip is None else max(int(start.max()), clip[0])
        ncol = (last - origin) // lo + 1
        size = (int(lane.max()) + 1) * ncol

        def cell(rows: slice | np.ndarray) -> np.ndarray:
            key = rel(rows)
            key //= lo
            key += np.multiply(lane[rows], ncol, dtype=np.int64)
            return key

        def key(p: slice) -> tuple[np.ndarray, np.ndarray]:
            """Cell per event of the slice, ``size`` (a bucket never read) for those alone."""
            d = dur(p)
            k = cell(p)
            k[d >= lo] = size
            return k, d

        count = np.zeros(size + 1, np.int64)
        work = np.zeros(size + 1, np.int64)
        best = np.full(size + 1, -1, np.int64)
        for p in parts:
            k, d = key(p)
            count += np.bincount(k, minlength=size + 1)
            work += exact_sums(k, d, size + 1)
            np.maximum.at(best, k, d)
        cand = np.concatenate(  # the longest of each cell
            [np.flatnonzero((d == best[k]) & (k < size)) + p.start
             for p in parts for k, d in (key(p),)]
        )  # fmt: skip
        cand_key = cell(cand)
        cand_start = rel(cand)
        first = np.full(size + 1, np.iinfo(np.int64).max)
        np.minimum.at(first, cand_key, cand_start)
        earliest = cand_start == first[cand_key]  # ... then the earliest, then the first
        cand, cand_key = cand[earliest], cand_key[earliest]
        lead = np.full(size + 1, np.iinfo(np.int64).max)
        np.minimum.at(lead, cand_key, cand)
        used = np.flatnonzero(count[:size])
        li = lead[used]
        items.append(
            Items(used // ncol, (used % ncol) * lo, np.full(used.size, -1, np.int64),
                   count[used], work[used], dur(li), rel(li), first_id + li, cats[li],
                   np.full(used.size, src, np.int8), li if ref is None else ref[li])
        )  # fmt: skip
    return concat(items)


#: Events per slice where a per-event temporary is built a slice at a time: ~2 MiB per array.
SLICE = 1 << 18


def window_dur(s: np.ndarray, e: np.ndarray, clip: tuple[int, int] | None) -> np.ndarray:
    """Durations of events, cut to the window ``clip`` (a negative one is no time) if given."""
    if clip is None:
        result: np.ndarray = e - s
        return result
    d: np.ndarray = np.minimum(e, clip[1])
    d -= np.maximum(s, clip[0])
    np.maximum(d, 0, out=d)
    return d


def concat(parts: list[Items]) -> Items:
    return Items(*(np.concatenate([getattr(p, f) for p in parts]) for f in _ITEM_FIELDS))


def _merge(items: Items, col: int, lanes: int) -> Items:
    """Items at resolution ``col``: events at least ``col`` long stay alone, the rest merge per
    (lane, column) into cells. Grouped by ``bincount`` and
    ``ufunc.at`` over the (lane, column) space, which is small: no sort of the events."""
    alone = items.alone_ns >= col
    kept = items.take(np.flatnonzero(alone))
    rest = np.flatnonzero(~alone)
    if rest.size == 0:
        return kept
    r = items.take(rest) if rest.size < items.lane.size else items
    ncol = int(r.start.max(initial=0)) // col + 1
    size = lanes * ncol
    key = r.lane * ncol + r.start // col
    count = np.bincount(key, weights=r.count, minlength=size).astype(np.int64)
    used = np.flatnonzero(count)
    work = np.zeros(size, np.int64)
    np.add.at(work, key, r.work)
    best = np.full(size, -1, np.int64)
    np.maximum.at(best, key, r.lead_ns)
    cand = np.flatnonzero(r.lead_ns == best[key])  # the longest of each cell, then the earliest
    first = np.full(size, np.iinfo(np.int64).max)
    np.minimum.at(first, key[cand], r.lead_start[cand])
    cand = cand[r.lead_start[cand] == first[key[cand]]]
    lead_id = np.full(size, np.iinfo(np.int64).max)
    np.minimum.at(lead_id, key[cand], r.lead_id[cand])
    row = np.full(size, -1, np.int64)  # the item holding each cell's lead
    at = cand[r.lead_id[cand] == lead_id[key[cand]]]
    row[key[at]] = at
    lead = row[used]
    cells = Items(used // ncol, (used % ncol) * col, np.full(used.size, -1, np.int64),
                   count[used], work[used], r.lead_ns[lead], r.lead_start[lead], r.lead_id[lead],
                   r.cat[lead], r.src[lead], r.ref[lead])  # fmt: skip
    return concat([kept, cells])


def resolution(items: Items, lo: int, lanes: int, max_blocks: int) -> tuple[int, Items]:
    """The finest column (``lo`` times a power of two) that keeps the blocks within
    ``max_blocks``, and the blocks at that column. ``items`` are already merged at ``lo``, and a
    column of ``lo * 2**k`` only merges whole cells of ``lo``: each step starts from the last.
    Once a column is wider than every event and start, each lane is one block: no coarser
    column has fewer, so the search stops there even above ``max_blocks`` (more lanes than that)."""
    col, blocks = lo, _merge(items, lo, lanes)
    end = int((items.start + np.maximum(items.alone_ns, 0)).max(initial=0))
    while blocks.lane.size > max_blocks and col <= end:
        col *= 2
        blocks = _merge(blocks, col, lanes)
    return col, blocks
