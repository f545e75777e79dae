"""Kernels of a CUPTI range-profiler trace: one ``cuda_profiler_range`` event per kernel.

With ``torch.profiler._ExperimentalConfig(profiler_metrics=[...], profiler_measure_per_kernel=
True)`` Kineto runs CUPTI's range profiler in auto-range, kernel-replay mode, alone (libkineto
refuses to combine it with the activity tracer), so the trace has no ``kernel`` events. It writes
one ``cuda_profiler_range`` event per profiled kernel instead (libkineto CuptiRangeProfiler.cpp):
named after the demangled kernel, ``pid`` the device, the requested counters in ``args``, and
times that are *not* the kernel's: the profiling span is split evenly among the ranges ("the
actual times do not really matter here"). So:

* each range becomes a kernel row; its duration is ``gpu__time_duration.sum`` when that counter
  was collected (the kernel replayed under the profiler), else the even split, and the notes say
  which: with the split, time shares are shares of kernels, not of time;
* tensor-pipe counters (``sm__inst_executed_pipe_tensor.sum``, what ``kineto__tensor_core_insts``
  expands to) become ``counter_uses_tc``, which decides the kernel's verdict as Nsight Compute's
  counters do with ``--counters``;
* the ranges carry no correlation id; as HolisticTraceAnalysis does, the i-th range (by time) is
  the i-th kernel launch (``cudaLaunchKernel`` and its driver/ex variants) when both counts agree,
  which links each kernel to its launching op.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.ingest.kineto import events as ev

_LAUNCH = re.compile(r"^(?:cuda|cu)LaunchKernel(?:Ex(?:C)?)?(?:_v\d+)?$")


def _launch_corr(ranges: ev.Frame, runtime: ev.Frame) -> pa.Array | None:
    """Each range's launch correlation id by launch order, or ``None`` when the counts differ."""
    names = runtime.name.to_pylist()
    launches = [i for i, n in enumerate(names) if isinstance(n, str) and _LAUNCH.match(n)]
    if not launches or len(launches) != len(ranges):
        return None
    idx = np.array(launches, dtype=np.int64)
    ts = runtime.start_ns.to_numpy(zero_copy_only=False)[idx]
    by_time = idx[np.argsort(ts, kind="stable")]
    corr = runtime.col(ev.CORR).take(pa.array(by_time))
    order = np.argsort(ranges.start_ns.to_numpy(zero_copy_only=False), kind="stable")
    out = np.empty(len(order), dtype=np.int64)
    out[order] = np.arange(len(order))
    return corr.take(pa.array(out))


def as_kernels(ranges: ev.Frame, runtime: ev.Frame) -> tuple[ev.Frame, pa.Array, list[str]]:
    """The kernel frame the ranges stand for, their tensor-pipe verdicts, and the notes."""
    n = len(ranges)
    measured = ranges.col(ev.GPU_TIME)
    timed = n - measured.null_count
    nulls = pa.nulls(n, pa.int64())
    by_order = _launch_corr(ranges, runtime)
    corr = pc.coalesce(ranges.col(ev.CORR), nulls if by_order is None else by_order)
    table = pa.table(
        {
            "name": ranges.name,
            "pid": ranges.pid,
            "tid": ranges.tid,
            "start_ns": ranges.start_ns,
            "dur_ns": pc.coalesce(measured, ranges.dur_ns),
            ev.CORR: corr,
            ev.EID: ranges.col(ev.EID),
            ev.DEVICE: pc.coalesce(ranges.col(ev.DEVICE), ranges.pid),
            ev.STREAM: nulls,
            **{f"{k}_{a}": nulls for k in (ev.GRID, ev.BLOCK) for a in "xyz"},
        }
    )
    tensor = ranges.col(ev.TENSOR)
    judged = n - tensor.null_count
    notes = [
        f"CUPTI range profiler trace: {n:,} kernels read from cuda_profiler_range events (the "
        "range profiler runs alone, so the trace has no kernel events); each kernel was replayed "
        "under the profiler"
        + (
            "; durations are its gpu__time_duration.sum"
            if timed == n
            else "; their times are not measured: Kineto spreads the ranges evenly over the "
            "profiling span, so time shares are shares of kernels"
            + (f" (gpu__time_duration.sum for {timed:,} of them)" if timed else "")
        )
    ]
    if judged:
        notes.append(
            f"tensor-pipe counters decide Tensor Core use for {judged:,} of {n:,} kernels; the "
            "others are judged by name"
        )
    linked = n - corr.null_count
    if linked < n:
        notes.append(
            f"{n - linked:,} of {n:,} profiled kernels could not be matched to their launches "
            "(ranges carry no correlation id and the launch count differs): no op owns them"
        )
    return ev.Frame(table), tensor, notes
