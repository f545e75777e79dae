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
from tcreport.analysis.activity import IDLE, Activity, sweep
from tcreport.analysis.timeline import LAUNCH_GAP_NS

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


def _merge(
    lane: np.ndarray, start: np.ndarray, dur: np.ndarray, col_ns: int
) -> tuple[np.ndarray, np.ndarray]:
    """Row indices drawn alone, and per merged block (lane, column) the rows' block key."""
    alone = dur >= col_ns
    key = np.where(alone, -1, lane * (COLUMNS * 64) + start // col_ns)
    return np.flatnonzero(alone), key


def _blocks_of(
    lane: np.ndarray, start: np.ndarray, dur: np.ndarray, cat: np.ndarray, verdict: np.ndarray,
    name: np.ndarray, rule: np.ndarray, col_ns: int,
) -> list[Block]:  # fmt: skip
    alone, key = _merge(lane, start, dur, col_ns)
    out = [
        Block(int(lane[i]), int(start[i]), int(dur[i]), int(cat[i]), str(verdict[i]),
              int(name[i]), int(rule[i]), 1, int(dur[i]))
        for i in alone
    ]  # fmt: skip
    small = np.flatnonzero(key >= 0)
    if small.size:
        k = key[small]
        order = np.lexsort((-dur[small], k))  # per block, longest first
        rows, first = small[order], np.r_[True, k[order][1:] != k[order][:-1]]
        _, inv, counts = np.unique(k, return_inverse=True, return_counts=True)
        work = np.bincount(inv, weights=dur[small]).astype(np.int64)
        lead = rows[first]  # the longest event of each block names it (blocks in key order)
        for i, n, w in zip(lead.tolist(), counts.tolist(), work.tolist(), strict=True):
            col = int(start[i] // col_ns)  # one per block
            out.append(
                Block(int(lane[i]), col * col_ns, col_ns, int(cat[i]), str(verdict[i]),
                      int(name[i]), int(rule[i]), int(n), int(w))
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
) -> IterationTimeline | None:
    """The drawable timeline of ``iteration`` (every interval counts when ``chosen`` is
    "whole run")."""
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
    host = _host(ranges, ops, t0, t1, len(lanes), names)
    col = max(1, span // COLUMNS)
    idle_lane = {devs[i]: i for i, lane_ in enumerate(lanes) if lane_.kind == "idle"}
    gaps = _gaps(act, sel, ranges, ops, idle_lane, t0, names)
    keep = lane >= 0
    while True:
        blocks = _blocks_of(
            lane[keep], act.start[sel][keep] - t0, (act.end - act.start)[sel][keep],
            act.cat[sel][keep], verdict[keep], kname[keep], krule[keep], col,
        )  # fmt: skip
        hb = host.blocks(col)
        if len(blocks) + len(gaps) + len(hb) <= MAX_BLOCKS or col >= span:
            break
        col *= 2
    all_lanes = [*lanes, *host.lanes]
    return IterationTimeline(
        iteration=iteration,
        chosen=chosen,
        start_ns=t0,
        span_ns=span,
        lanes=tuple(all_lanes),
        blocks=tuple(sorted([*gaps, *blocks, *hb], key=lambda b: (b.lane, b.start_ns))),
        names=tuple(names.index),
        events=int(sel.size),
        merged_events=sum(b.merged for b in blocks if b.merged > 1),
        dropped_lanes=dropped + host.dropped,
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


def _gaps(
    act: Activity, sel: np.ndarray, ranges: pa.Table | None, ops: pa.Table | None,
    idle_lane: dict[int, int], t0: int, names: _Names,
) -> list[Block]:  # fmt: skip
    """Host-bound gaps of each drawn GPU, named by the host range around them."""
    dev = act.device[sel]
    seg = sweep(dev, act.start[sel], act.end[sel], act.cat[sel])
    gap = (seg.state == 0) & (seg.length >= LAUNCH_GAP_NS)
    host = steps.host_intervals(ranges, ops)
    out: list[Block] = []
    for d, lane in idle_lane.items():  # one per drawn GPU
        g = gap & (seg.group == d)
        if not g.any():
            continue
        s, n = seg.start[g], seg.length[g]
        code = (
            steps.enclosing(host, np.ones(host.start.size, bool), s + n // 2)
            if host is not None
            else np.full(s.size, -1, np.int64)
        )
        label = [host.names[c] if host is not None and c >= 0 else None for c in code.tolist()]
        kinds = names.add([steps.cause_kind(x) for x in label])
        idx = names.add(label)
        out.extend(
            Block(lane, int(a - t0), int(b), IDLE, "", int(i), int(k), 1, int(b))
            for a, b, i, k in zip(s.tolist(), n.tolist(), idx.tolist(), kinds.tolist(), strict=True)
        )  # gaps >= 100 µs in one iteration: few
    return out


@dataclass(frozen=True)
class _HostLanes:
    lanes: list[Lane]
    lane: np.ndarray
    start: np.ndarray
    dur: np.ndarray
    name: np.ndarray
    dropped: int

    def blocks(self, col: int) -> list[Block]:
        n = self.lane.size
        return _blocks_of(
            self.lane, self.start, self.dur, np.full(n, HOST, np.int8), np.full(n, "", object),
            self.name, np.full(n, -1, np.int64), col,
        )  # fmt: skip


def _host(
    ranges: pa.Table | None, ops: pa.Table | None, t0: int, t1: int, first_lane: int,
    names: _Names,
) -> _HostLanes:  # fmt: skip
    """Host lanes: the threads with the most range/op time in the window."""
    parts = []
    for table, is_range in ((ranges, True), (ops, False)):
        if table is None or table.num_rows == 0:
            continue
        t = table.filter(pc.is_valid(table.column("start_ns")))
        s = t.column("start_ns").to_numpy().astype(np.int64)
        e = (
            t.column("end_ns").to_numpy().astype(np.int64)
            if is_range
            else s + np.asarray(pc.fill_null(t.column("cpu_ns"), 0).to_numpy(), np.int64)
        )
        inside = (e > t0) & (s < t1)
        if not inside.any():
            continue
        t = t.filter(pa.array(inside))
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
