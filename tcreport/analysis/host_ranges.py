"""Host ranges and ops as sorted intervals, and which of them a GPU-side instant falls in.

The step breakdown names a host-bound gap by the host range enclosing it, and the stall findings
(:mod:`tcreport.analysis.stalls`) name the op the host was in when the GPU ran dry: both ask, for
many instants at once, which range or op of the GPU's launching process was open then. Built
once per question, restricted to the intervals that contain one of the instants (the ops of a
long run are millions, the instants few).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.analysis import _codes
from tcreport.analysis.activity import Activity

#: Ranges that mark a whole iteration say nothing about a gap inside it.
ITERATION_MARK = r"^ProfilerStep#|^Iteration \d|^train_step$"
#: Rows per slice where per-row temporaries are built a slice at a time.
_SLICE = 1 << 20


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


def codes_at(
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
