"""One representative iteration as drawable blocks: GPU streams, host threads and idle gaps.

The report's timeline must stay small whatever the trace holds (the grown export has millions of
launches), so this module decides what is drawn, not the template: the window is one iteration
(the median one, or the one asked for), cut into :data:`COLUMNS` columns; an event at least one
column wide is one block, shorter events of a lane are merged per column into one block that says
how many it holds and names the longest, and the coarseness doubles until at most
:data:`MAX_BLOCKS` blocks remain. Lanes are capped (:data:`MAX_GPU_LANES` streams with the most
work, :data:`MAX_HOST_LANES` host threads) and what was merged or left out is counted, so the report
can say so. Host-bound idle gaps (at least ``LAUNCH_GAP_NS``) on each GPU become blocks on that
GPU's idle lane, named by the host range that enclosed them (:mod:`tcreport.analysis.steps`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.analysis import _codes, steps
from tcreport.analysis.activity import IDLE, Activity, Cat, order_by

COLUMNS = 1600
MAX_BLOCKS = 5000
MAX_GPU_LANES = 16
MAX_HOST_LANES = 4
HOST = IDLE + 1  # block category of a host range / op


@dataclass(frozen=True)
class Lane:
    label: str
    kind: str  # "gpu" | "idle" | "host"


@dataclass(frozen=True)
class Block:
    lane: int
    start_ns: int  # from the window start
    dur_ns: int
    cat: int  # activity.Cat value, IDLE (host-bound gap) or HOST
    verdict: str  # "yes" | "no" | "unknown" for kernels, "" otherwise
    name: int  # index into IterationTimeline.names, -1: none
    rule: int  # index into names: the kernel's rule, a gap's cause kind; -1: none
    merged: int  # events in this block (1: exactly one)
    work_ns: int  # summed duration of its events (= dur_ns for one event)


@dataclass(frozen=True)
class IterationTimeline:
    iteration: int
    chosen: str  # "median" | "requested" | "whole run"
    start_ns: int
    span_ns: int
    lanes: tuple[Lane, ...]
    blocks: tuple[Block, ...]
    names: tuple[str, ...]
    events: int  # GPU events in the window
    merged_events: int  # events drawn inside a merged block
    dropped_lanes: int  # GPU streams / host threads beyond the caps, not drawn
    column_ns: int  # the merge resolution finally used


def choose(durations: dict[int, int], requested: int | None) -> tuple[int, str] | None:
    """The iteration to draw: the requested one if it exists, else the median by duration."""
    if not durations:
        return None
    if requested is not None and requested in durations:
        return requested, "requested"
    order = sorted(durations, key=lambda i: (durations[i], i))
    return order[(len(order) - 1) // 2], "median"


class _Names:
    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def add(self, values: list[str | None]) -> np.ndarray:
        out = np.full(len(values), -1, np.int64)
        for i, v in enumerate(values):  # distinct names of one window: small
            if v is not None:
                out[i] = self.index.setdefault(v, len(self.index))
        return out


def _blocks_of(ev: _Events, col_ns: int) -> list[Block]:
    """Blocks at resolution ``col_ns``; ``ev`` sorted by (lane, start), so the (lane, column) key
    of the merged events never decreases and blocks fall out of one pass with no further sort."""
    alone = ev.dur >= col_ns
    out = [
        Block(int(ev.lane[i]), int(ev.start[i]), int(ev.dur[i]), int(ev.cat[i]),
              str(ev.verdict[i]), int(ev.name[i]), int(ev.rule[i]), 1, int(ev.dur[i]))
        for i in np.flatnonzero(alone)
    ]  # fmt: skip
    small = np.flatnonzero(~alone)
    if small.size == 0:
        return out
    key = ev.lane[small] * (1 << 40) + ev.start[small] // col_ns
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    dur = ev.dur[small]
    longest = np.maximum.reduceat(dur, first)
    counts = np.diff(np.r_[first, small.size])
    is_max = dur == np.repeat(longest, counts)
    lead = small[np.minimum.reduceat(np.where(is_max, np.arange(small.size), small.size), first)]
    work = np.add.reduceat(dur, first)
    for i, n, w in zip(lead.tolist(), counts.tolist(), work.tolist(), strict=True):
        col = int(ev.start[i] // col_ns)  # one per block: at most MAX_BLOCKS
        out.append(
            Block(int(ev.lane[i]), col * col_ns, col_ns, int(ev.cat[i]), str(ev.verdict[i]),
                  int(ev.name[i]), int(ev.rule[i]), int(n), int(w))
        )  # fmt: skip
    return out


def _gpu_lanes(act: Activity, sel: np.ndarray) -> tuple[np.ndarray, list[Lane], int, list[int]]:
    """Lane per selected interval (-1: dropped), lane labels, dropped count, and per lane its
    device."""
    dev, stream = act.device[sel], act.stream[sel]
    key = _codes.combine(dev, stream)
    busy = np.bincount(key, weights=(act.end - act.start)[sel])
    first = _codes.first_rows(key)
    keep = np.argsort(-busy, kind="stable")[:MAX_GPU_LANES]
    keep = keep[np.lexsort((stream[first[keep]], dev[first[keep]]))]
    lane_of = np.full(busy.size, -1, np.int64)
    lanes: list[Lane] = []
    devs: list[int] = []
    for k in keep.tolist():  # at most MAX_GPU_LANES
        d, s = int(dev[first[k]]), int(stream[first[k]])
        if not devs or devs[-1] != d:
            lanes.append(Lane(f"GPU {d} idle (host-bound gaps)", "idle"))
            devs.append(d)
        lane_of[k] = len(lanes)
        lanes.append(Lane(f"GPU {d} · stream {s}", "gpu"))
        devs.append(d)
    return lane_of[key], lanes, int(busy.size - keep.size), devs


def build(
    act: Activity | None,
    kernels: pa.Table | None,
    ranges: pa.Table | None,
    ops: pa.Table | None,
    iteration: int,
    chosen: str,
    gaps: steps.HostGaps | None = None,
) -> IterationTimeline | None:
    """The drawable timeline of ``iteration`` (every interval counts when ``chosen`` is
    "whole run", when the breakdown numbered the whole run 0); ``gaps``: the breakdown's
    host-bound gaps, drawn on each GPU's idle lane."""
    if act is None:
        return None
    sel = (
        np.flatnonzero(act.iteration == iteration) if chosen != "whole run" else np.arange(len(act))
    )
    if sel.size == 0:
        return None
    t0, t1 = int(act.start[sel].min()), int(act.end[sel].max())
    span = max(1, t1 - t0)
    lane, lanes, dropped, devs = _gpu_lanes(act, sel)
    names = _Names()
    kname, krule, verdict = _kernel_labels(kernels, act.kernel_row[sel], names)
    hl = _host(ranges, ops, t0, t1, len(lanes), names)
    idle_lane = {devs[i]: i for i, lane_ in enumerate(lanes) if lane_.kind == "idle"}
    keep = lane >= 0
    gpu = _Events(lane[keep], act.start[sel][keep] - t0, (act.end - act.start)[sel][keep],
                  act.cat[sel][keep], verdict[keep], kname[keep], krule[keep])  # fmt: skip
    host_ev = _Events(hl.lane, hl.start, hl.dur, np.full(hl.lane.size, HOST, np.int8),
                      np.full(hl.lane.size, "", object), hl.name, np.full(hl.lane.size, -1, np.int64))  # fmt: skip
    gap_iter = 0 if chosen == "whole run" else iteration
    ev = _cat([gpu, _gaps(gaps, gap_iter, idle_lane, t0, names), host_ev])
    order = order_by(ev.lane, ev.start)
    ev = _Events(*(getattr(ev, f)[order] for f in _Events.__dataclass_fields__))
    col = _resolution(ev, span)
    blocks = _blocks_of(ev, col)
    return IterationTimeline(
        iteration=iteration,
        chosen=chosen,
        start_ns=t0,
        span_ns=span,
        lanes=(*lanes, *hl.lanes),
        blocks=tuple(sorted(blocks, key=lambda b: (b.lane, b.start_ns))),
        names=tuple(names.index),
        events=int(gpu.lane.size),
        merged_events=sum(b.merged for b in blocks if b.merged > 1 and b.cat <= Cat.MEMORY),
        dropped_lanes=dropped + hl.dropped,
        column_ns=col,
    )


