"""Synthetic runs for edge cases real traces lack (hostile names, empty tables). Named as such."""

from __future__ import annotations

from tcreport import schema
from tcreport.model import Gpu, Granularity, IterationInfo, Run, RunMeta, SourceFormat

HOSTILE = "</script><img src=x onerror=alert(1)>"


def hostile_run() -> Run:
    """A tiny run whose kernel, op and GPU names try to break out of HTML/JSON/Markdown."""
    kernels = schema.conform(
        {
            "name": [HOSTILE, "volta_sgemm_128x64_nn", HOSTILE],
            "duration_ns": [5000, 3000, 2000],
            "calls": [1, 1, 1],
            "start_ns": [100, 6000, 9500],
            "launch_ns": [90, 5900, 9400],
            "op_id": ["op1", "op2", "op1"],
            "device_id": [0, 0, 0],
        },
        schema.TableKind.KERNELS,
    )
    ops = schema.conform(
        {
            "op_id": ["op1", "op2"],
            "name": [f"/model/{HOSTILE}/linear", "/model/conv2d"],
            "type": ["linear", "conv2d"],
            "dtype": ["float32", "float32"],
            "calls": [1, 1],
            "cpu_ns": [6000, 4000],
            "gpu_ns": [7000, 3000],
            "start_ns": [80, 5800],
        },
        schema.TableKind.OPS,
    )
    meta = RunMeta(
        format=SourceFormat.NSYS_SQLITE,
        path=f"/tmp/{HOSTILE}.sqlite",
        profiler=f"Nsight Systems {HOSTILE}",
        gpus=(Gpu(device_id=0, name=HOSTILE, compute_capability="7.0"),),
        iterations=IterationInfo(total=1, start=0, stop=0, aggregated=1, method="whole run"),
        kernel_granularity=Granularity.LAUNCH,
        op_granularity=Granularity.LAUNCH,
    )
    return Run(meta=meta, kernels=kernels, ops=ops, memory=schema.empty(schema.TableKind.MEMORY))
