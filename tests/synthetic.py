"""Synthetic runs for edge cases real traces lack (hostile names, empty tables). Named as such."""

from __future__ import annotations

from typing import Any

from tcreport import schema
from tcreport.model import Gpu, Granularity, IterationInfo, Run, RunMeta, SourceFormat, gpu_vendor

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


def synthetic_vendor_run(gpu_name: str, kernel_names: list[str], op_type: str = "mm") -> Run:
    """One eligible op per kernel, on a Kineto-like run whose device is ``gpu_name``: enough to
    see which verdict a vendor's kernels get and whether an unjudged op is called a miss."""
    n = len(kernel_names)
    ids = [f"op{i}" for i in range(n)]
    kernels = schema.conform(
        {
            "name": kernel_names,
            "duration_ns": [10_000] * n,
            "calls": [1] * n,
            "start_ns": [i * 20_000 for i in range(n)],
            "launch_ns": [i * 20_000 - 100 for i in range(n)],
            "op_id": ids,
            "device_id": [0] * n,
        },
        schema.TableKind.KERNELS,
    )
    ops = schema.conform(
        {
            "op_id": ids,
            "name": [f"aten::{op_type}"] * n,
            "type": [op_type] * n,
            "dtype": ["bfloat16"] * n,
            "calls": [1] * n,
            "cpu_ns": [5_000] * n,
            "gpu_ns": [10_000] * n,
            "start_ns": [i * 20_000 - 200 for i in range(n)],
        },
        schema.TableKind.OPS,
    )
    meta = RunMeta(
        format=SourceFormat.KINETO_JSON,
        path="synthetic.json",
        framework="PyTorch 2.5.0",
        gpus=(Gpu(device_id=0, name=gpu_name, vendor=gpu_vendor(gpu_name)),),
        iterations=IterationInfo(total=1, start=0, stop=0, aggregated=1, method="whole run"),
        kernel_granularity=Granularity.LAUNCH,
        op_granularity=Granularity.LAUNCH,
    )
    return Run(meta=meta, kernels=kernels, ops=ops, memory=schema.empty(schema.TableKind.MEMORY))


US = 1_000
MS = 1_000_000


def synthetic_run(
    kernels: list[dict[str, Any]] | None = None,
    ops: list[dict[str, Any]] | None = None,
    ranges: list[dict[str, Any]] | None = None,
    framework: str | None = "PyTorch 2.3.0",
    cc: str | None = "7.0",
    fmt: SourceFormat = SourceFormat.NSYS_SQLITE,
    gpus: tuple[Gpu, ...] | None = None,
) -> Run:
    """A run from row dicts; kernels default to one launch each, on device 0."""

    def table(rows: list[dict[str, Any]] | None, kind: schema.TableKind) -> Any:
        if rows is None:
            return None
        if not rows:
            return schema.empty(kind)
        cols = sorted({k for r in rows for k in r})
        return schema.conform({c: [r.get(c) for r in rows] for c in cols}, kind)

    if kernels is not None:
        kernels = [{"calls": 1, "device_id": 0, **k} for k in kernels]
    if ops is not None:
        ops = [{"calls": 1, **o} for o in ops]
    meta = RunMeta(
        format=fmt,
        path="synthetic",
        framework=framework,
        gpus=gpus
        if gpus is not None
        else (Gpu(device_id=0, name="synthetic", compute_capability=cc),),
        iterations=IterationInfo(total=1, start=0, stop=0, aggregated=1, method="whole run"),
        kernel_granularity=Granularity.LAUNCH,
        op_granularity=Granularity.LAUNCH,
    )
    return Run(
        meta=meta,
        kernels=table(kernels, schema.TableKind.KERNELS),
        ops=table(ops, schema.TableKind.OPS),
        ranges=table(ranges, schema.TableKind.RANGES),
        memory=schema.empty(schema.TableKind.MEMORY),
    )


def kernel_row(
    name: str, op_id: str | None, start: int, dur: int, device: int = 0
) -> dict[str, Any]:
    return {
        "name": name,
        "op_id": op_id,
        "start_ns": start,
        "launch_ns": start - 1,
        "duration_ns": dur,
        "device_id": device,
    }


def op_row(
    op_id: str,
    type_: str,
    dtype: str | None,
    gpu_ns: int,
    shapes: str | None = None,
    start: int = 0,
) -> dict[str, Any]:
    return {
        "op_id": op_id,
        "name": f"/model/{op_id}/{type_}",
        "type": type_,
        "dtype": dtype,
        "gpu_ns": gpu_ns,
        "cpu_ns": 10 * US,
        "start_ns": start,
    }


def range_row(name: str, start: int, end: int, depth: int = 0) -> dict[str, Any]:
    return {"name": name, "start_ns": start, "end_ns": end, "depth": depth, "thread_id": 1}
