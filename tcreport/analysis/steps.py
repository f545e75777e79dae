"""Where the step time goes: per iteration and per GPU, what the GPU was doing, and why it waited.

A Tensor Core share answers "were the matrix units used"; a user's next question is how much of
the step was matrix work at all. Each (iteration, GPU) span, from the first GPU activity of the
iteration on that GPU to its last, is cut into parts that sum to the span exactly:

* Tensor Core compute, other compute (verdict no), compute of unknown verdict,
* communication (collectives, by kernel name), memory copies/sets,
* idle, split into launch-bound (gaps shorter than :data:`timeline.LAUNCH_GAP_NS`: the CPU issuing
  the next of many small kernels) and host-bound (longer gaps: nothing was queued because the host
  was busy or waiting).

Overlapped time is counted once, by priority (compute before communication before memory), so a
collective hidden under a GEMM costs nothing here; :mod:`tcreport.analysis.overlap` reports how
much was hidden. Host-bound gaps are named by the host range or op that encloses their midpoint on
the launching process (a data loader, ``aten::item`` / a synchronize, an NVTX range) when the
tables carry one; otherwise the cause is "no host range recorded", never a guess.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport._arrays import exact_sums
from tcreport.analysis import _codes, sweep
from tcreport.analysis.activity import IDLE, Activity, Cat
from tcreport.analysis.timeline import DATA_LOADER, LAUNCH_GAP_NS

#: Host ranges and ops that wait for the GPU: explicit synchronisation, or reading a GPU value on
#: the host (``.item()`` is ``aten::item`` / ``aten::_local_scalar_dense``).
SYNC = re.compile(
    r"synchroni[sz]e|aten::item|_local_scalar_dense|\.item\(|cudaMemcpy(?!Async)|aten::nonzero",
    re.IGNORECASE,
)
#: Ranges that mark a whole iteration say nothing about a gap inside it.
ITERATION_MARK = r"^ProfilerStep#|^Iteration \d|^train_step$"
#: Causes kept per (iteration, GPU), longest first.
TOP_CAUSES = 3


@dataclass(frozen=True)
class IdleCause:
    """Host-bound idle time of one (iteration, GPU) under one host range name."""

    kind: str  # "data loading" | "synchronisation" | "host range" | "no host range recorded"
    name: str | None  # the range/op name; None when nothing on the host covered the gap
    idle_ns: int


@dataclass(frozen=True)
class StepRow:
    """One iteration on one GPU; the seven ``*_ns`` parts sum to ``span_ns``."""

    iteration: int
    device_id: int | None
    start_ns: int
    span_ns: int
    tc_compute_ns: int
    other_compute_ns: int
    unknown_compute_ns: int
    communication_ns: int  # collective time not hidden under compute
    memory_ns: int  # copies/sets not hidden under compute or communication
    idle_launch_ns: int
    idle_host_ns: int
    communication_total_ns: int  # union of collective intervals, hidden or not
    communication_overlap_ns: int  # of which compute ran at the same time on this GPU
    host_causes: tuple[IdleCause, ...]  # longest first, at most TOP_CAUSES

    @property
    def parts(self) -> tuple[int, ...]:
        return (
            self.tc_compute_ns,
            self.other_compute_ns,
            self.unknown_compute_ns,
            self.communication_ns,
            self.memory_ns,
            self.idle_launch_ns,
            self.idle_host_ns,
        )


#: Up to this many possible (iteration, device) keys, the group of each interval is found
#: through a lookup table (bytes per key: 5) instead of by sorting.
_LUT_MAX = 1 << 22
#: Rows per slice where per-row temporaries are built a slice at a time.
_SLICE = 1 << 20


def _group_keys(act: Activity) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Row mask of intervals inside an iteration, their group code, and per group its iteration
    and device (-1: unknown).

    The device is packed as its offset from the lowest one, in int64: any int32 id (a hostile
    ``2**31 - 1``, a negative one) keeps its own group, and the product cannot wrap. When the
    packed keys are few (iterations times GPUs, as in every real trace) a lookup table maps
    them to groups a slice at a time, so no per-interval temporary outlives its slice."""
    inside = act.iteration >= 0
    everything = bool(inside.all())
    it = act.iteration if everything else act.iteration[inside]
    dev = act.device if everything else act.device[inside]
    low = int(dev.min(initial=0))
    width = int(dev.max(initial=0)) - low + 1  # <= 2**32, iterations < 2**31: fits in int64

    def pack(part: slice) -> np.ndarray:
        packed = it[part].astype(np.int64)
        packed *= width
        packed += dev[part]  # in place, in int64
        packed -= low
        return packed

    top = (int(it.max(initial=0)) + 1) * width  # every packed key is below
    if top <= _LUT_MAX:
        parts = [slice(a, a + _SLICE) for a in range(0, it.size, _SLICE)]
        seen = np.zeros(top, bool)
        for part in parts:
            seen[pack(part)] = True
        uniq = np.flatnonzero(seen)  # sorted, as np.unique's
        lut = np.zeros(top, np.int32)
        lut[uniq] = np.arange(uniq.size, dtype=np.int32)
        group = np.empty(it.size, np.int32)
        for part in parts:
            group[part] = lut[pack(part)]
    else:
        packed = pack(slice(None))
        uniq = np.unique(packed)  # few groups: hashed, then each row found by binary search
        group = np.searchsorted(uniq, packed).astype(np.int32)
    g_iter, g_dev = np.divmod(uniq, width)
    return inside, group, g_iter, g_dev + low


