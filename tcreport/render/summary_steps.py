"""The step-breakdown, communication and throughput keys of ``tcreport.summary/1``.

Added to the contract without a new schema id (new keys only); kept in their own module so the
summary's existing keys and these grow without touching each other.
"""

from __future__ import annotations

from typing import Any

from tcreport.analysis.overlap import CommOverlap
from tcreport.analysis.result import Analysis
from tcreport.analysis.steps import StepRow
from tcreport.analysis.throughput import Throughput

TOP_N = 20


def _step(r: StepRow) -> dict[str, Any]:
    return {
        "iteration": r.iteration,
        "device_id": r.device_id,
        "start_ns": r.start_ns,
        "span_ns": r.span_ns,
        "tc_compute_ns": r.tc_compute_ns,
        "other_compute_ns": r.other_compute_ns,
        "unknown_compute_ns": r.unknown_compute_ns,
        "communication_ns": r.communication_ns,
        "memory_ns": r.memory_ns,
        "idle_launch_ns": r.idle_launch_ns,
        "idle_host_ns": r.idle_host_ns,
        "communication_total_ns": r.communication_total_ns,
        "communication_overlap_ns": r.communication_overlap_ns,
        "host_causes": [
            {"kind": c.kind, "name": c.name, "idle_ns": c.idle_ns} for c in r.host_causes
        ],
        "memory_total_ns": r.memory_total_ns,
        "window_ns": r.window_ns,
        "idle_queue": None
        if r.idle_queue is None
        else dict(zip(("host_wait_ns", "kernel_wait_ns", "other_ns"), r.idle_queue, strict=True)),
        "between": None
        if r.between is None
        else {"kind": r.between.kind, "name": r.between.name, "idle_ns": r.between.idle_ns},
        "stalls": [
            {
                "kind": st.kind.value,
                "op": st.op,
                "gaps": st.gaps,
                "idle_ns": st.idle_ns,
                "copies": st.copies,
                "bytes": st.bytes,
            }
            for st in r.stalls
        ],
    }


def _communication(cm: CommOverlap | None) -> dict[str, Any] | None:
    if cm is None:
        return None
    return {
        "collective_ns": cm.collective_ns,
        "overlap_ns": cm.overlap_ns,
        "exposed_ns": cm.exposed_ns,
        "overlap_share": cm.overlap_share,
        "span_ns": cm.span_ns,
        "kernel_names": list(cm.names),
        "devices": [
            {
                "device_id": d.device_id,
                "collective_ns": d.collective_ns,
                "overlap_ns": d.overlap_ns,
                "compute_stream_id": d.compute_stream_id,
            }
            for d in cm.devices
        ],
        "streams": [
            {
                "device_id": s.device_id,
                "stream_id": s.stream_id,
                "collective_ns": s.collective_ns,
                "launches": s.launches,
                "compute_ns": s.compute_ns,
                "is_compute_stream": s.is_compute_stream,
            }
            for s in cm.streams
        ],
    }


def _throughput(t: Throughput | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {
        "gpu_model": t.gpu.model if t.gpu else None,
        "peak_source": t.gpu.source if t.gpu else None,
        "precision": t.precision,
        "peak_tflops": t.peak_tflops,
        "memory_gbs": t.gpu.memory_gbs if t.gpu else None,
        "flops": t.flops,
        "achieved_tflops": t.tflops,
        "wall_ns": t.wall_ns,
        "gpus": t.gpus,
        "mfu": t.mfu,
        "mfu_note": t.mfu_note,
        "counted_gpu_ns": t.counted_gpu_ns,
        "heavy_gpu_ns": t.heavy_gpu_ns,
        "ops_without_flops": list(t.missing),
        "ops": [
            {
                "name": o.name,
                "kind": o.kind,
                "input_shapes": o.input_shapes,
                "precision": o.precision,
                "calls": o.calls,
                "gpu_ns": o.gpu_ns,
                "flops": o.flops,
                "formula": o.formula,
                "achieved_tflops": o.tflops,
                "peak_tflops": o.peak_tflops,
                "peak_share": o.peak_share,
                "above_peak": o.above_peak,
                "mean_tflops": o.mean_tflops,
                "median_tflops": o.median_tflops,
                "memset_ns": o.memset_ns,
                "bytes": o.bytes,
                "flops_per_byte": o.intensity,
                "bound": o.bound.value if o.bound is not None else None,
                "roofline_share": o.roofline_share,
                "matrix_units": o.matrix_units.value,
            }
            for o in t.ops[:TOP_N]
        ],
        "iterations": [
            {
                "iteration": i.iteration,
                "duration_ns": i.duration_ns,
                "flops": i.flops,
                "achieved_tflops": i.tflops(),
                "mfu": t.iteration_mfu(i),
            }
            for i in t.iterations
        ],
    }


def keys(a: Analysis) -> dict[str, Any]:
    """The added keys; each is present on every summary (empty/null when the input lacks it)."""
    return {
        "steps": [_step(r) for r in a.steps.rows],
        "communication_overlap": _communication(a.communication.overlap),
        "throughput": _throughput(a.throughput),
    }
