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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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
    cpu_ns: int
    share: float | None  # of all ops' host time


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


def host_rows(ops: Sequence[OpRow]) -> tuple[tuple[HostRow, ...], tuple[HostRow, ...]]:
    """(ops by host time, op types by host time), largest first. Ops are already grouped (one
    row per name), so this is a small loop over distinct ops, not over instances. Shares are of
    the summed rows, so the op types' add up to 1 (the summary's contract); the run's host time in
    ops, nested time once, is :func:`host_time`."""
    total = sum(o.cpu_ns or 0 for o in ops)
    by_op = sorted(
        (
            HostRow(o.name, o.type, 1, o.calls or 0, o.cpu_ns or 0, _share(o.cpu_ns or 0, total))
            for o in ops
            if o.cpu_ns
        ),
        key=lambda r: (-r.cpu_ns, r.name),
    )
    acc: dict[str, list[int]] = {}
    for o in ops:
        a = acc.setdefault(o.type or "(unknown)", [0, 0, 0])
        a[0] += 1
        a[1] += o.calls or 0
        a[2] += o.cpu_ns or 0
    by_type = sorted(
        (HostRow(t, t, v[0], v[1], v[2], _share(v[2], total)) for t, v in acc.items() if v[2]),
        key=lambda r: (-r.cpu_ns, r.name),
    )
    return tuple(by_op), tuple(by_type)
