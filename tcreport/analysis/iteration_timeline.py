"""One representative iteration as drawable blocks: GPU streams, host threads and idle gaps.

The report's timeline must stay small whatever the trace holds (the grown export has millions of
launches), so this module decides what is drawn, not the template: the window is one iteration
(the median one, or the one asked for), cut into :data:`COLUMNS` columns; an event at least one
column wide is one block, shorter events of a lane are merged per column into one block that says
how many it holds and names the longest, and the column doubles until at most :data:`MAX_BLOCKS`
blocks remain (:mod:`tcreport.analysis.timeline_blocks`). A window can hold every launch of a run
(an export with no iterations), so the events are first folded into one-column cells with
``bincount``-style passes, a slice at a time (no sort, no per-event strings); only the few
thousand blocks drawn are ever named. Lanes are capped (:data:`MAX_GPU_LANES` streams with the most
work, :data:`MAX_HOST_LANES` host threads) and what was merged or left out is counted, so the report
can say so. Host-bound idle gaps (at least ``LAUNCH_GAP_NS``) on each GPU become blocks on that
GPU's idle lane, named by the host range that enclosed them (:mod:`tcreport.analysis.steps`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from tcreport._arrays import exact_sums, int64_view, sum_slice
from tcreport.analysis import _codes, steps
from tcreport.analysis.activity import IDLE, Activity, Cat
from tcreport.analysis.timeline_blocks import (
    SLICE,
    Items,
    concat,
    premerge,
    resolution,
    window_dur,
)

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


def _id(value: int) -> str:
    """A device or stream id as the step chart writes it: -1 is an unknown one, "?"."""
    return "?" if value == -1 else str(value)


def _pick(a: np.ndarray, sel: np.ndarray | None) -> np.ndarray:
    """The selected rows of ``a``; ``None`` selects every row (and copies nothing)."""
    return a if sel is None else a[sel]


def _gpu_lanes(
    act: Activity, sel: np.ndarray | None
) -> tuple[np.ndarray, list[Lane], int, list[int]]:
    """Lane per selected interval (-1: dropped), lane labels, dropped count, and per lane its
    device. ``sel``: the selected rows, ``None`` for all."""
    dev, stream = _pick(act.device, sel), _pick(act.stream, sel)
    key = _codes.combine(dev, stream)
    first = _codes.first_rows(key)
    busy = np.zeros(first.size, np.int64)  # time per (device, stream), exactly
    step = sum_slice(key.size, first.size)  # a slice at a time: no per-launch duration array
    for a in range(0, key.size, step):
        rows = slice(a, a + step) if sel is None else sel[a : a + step]
        busy += exact_sums(key[a : a + step], act.end[rows] - act.start[rows], first.size)
    keep = np.argsort(-busy, kind="stable")[:MAX_GPU_LANES]
    keep = keep[np.lexsort((stream[first[keep]], dev[first[keep]]))]
    lane_of = np.full(busy.size, -1, np.int16)  # lanes are capped: per launch, 2 bytes
    lanes: list[Lane] = []
    devs: list[int] = []
    for k in keep.tolist():  # at most MAX_GPU_LANES
        d, s = int(dev[first[k]]), int(stream[first[k]])
        if not devs or devs[-1] != d:
            lanes.append(Lane(f"GPU {_id(d)} idle (host-bound gaps)", "idle"))
            devs.append(d)
        lane_of[k] = len(lanes)
        lanes.append(Lane(f"GPU {_id(d)} · stream {_id(s)}", "gpu"))
        devs.append(d)
    return lane_of[key], lanes, int(busy.size - keep.size), devs


#: Where an event comes from, so that only the events that lead a block are ever named.
_GPU, _GAP, _RANGE, _OP = 0, 1, 2, 3


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
    whole = chosen == "whole run"
    # the intervals of the window; None: all of them (an export split into one iteration, or
    # none), and then no index array or copy of the per-launch arrays is made for it
    sel: np.ndarray | None = None
    if not whole:
        inside = act.iteration == iteration
        sel = None if inside.all() else np.flatnonzero(inside)
        del inside
    if (len(act) if sel is None else sel.size) == 0:
        return None
    t0, t1 = int(_pick(act.start, sel).min()), int(_pick(act.end, sel).max())
    span = max(1, t1 - t0)
    lo = max(1, span // COLUMNS)
    lane, lanes, dropped, devs = _gpu_lanes(act, sel)
    idle_lane = {devs[i]: i for i, lane_ in enumerate(lanes) if lane_.kind == "idle"}
    kept = lane >= 0
    n_gpu = int(np.count_nonzero(kept))
    if sel is None and n_gpu == len(act):  # every launch of the run: no copies of the activity
        parts = [premerge(lane, act.start, act.end, t0, act.cat, _GPU, None, 0, lo)]
    else:
        rows = np.flatnonzero(kept) if sel is None else sel[kept]
        parts = [premerge(lane[kept], act.start[rows], act.end[rows], t0, act.cat[rows], _GPU,
                           rows, 0, lo)]  # fmt: skip
        del rows
    # before the host side: the GPU's per-launch arrays are gone by then
    del lane, kept, sel
    hl = _host(ranges, ops, t0, t1, len(lanes))
    nlanes = len(lanes) + len(hl.lanes)
    next_id = len(act)
    for src, s, length, ln, ref in (*hl.parts, _gaps(gaps, 0 if whole else iteration, idle_lane)):
        cat = IDLE if src == _GAP else HOST
        if ln.size:  # host ranges and ops are cut to the window, a slice at a time
            window = None if src == _GAP else (t0, t1)
            parts.append(premerge(ln, s, length, t0, cat, src, ref, next_id, lo, window, True))
        next_id += ln.size
    col, blocks = resolution(concat(parts), lo, nlanes, MAX_BLOCKS)
    order = np.lexsort((blocks.start, blocks.lane))
    blocks = blocks.take(order)
    labels = _Labels(act, kernels, ranges, ops, gaps)
    drawn = [labels.block(blocks, i, col) for i in range(blocks.lane.size)]  # <= MAX_BLOCKS
    gpu_cells = (blocks.count > 1) & (blocks.cat <= Cat.MEMORY)
    return IterationTimeline(
        iteration=iteration,
        chosen=chosen,
        start_ns=t0,
        span_ns=span,
        lanes=(*lanes, *hl.lanes),
        blocks=tuple(drawn),
        names=tuple(labels.names.index),
        events=n_gpu,
        merged_events=int(blocks.count[gpu_cells].sum()),
        dropped_lanes=dropped + hl.dropped,
        column_ns=col,
    )


class _Labels:
    """Names, rules and verdicts of the blocks' leads, resolved one block at a time."""

    def __init__(
        self, act: Activity, kernels: pa.Table | None, ranges: pa.Table | None,
        ops: pa.Table | None, gaps: steps.HostGaps | None,
    ) -> None:  # fmt: skip
        self.names = _Names()
        self.act, self.kernels, self.gaps = act, kernels, gaps
        self.tables = {_RANGE: ranges, _OP: ops}

    def _name(self, v: object) -> int:
        return int(self.names.add([None if v is None else str(v)])[0])

    def block(self, b: Items, i: int, col: int) -> Block:
        src, ref = int(b.src[i]), int(b.ref[i])
        name = rule = -1
        verdict = ""
        if src == _GPU:
            row = int(self.act.kernel_row[ref])
            if row >= 0 and self.kernels is not None:
                k = self.kernels
                name = self._name(k.column("name")[row].as_py())
                rule = self._name(k.column("tc_rule")[row].as_py())
                uses = k.column("uses_tc")[row].as_py()
                verdict = "unknown" if uses is None else "yes" if uses else "no"
        elif src == _GAP and self.gaps is not None:
            code = int(self.gaps.code[ref])
            cause = self.gaps.names[code] if code >= 0 else None
            name, rule = self._name(cause), self._name(steps.cause_kind(cause))
        elif (table := self.tables.get(src)) is not None:
            name = self._name(table.column("name")[ref].as_py())
        n = int(b.count[i])
        merged = int(b.alone_ns[i]) < 0
        return Block(
            int(b.lane[i]), int(b.start[i]), col if merged else int(b.alone_ns[i]), int(b.cat[i]),
            verdict, name, rule, n, int(b.work[i]),
        )  # fmt: skip


