"""Synthetic runs for edge cases real traces lack (hostile names, empty tables). Named as such.

Every hand-built :class:`RunMeta` of the tests comes from :func:`run_meta`, so a new metadata field
is added in one place.
"""

from __future__ import annotations

from typing import Any

from tcreport import schema
from tcreport.model import (
    Gpu,
    Granularity,
    IterationInfo,
    IterationMethod,
    Run,
    RunMeta,
    SourceFormat,
    gpu_vendor,
)

HOSTILE = "</script><img src=x onerror=alert(1)>"
#: A PR-comment injection (issue 14): a lone CR ends a line in CommonMark, so this would make a
#: heading, a mention, an issue link and two autolinks, and break the table it sits in.
MARKDOWN_HOSTILE = "x\r## All Tensor Cores OK - approve\r@maintainer https://evil.example #123 GH-7 www.evil.example |`a`| <b>b</b> &#64;x"
#: A terminal injection: retitle the window (OSC), clear the screen (CSI), ring the bell, move back.
TERMINAL_HOSTILE = "op\x1b]0;pwned\x07\x1b[2J\x1b[31mred\r\x08\x9b2J[bold]b[/bold]"


def run_meta(**fields: Any) -> RunMeta:
    """A synthetic run's metadata: one whole-run iteration, per-launch rows, any field overridden."""
    base: dict[str, Any] = {
        "format": SourceFormat.NSYS_SQLITE,
        "path": "synthetic",
        "iterations": IterationInfo(
            total=1, start=0, stop=0, aggregated=1, method=IterationMethod.WHOLE_RUN
        ),
        "kernel_granularity": Granularity.LAUNCH,
        "op_granularity": Granularity.LAUNCH,
    }
    return RunMeta(**(base | fields))


def hostile_run(name: str = HOSTILE) -> Run:
    """A tiny run whose kernel, op, type, GPU and profiler names and a note carry ``name``,
    trying to break out of HTML/JSON/Markdown/the terminal."""
    kernels = schema.conform(
        {
            "name": [name, "volta_sgemm_128x64_nn", name],
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
            "name": [f"/model/{name}/linear", "/model/conv2d"],
            "type": ["linear" if name == HOSTILE else f"linear{name}", "conv2d"],
            "dtype": ["float32", "float32"],
            "calls": [1, 1],
            "cpu_ns": [6000, 4000],
            "gpu_ns": [7000, 3000],
            "start_ns": [80, 5800],
        },
        schema.TableKind.OPS,
    )
    meta = run_meta(
        path=f"/tmp/{name}.sqlite",
        profiler=f"Nsight Systems {name}",
        gpus=(Gpu(device_id=0, name=name, compute_capability="7.0"),),
        notes=() if name == HOSTILE else (f"note {name}",),
    )
    return Run(meta=meta, kernels=kernels, ops=ops, memory=schema.empty(schema.TableKind.MEMORY))


def synthetic_run(precision: str, op_prefix: str = "model") -> Run:
    """A small hand-built run (synthetic): two linear layers and a ReLU, in fp32 or bf16."""
    bf16 = precision == "bf16"
    gemm = (
        "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn"
        if bf16
        else "ampere_sgemm_128x64_tn"
    )
    durations = [40_000, 20_000, 5_000] if bf16 else [100_000, 50_000, 5_000]
    kernels = schema.conform(
        {
            "name": [gemm, gemm, "vectorized_elementwise_kernel"],
            "duration_ns": durations,
            "calls": [1, 1, 1],
            "start_ns": [1_000, 200_000, 300_000],
            "op_id": ["fc1", "fc2", "act"],
            "device_id": [0, 0, 0],
        },
        schema.TableKind.KERNELS,
    )
    shape = "[[64, 1024], [1024, 1024]]"
    ops = schema.conform(
        {
            "op_id": ["fc1", "fc2", "act"],
            "name": [f"{op_prefix}/fc1/linear", f"{op_prefix}/fc2/linear", f"{op_prefix}/act/relu"],
            "type": ["linear", "linear", "relu"],
            "dtype": ["bfloat16" if bf16 else "float32"] * 3,
            "input_shapes": [shape, shape, "[[64, 1024]]"],
            "calls": [1, 1, 1],
            "gpu_ns": durations,
            "start_ns": [900, 199_000, 299_000],
        },
        schema.TableKind.OPS,
    )
    meta = run_meta(
        format=SourceFormat.KINETO_JSON,
        path=f"synthetic-{precision}.json",
        profiler="synthetic",
        framework="PyTorch 2.6.0",
        gpus=(Gpu(device_id=0, name="NVIDIA A100-SXM4-80GB", compute_capability="8.0"),),
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
        iterations=IterationInfo(
            total=1, start=0, stop=0, aggregated=1, method=IterationMethod.WHOLE_RUN
        ),
        kernel_granularity=Granularity.LAUNCH,
        op_granularity=Granularity.LAUNCH,
    )
    return Run(meta=meta, kernels=kernels, ops=ops, memory=schema.empty(schema.TableKind.MEMORY))


US = 1_000
MS = 1_000_000


def synthetic_rows_run(
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
    meta = run_meta(
        format=fmt,
        framework=framework,
        gpus=gpus
        if gpus is not None
        else (Gpu(device_id=0, name="synthetic", compute_capability=cc),),
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
        "input_shapes": shapes,
    }


def range_row(name: str, start: int, end: int, depth: int = 0) -> dict[str, Any]:
    return {"name": name, "start_ns": start, "end_ns": end, "depth": depth, "thread_id": 1}


def doubling_mangled_name(levels: int) -> str:
    """An Itanium name whose every template argument repeats the previous type twice through
    substitutions: linear in mangled length, 2**levels in demangled length (hostile4's bomb)."""
    digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"

    def sub(i: int) -> str:
        if i == 0:
            return "S_"
        n, s = i - 1, ""
        while True:
            s = digits[n % 36] + s
            n //= 36
            if not n:
                return f"S{s}_"

    body, last = "1X1AIS_S_E", 2
    for _ in range(levels):
        body += f"{sub(1)}I{sub(last)}{sub(last)}E"
        last += 1
    return "_Z1f" + body