@dataclass(frozen=True)
class HostIntervals:
    """Host ranges and ops sorted by start."""

    start: np.ndarray
    end: np.ndarray
    process: np.ndarray
    code: np.ndarray  # into names
    names: list[str | None]
    single_process: bool  # every range and op (those left out too) on one process (or none)


def _process_ids(tables: list[pa.Table]) -> set[int]:
    """Distinct process ids of the tables (-1 for a null), from their min and max only: all that
    matters is whether there is more than one."""
    seen: set[int] = set()
    for t in tables:
        col = t.column("process_id")
        if col.null_count:
            seen.add(-1)
        if col.null_count < len(col):
            mm = pc.min_max(col)
            seen.update(int(v.as_py()) for v in (mm["min"], mm["max"]))
    return seen


def _containing(s: np.ndarray, e: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Per interval [s, e): does it contain any of the sorted ``points``?"""
    i = np.searchsorted(points, s, side="left")  # the first point at or after the start
    hit = i < points.size
    hit[hit] = points[i[hit]] < e[hit]
    return hit


def _bounds(t: pa.Table, end_of: str) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of each row of a ranges (``end``) or ops (``cpu``) table."""
    s = np.asarray(t.column("start_ns").to_numpy(), np.int64)
    if end_of == "end":
        return s, np.asarray(pc.fill_null(t.column("end_ns"), 0).to_numpy(), np.int64)
    return s, s + np.asarray(pc.fill_null(t.column("cpu_ns"), 0).to_numpy(), np.int64)


def host_intervals(
    ranges: pa.Table | None, ops: pa.Table | None, points: np.ndarray | None = None
) -> HostIntervals | None:
    """Timed host ranges and ops (iteration markers left out), names in one code space.

    ``points`` (sorted): keep only the intervals containing one of them, before anything else is
    done with the rows: the gaps to explain are few, the ops of a long run are millions.
    """
    starts, ends, procs, codes = [], [], [], []
    names: list[str | None] = []
    end_col = {"end": "end_ns", "cpu": "cpu_ns"}
    present = [t for t in (ranges, ops) if t is not None and t.num_rows]
    single = len(_process_ids(present)) <= 1
    for table, end_of in ((ranges, "end"), (ops, "cpu")):
        if table is None or table.num_rows == 0:
            continue
        t = table.select(["name", "start_ns", end_col[end_of], "process_id"])
        if t.column("start_ns").null_count:
            t = t.filter(pc.is_valid(t.column("start_ns")))
        if (
            points is not None and t.num_rows
        ):  # a slice at a time: the ops of a long run are millions
            hit = [_containing(*_bounds(t.slice(a, _SLICE), end_of), points)
                   for a in range(0, t.num_rows, _SLICE)]  # fmt: skip
            t = t.filter(pa.array(np.concatenate(hit)))
        s, e = _bounds(t, end_of)
        marks = _codes.matches(t.column("name"), ITERATION_MARK)
        if pc.any(marks).as_py():
            keep = np.asarray(pc.invert(marks).to_numpy(zero_copy_only=False), bool)
            t, s, e = t.filter(pa.array(keep)), s[keep], e[keep]
        if t.num_rows == 0:
            continue
        c = _codes.codes(t.column("name"))
        starts.append(s)
        ends.append(e)
        procs.append(np.asarray(pc.fill_null(t.column("process_id"), -1).to_numpy(), np.int64))
        codes.append(np.where(c.codes >= 0, c.codes + len(names), -1))
        names.extend(c.values.to_pylist())
    if not starts:
        return None
    start = np.concatenate(starts)
    order = np.argsort(start, kind="stable")  # once: every lookup below relies on start order
    return HostIntervals(
        start[order], np.concatenate(ends)[order], np.concatenate(procs)[order],
        np.concatenate(codes)[order], names, single,
    )  # fmt: skip


def enclosing(host: HostIntervals, keep: np.ndarray | None, points: np.ndarray) -> np.ndarray:
    """Per point, the name code of a kept (``None``: any) host interval containing it (-1: none).

    The latest-starting interval before the point, when it still runs, is the innermost; else the
    one reaching furthest among those started before (an outer range), when it reaches the point.
    """
    if keep is None:
        s, e, c = host.start, host.end, host.code
    else:
        s, e, c = host.start[keep], host.end[keep], host.code[keep]
    out = np.full(points.size, -1, np.int64)
    if s.size == 0 or points.size == 0:
        return out
    reach = np.maximum.accumulate(e)
    idx = np.arange(s.size)
    reach_at = np.maximum.accumulate(np.where(e == reach, idx, 0))
    i = np.searchsorted(s, points, side="right") - 1
    ok = i >= 0
    j = np.maximum(i, 0)
    inner = ok & (e[j] > points)
    outer = ok & ~inner & (reach[j] > points)
    out[inner] = c[j[inner]]
    out[outer] = c[reach_at[j[outer]]]
    return out


def cause_kind(name: str | None) -> str:
    if name is None:
        return "no host range recorded"
    if DATA_LOADER.search(name):
        return "data loading"
    if SYNC.search(name):
        return "synchronisation"
    return "host range"


def _launching_processes(gap_dev: np.ndarray, act: Activity) -> dict[int, tuple[int, ...]]:
    """Per GPU with a gap, the processes (ids >= 0) that launched work on it, from the distinct
    (device, process) pairs: one pass over the activity, whatever the number of GPUs."""
    if not len(act):
        return {}
    devs, procs = [], []
    for a in range(0, len(act), _SLICE):  # distinct pairs of each slice: no per-launch key
        d, p = act.device[a : a + _SLICE], act.process[a : a + _SLICE]
        first = _codes.first_rows(_codes.combine(d, p))
        devs.append(d[first])
        procs.append(p[first])
    dev, proc = np.concatenate(devs), np.concatenate(procs)
    first = _codes.first_rows(_codes.combine(dev, proc))  # distinct over the slices
    dev, proc = dev[first], proc[first]
    want = np.isin(dev, gap_dev) & (proc >= 0)
    order = np.lexsort((proc[want], dev[want]))
    out: dict[int, list[int]] = {}
    for d, p in zip(dev[want][order].tolist(), proc[want][order].tolist(), strict=True):
        out.setdefault(d, []).append(p)  # one per distinct (GPU, process): small
    return {d: tuple(ps) for d, ps in out.items()}


def _gap_codes(
    gap_dev: np.ndarray, mid: np.ndarray, act: Activity, host: HostIntervals | None
) -> np.ndarray:
    """Per host-bound gap (its GPU and midpoint), the name code of its enclosing host range on
    the GPU's launching process (-1: none). One lookup per set of launching processes, not per
    GPU: a trace can name thousands of devices, and a pass over the activity per GPU was
    quadratic."""
    code = np.full(mid.size, -1, np.int64)
    if host is None or mid.size == 0:
        return code
    if host.single_process:
        return enclosing(host, None, mid)
    procs = _launching_processes(gap_dev, act)
    devs, inverse = np.unique(gap_dev, return_inverse=True)
    sharing: dict[tuple[int, ...], list[int]] = {}
    for i, d in enumerate(devs.tolist()):  # one per GPU with a gap
        sharing.setdefault(procs.get(d, ()), []).append(i)
    for ps, members in sharing.items():  # one per distinct set of launching processes
        keep: np.ndarray | None = None
        if ps:
            keep = np.isin(host.process, ps) | (host.process < 0)
            if not keep.any():
                keep = None
        sel = np.isin(inverse, members)
        code[sel] = enclosing(host, keep, mid[sel])
    return code


def _host_causes(
    group: np.ndarray, length: np.ndarray, code: np.ndarray, host: HostIntervals | None
) -> dict[int, tuple[IdleCause, ...]]:
    """Top causes of the host-bound gaps of each group."""
    names = host.names if host is not None else []
    key = group * (len(names) + 1) + (code + 1)
    uk, inv = np.unique(key, return_inverse=True)
    total = exact_sums(inv, length, uk.size)  # float sums of long gaps could outgrow the idle
    out: dict[int, list[IdleCause]] = {}
    for k, ns in sorted(zip(uk.tolist(), total.tolist(), strict=True), key=lambda p: -p[1]):
        grp, c = divmod(k, len(names) + 1)  # one per (group, distinct cause): small
        name = names[c - 1] if c > 0 else None
        lst = out.setdefault(grp, [])
        if len(lst) < TOP_CAUSES:
            lst.append(IdleCause(cause_kind(name), name, int(ns)))
    return {grp: tuple(v) for grp, v in out.items()}


@dataclass(frozen=True)
class HostGaps:
    """Every host-bound gap of the breakdown, with its enclosing host range (for the timeline)."""

    iteration: np.ndarray
    device: np.ndarray  # -1: unknown
    start: np.ndarray  # absolute ns
    length: np.ndarray
    code: np.ndarray  # into names, -1: none
    names: list[str | None]


def breakdown(
    act: Activity | None,
    ranges: pa.Table | None = None,
    ops: pa.Table | None = None,
    whole_run: bool = False,
) -> tuple[StepRow, ...]:
    """:func:`breakdown_with_gaps` without the gaps."""
    return breakdown_with_gaps(act, ranges, ops, whole_run)[0]


def breakdown_with_gaps(
    act: Activity | None,
    ranges: pa.Table | None = None,
    ops: pa.Table | None = None,
    whole_run: bool = False,
) -> tuple[tuple[StepRow, ...], HostGaps | None]:
    """The step breakdown of every (iteration, GPU) with timed activity; () without timestamps.

    ``whole_run``: the run has no iterations table, so its whole span counts as iteration 0
    (otherwise rows outside every iteration are left out, as everywhere else). The host ranges
    and ops are indexed only where they contain a host-bound gap.
    """
    if act is not None and whole_run:
        act = dataclasses.replace(act, iteration=np.zeros_like(act.iteration))
    if act is None or not (act.iteration >= 0).any():
        return (), None
    inside, group, g_iter, gdev = _group_keys(act)
    every = bool(inside.all())  # then no copies of the activity arrays
    start, end, cat = (a if every else a[inside] for a in (act.start, act.end, act.cat))
    ng = g_iter.size
    sums = sweep.sweep(group, start, end, cat, ng, LAUNCH_GAP_NS)
    g_start = np.full(ng, np.iinfo(np.int64).max)
    np.minimum.at(g_start, group, start)
    mid = sums.gap_start + sums.gap_length // 2
    host = host_intervals(ranges, ops, np.sort(mid))
    code = _gap_codes(gdev[sums.gap_group], mid, act, host)
    causes = _host_causes(sums.gap_group, sums.gap_length, code, host)
    gaps = HostGaps(
        iteration=g_iter[sums.gap_group], device=gdev[sums.gap_group],
        start=sums.gap_start, length=sums.gap_length, code=code,
        names=host.names if host is not None else [],
    )  # fmt: skip
    rows = []
    for g in range(ng):  # one per (iteration, GPU): small
        dev = int(gdev[g])
        p = sums.by_winner[g]
        rows.append(
            StepRow(
                iteration=int(g_iter[g]),
                device_id=dev if dev != -1 else None,
                start_ns=int(g_start[g]),
                span_ns=int(p.sum()),
                tc_compute_ns=int(p[Cat.TC]),
                other_compute_ns=int(p[Cat.OTHER]),
                unknown_compute_ns=int(p[Cat.UNKNOWN]),
                communication_ns=int(p[Cat.COMM]),
                memory_ns=int(p[Cat.MEMORY]),
                idle_launch_ns=int(p[IDLE]),
                idle_host_ns=int(p[sweep.LONG_IDLE]),
                communication_total_ns=int(sums.comm_total[g]),
                communication_overlap_ns=int(sums.comm_hidden[g]),
                host_causes=causes.get(g, ()),
            )
        )
    ordered = sorted(rows, key=lambda r: (r.iteration, r.device_id is None, r.device_id or 0))
    return tuple(ordered), gaps