_Raw = tuple[
    int, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None
]  # src, start (absolute ns), length, lane, ref


def _gaps(gaps: steps.HostGaps | None, iteration: int, idle_lane: dict[int, int]) -> _Raw:
    """The breakdown's host-bound gaps of this iteration on each drawn GPU."""
    empty = np.empty(0, np.int64)
    if gaps is None or not idle_lane:
        return _GAP, empty, empty, empty, empty
    devs = np.array(sorted(idle_lane), np.int64)
    m = np.flatnonzero((gaps.iteration == iteration) & np.isin(gaps.device, devs))
    lane = np.array([idle_lane[int(d)] for d in devs], np.int64)[
        np.searchsorted(devs, gaps.device[m])
    ]
    return _GAP, gaps.start[m], gaps.length[m], lane, m


def _thread_codes(col: pa.ChunkedArray, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Per row (``rows``; None: all), a code into the returned thread ids; a null thread is
    thread -1. Coded without filling the nulls first, which would copy the whole int64 column:
    a null row gets a code of its own, whose value may repeat a real -1 (the caller adds up
    per thread id, so a repeated value is harmless)."""
    tid = _codes.codes(col)
    code = tid.codes if rows is None else tid.codes[rows]
    values = np.asarray(tid.values.to_numpy(zero_copy_only=False), np.int64)
    if (code < 0).any():
        code = np.where(code < 0, values.size, code)
        values = np.append(values, -1)
    return code, values


@dataclass(frozen=True)
class _HostLanes:
    lanes: list[Lane]
    parts: list[_Raw]  # ranges, ops: events on the drawn lanes (overhanging the window)
    dropped: int


def _host(
    ranges: pa.Table | None, ops: pa.Table | None, t0: int, t1: int, first_lane: int
) -> _HostLanes:
    """Host lanes: the threads with the most range/op time in the window. Threads are coded per
    table by Arrow (a long run has millions of ops on a handful of threads)."""
    found = []
    for table, src in ((ranges, _RANGE), (ops, _OP)):
        if table is None or table.num_rows == 0:
            continue
        t = table.select(["start_ns", "end_ns" if src == _RANGE else "cpu_ns", "thread_id"])
        # starts and lengths (an op's CPU time; a range's end - start, so that start + length
        # is its end again): views of Arrow's buffers where a column has no null, and the ends
        # are only ever made a slice at a time
        s = int64_view(t.column("start_ns"), t1)
        length = (
            int64_view(t.column("end_ns"), t0) - s
            if src == _RANGE
            else int64_view(t.column("cpu_ns"), 0)
        )
        slices = [slice(a, a + SLICE) for a in range(0, s.size, SLICE)]
        inside = np.concatenate(  # a null start is never inside
            [(s[p] + length[p] > t0) & (s[p] < t1) for p in slices]
        )
        rows = None if inside.all() else np.flatnonzero(inside)
        if rows is not None:
            if rows.size == 0:
                continue
            s, length = s[rows], length[rows]
            slices = [slice(a, a + SLICE) for a in range(0, s.size, SLICE)]
        code, values = _thread_codes(t.column("thread_id"), rows)
        cover = np.zeros(values.size, np.int64)  # time in the window per thread
        for p in slices:  # cut to the window a slice at a time
            ends = s[p] + length[p]
            cover += exact_sums(code[p], window_dur(s[p], ends, (t0, t1)), values.size)
        found.append((src, rows, s, length, code, values, cover))
    if not found:
        return _HostLanes([], [], 0)
    threads = np.unique(np.concatenate([f[5] for f in found]))  # distinct threads: few
    total = np.zeros(threads.size)
    for f in found:
        np.add.at(total, np.searchsorted(threads, f[5]), f[6])
    top = np.lexsort((threads, -total))[:MAX_HOST_LANES]
    top = np.sort(top)  # drawn in thread-id order
    lane_of = np.full(threads.size, -1, np.int16)
    lane_of[top] = first_lane + np.arange(top.size)
    parts: list[_Raw] = []
    for src, rows, start, length, code, values, _ in found:
        lane = lane_of[np.searchsorted(threads, values)][code]
        ok = lane >= 0
        if ok.all():
            parts.append((src, start, length, lane, rows))
        else:
            at = np.flatnonzero(ok)
            parts.append((src, start[at], length[at], lane[at], at if rows is None else rows[at]))
    return _HostLanes(
        [Lane(f"host thread {int(threads[k])}", "host") for k in top.tolist()], parts,
        int(threads.size - top.size),
    )  # fmt: skip
