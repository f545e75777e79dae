"""Where the time went on a CPU-only run: host time by op and by op type, as real figures.

A laptop run of a TF or PyTorch script has no GPU kernels, so every GPU column of the report is
``n/a`` and no Tensor Core verdict exists. It still says where the step's time goes, in host
(CPU) time per op; these rows are that view, computed once from the op rows so every renderer
shows the same numbers. :func:`is_cpu_only` is the one definition of "CPU-only run".

The run's total host time in ops (:func:`host_time`) is not the sum of the rows: PyTorch records
an op's host time inclusive of the ops it calls (``aten::linear`` holds its ``aten::addmm``), so a
sum counts nested time twice or more. Where op rows carry timestamps it is the union of the op
intervals per thread: the time each thread spent inside some op, outermost ops only, each instant
once (what ``torch.profiler`` calls the self CPU time total). Threads running ops side by side
each count, as CPU time does. Without timestamps there is nothing to merge, so the rows' times are
summed as the profiler reported them; TensorFlow's op statistics (the only CPU-only input without
timestamps) report self time, which does not nest.

The rows use the same definition, so the headline and the rows' shares are of one figure: a
row's host time is its *self* time (:func:`self_ns`), each instant of the union given to the
innermost op open on its thread; the rows then sum to the headline and a share is of the headline.
The time as recorded, callees included, stays beside it (``inclusive_ns``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport._group_by import aggregate_by
from tcreport.analysis import _codes
from tcreport.analysis.figures import OpRow, TimeFigures
from tcreport.model import RunMeta

UNION = "union of op intervals per thread: nested and overlapping ops counted once"
SUMMED = "op host times summed as the profiler reported them: no timestamps to merge"


@dataclass(frozen=True)
class HostTime:
    """Host (CPU) time spent inside ops over the aggregated range, and how it was measured."""

    ns: int
    method: str  # UNION or SUMMED


@dataclass(frozen=True)
class HostRow:
    """One op (``name``) or op type (``name`` is the type; ``ops`` counts its ops)."""

    name: str
    type: str | None
    ops: int
    calls: int
    cpu_ns: int  # self host time: nested time counted once, in the innermost op
    share: float | None  # of the run's host time in ops (HostTime.ns), which the rows sum to
    inclusive_ns: int = 0  # host time as the profiler recorded it, callees included


def is_cpu_only(meta: RunMeta, time: TimeFigures, ops: Sequence[OpRow]) -> bool:
    """No device activity of any kind (kernel or memory time, in rows or the profiler's figures,
    op GPU time, device events the reader could not read), but ops with host time: a capture
    without a GPU, not an input that lacks kernel rows."""
    if time.gpu_kernel_ns or meta.reported.gpu_kernel_ns or meta.reported.all_kernel_ns:
        return False
    if time.memory_ns or meta.reported.memory_ns or meta.device_events_unread:
        return False
    if any(o.gpu_ns for o in ops):
        return False
    return any(o.cpu_ns for o in ops)


def _union_ns(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> int:
    """Summed length of each thread's union of intervals, every thread at once (a run may have
    thousands of threads; one pass per thread would be quadratic). The 2n start/end events are
    sorted by (thread, time, starts first) and a running count of open intervals taken over all
    of them: a thread's intervals all close before the next thread's open, so the count is 0
    between threads, and the union is the time during which it is positive."""
    n = start.size
    times = np.concatenate([start, np.maximum(end, start)])
    is_end = np.arange(2 * n) >= n
    order = np.lexsort((is_end, times, np.concatenate([thread, thread])))
    open_ = np.cumsum(np.where(is_end[order], -1, 1))
    length = np.diff(times[order])
    return int(length[open_[:-1] > 0].sum())


def _owners(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Each op's self time: every stretch of a thread's union of intervals goes to the innermost
    op open then. Events sort by (thread, time, ends first); the open count after a start is that
    op's depth, and the op owning a stretch at depth d is the latest op started at depth d (ops on
    one thread nest, as a profiler records calls). One vectorised pass per nesting depth, not per
    op. Ops that overlap without nesting still share out the union exactly, once."""
    n = start.size
    times = np.concatenate([start, end])
    is_end = np.arange(2 * n) >= n
    order = np.lexsort((~is_end, times, np.concatenate([thread, thread])))
    open_ = np.cumsum(np.where(is_end[order], -1, 1))
    length = np.diff(times[order])
    starts = ~is_end[order]
    owner = np.full(2 * n, -1, np.int64)
    for depth in range(1, int(open_.max(initial=0)) + 1):
        at = open_ == depth
        last = np.maximum.accumulate(np.where(starts & at, np.arange(2 * n), -1))
        owner[at] = last[at]
    seg = owner[:-1]
    held = (seg >= 0) & (length > 0)
    return np.bincount(order[seg[held]], weights=length[held], minlength=n).astype(np.int64)