def _kernel_labels(
    kernels: pa.Table | None, rows: np.ndarray, names: _Names
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = rows.size
    kname, krule = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    verdict = np.full(n, "", dtype=object)
    ok = rows >= 0
    if kernels is None or not ok.any():
        return kname, krule, verdict
    for col, out in (("name", kname), ("tc_rule", krule)):
        out[ok] = _labels(_codes.codes(kernels.column(col)), names, rows[ok])
    v = kernels.column("uses_tc")
    tc = np.asarray(pc.fill_null(v, False).to_numpy(zero_copy_only=False), bool)[rows[ok]]
    known = np.asarray(pc.is_valid(v).to_numpy(zero_copy_only=False), bool)[rows[ok]]
    verdict[ok] = np.where(known, np.where(tc, "yes", "no"), "unknown")
    return kname, krule, verdict


@dataclass(frozen=True)
class _Events:
    """Drawable events of one kind, as arrays (times from the window start)."""

    lane: np.ndarray
    start: np.ndarray
    dur: np.ndarray
    cat: np.ndarray
    verdict: np.ndarray
    name: np.ndarray
    rule: np.ndarray


def _cat(parts: list[_Events]) -> _Events:
    return _Events(
        *(np.concatenate([getattr(p, f) for p in parts]) for f in _Events.__dataclass_fields__)
    )


def _gaps(
    gaps: steps.HostGaps | None, iteration: int, idle_lane: dict[int, int], t0: int,
    names: _Names,
) -> _Events:  # fmt: skip
    """The breakdown's host-bound gaps of this iteration on each drawn GPU, with their causes."""
    empty = np.empty(0, np.int64)
    if gaps is None or not idle_lane:
        return _Events(
            empty, empty, empty, empty.astype(np.int8), empty.astype(object), empty, empty
        )
    devs = np.array(sorted(idle_lane), np.int64)
    m = (gaps.iteration == iteration) & np.isin(gaps.device, devs)
    s, n, code = gaps.start[m], gaps.length[m], gaps.code[m]
    lane = np.array([idle_lane[int(d)] for d in devs], np.int64)[
        np.searchsorted(devs, gaps.device[m])
    ]
    used = np.unique(code)  # distinct causes: few
    labels = [gaps.names[c] if c >= 0 else None for c in used.tolist()]
    at = np.searchsorted(used, code)
    idx = names.add(labels)[at]
    kinds = names.add([steps.cause_kind(x) for x in labels])[at]
    return _Events(lane, s - t0, n, np.full(s.size, IDLE, np.int8),
                   np.full(s.size, "", object), idx, kinds)  # fmt: skip


def _distinct_blocks(ev: _Events, col: int) -> int:
    """How many blocks :func:`_blocks_of` would make at resolution ``col`` (``ev`` sorted by
    (lane, start)): alone events plus distinct (lane, column) of the rest. O(n), no sort."""
    small = ev.dur < col
    key = ev.lane[small] * (1 << 40) + ev.start[small] // col
    merged = 1 + int(np.count_nonzero(key[1:] != key[:-1])) if key.size else 0
    return int(small.size - key.size) + merged


def _resolution(ev: _Events, span: int) -> int:
    """The finest column (at least span / COLUMNS) that keeps the blocks within MAX_BLOCKS."""
    lo = max(1, span // COLUMNS)
    if _distinct_blocks(ev, lo) <= MAX_BLOCKS:
        return lo
    hi = lo
    while hi < span and _distinct_blocks(ev, hi) > MAX_BLOCKS:
        lo, hi = hi, hi * 4
    while hi > lo * 1.2:  # a few O(n) counts
        mid = int((lo * hi) ** 0.5)
        lo, hi = (lo, mid) if _distinct_blocks(ev, mid) <= MAX_BLOCKS else (mid, hi)
    return hi


@dataclass(frozen=True)
class _HostLanes:
    lanes: list[Lane]
    lane: np.ndarray
    start: np.ndarray
    dur: np.ndarray
    name: np.ndarray
    dropped: int


def _host(
    ranges: pa.Table | None, ops: pa.Table | None, t0: int, t1: int, first_lane: int,
    names: _Names,
) -> _HostLanes:  # fmt: skip
    """Host lanes: the threads with the most range/op time in the window."""
    parts = []
    for table, is_range in ((ranges, True), (ops, False)):
        if table is None or table.num_rows == 0:
            continue
        t = table.select(["name", "start_ns", "end_ns" if is_range else "cpu_ns", "thread_id"])
        if t.column("start_ns").null_count:
            t = t.filter(pc.is_valid(t.column("start_ns")))
        s = t.column("start_ns").to_numpy().astype(np.int64)
        e = (
            t.column("end_ns").to_numpy().astype(np.int64)
            if is_range
            else s + np.asarray(pc.fill_null(t.column("cpu_ns"), 0).to_numpy(), np.int64)
        )
        inside = (e > t0) & (s < t1)
        if not inside.any():
            continue
        t = t if inside.all() else t.filter(pa.array(inside))
        tid = np.asarray(pc.fill_null(t.column("thread_id"), -1).to_numpy(), np.int64)
        parts.append((s[inside], e[inside], tid, _labels(_codes.codes(t.column("name")), names)))
    empty = np.empty(0, np.int64)
    if not parts:
        return _HostLanes([], empty, empty, empty, empty, 0)
    s = np.maximum(np.concatenate([p[0] for p in parts]), t0) - t0
    e = np.minimum(np.concatenate([p[1] for p in parts]), t1) - t0
    threads, inv = np.unique(np.concatenate([p[2] for p in parts]), return_inverse=True)
    cover = np.bincount(inv, weights=e - s)
    keep = np.sort(np.argsort(-cover, kind="stable")[:MAX_HOST_LANES])
    lane_of = np.full(threads.size, -1, np.int64)
    lane_of[keep] = first_lane + np.arange(keep.size)
    lane = lane_of[inv]
    ok = lane >= 0
    name = np.concatenate([p[3] for p in parts])
    return _HostLanes(
        [Lane(f"host thread {int(threads[k])}", "host") for k in keep.tolist()],
        lane[ok], s[ok], (e - s)[ok], name[ok], int(threads.size - keep.size),
    )  # fmt: skip


def _labels(c: _codes.Codes, names: _Names, rows: np.ndarray | None = None) -> np.ndarray:
    """Per row (all, or ``rows``), the index of its value in ``names`` (-1: null), adding each
    distinct value once."""
    codes = c.codes if rows is None else c.codes[rows]
    used = np.unique(codes[codes >= 0])
    remap = np.full(len(c.values) + 1, -1, np.int64)
    remap[used] = names.add(c.take(used))
    out: np.ndarray = remap[codes]
    return out