def self_ns(ops: pa.Table) -> dict[str, int]:
    """Self host time per op name (see the module docstring); rows without a timestamp keep their
    time as reported. Sums to :func:`host_time`."""
    timed = pc.fill_null(pc.and_(pc.is_valid(ops["start_ns"]), pc.is_valid(ops["cpu_ns"])), False)
    t = ops.filter(timed)
    start = t["start_ns"].to_numpy().astype(np.int64)
    end = start + np.maximum(t["cpu_ns"].to_numpy().astype(np.int64), 0)
    proc = np.asarray(pc.fill_null(t["process_id"], -1).to_numpy(), np.int64)
    thread = np.asarray(pc.fill_null(t["thread_id"], -1).to_numpy(), np.int64)
    own = _owners(_codes.combine(proc, thread), start, end) if t.num_rows else np.zeros(0, np.int64)
    untimed = ops.filter(pc.invert(timed))
    names = pa.chunked_array(
        [*t["name"].chunks, *untimed["name"].chunks], ops.schema.field("name").type
    )
    spent = pa.chunked_array(
        [pa.array(own, pa.int64()), *pc.fill_null(untimed["cpu_ns"], 0).cast(pa.int64()).chunks],
        pa.int64(),
    )
    parts = pa.table({"name": pc.cast(names, pa.string()), "ns": spent})
    g = aggregate_by(parts, "name", [("ns", "sum")], use_threads=False)
    return dict(zip(g["name"].to_pylist(), g["ns_sum"].to_pylist(), strict=True))


def host_time(ops: pa.Table | None, rows: Sequence[OpRow]) -> HostTime | None:
    """Host time in ops (see the module docstring): the union per thread of the timed op rows,
    plus the summed time of any rows without a timestamp; ``None`` without op host time."""
    total = sum(o.cpu_ns or 0 for o in rows)
    if ops is None or ops.num_rows == 0 or total <= 0:
        return None
    timed = pc.fill_null(pc.and_(pc.is_valid(ops["start_ns"]), pc.is_valid(ops["cpu_ns"])), False)
    if not pc.any(timed).as_py():
        return HostTime(total, SUMMED)
    t = ops.filter(timed)
    start = t["start_ns"].to_numpy().astype(np.int64)
    end = start + np.maximum(t["cpu_ns"].to_numpy().astype(np.int64), 0)
    proc = np.asarray(pc.fill_null(t["process_id"], -1).to_numpy(), np.int64)
    thread = np.asarray(pc.fill_null(t["thread_id"], -1).to_numpy(), np.int64)
    ns = _union_ns(_codes.combine(proc, thread), start, end)
    untimed = ops.filter(pc.invert(timed))["cpu_ns"]
    return HostTime(ns + int(pc.sum(untimed).as_py() or 0), UNION)


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole > 0 else None


def host_rows(
    ops: Sequence[OpRow], own: dict[str, int] | None = None
) -> tuple[tuple[HostRow, ...], tuple[HostRow, ...]]:
    """(ops by host time, op types by host time), largest first. Ops are already grouped (one
    row per name), so this is a small loop over distinct ops, not over instances. ``own``: the
    self time per name (:func:`self_ns`); without it (no op table) the rows' time as recorded is
    their own. Shares are of the rows' sum, which is the run's host time in ops (:func:`host_time`,
    nested time once), so the ops' and the op types' each add up to 1."""

    def mine(o: OpRow) -> int:
        return own.get(o.name, 0) if own is not None else o.cpu_ns or 0

    total = sum(mine(o) for o in ops)
    by_op = sorted(
        (
            HostRow(o.name, o.type, 1, o.calls or 0, mine(o), _share(mine(o), total), o.cpu_ns or 0)
            for o in ops
            if o.cpu_ns
        ),
        key=lambda r: (-r.cpu_ns, -r.inclusive_ns, r.name),
    )
    acc: dict[str, list[int]] = {}
    for o in ops:
        a = acc.setdefault(o.type or "(unknown)", [0, 0, 0, 0])
        a[0] += 1
        a[1] += o.calls or 0
        a[2] += mine(o) if o.cpu_ns else 0
        a[3] += o.cpu_ns or 0
    by_type = sorted(
        (
            HostRow(t, t, v[0], v[1], v[2], _share(v[2], total), v[3])
            for t, v in acc.items()
            if v[3]
        ),
        key=lambda r: (-r.cpu_ns, -r.inclusive_ns, r.name),
    )
    return tuple(by_op), tuple(by_type)
