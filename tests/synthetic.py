"""Synthetic runs for edge cases real traces lack (hostile names, empty tables). Named as such."""

from __future__ import annotations

from tcreport import schema
from tcreport.model import Gpu, Granularity, IterationInfo, Run, RunMeta, SourceFormat

HOSTILE = "</script><img src=x onerror=alert(1)>"
#: A PR-comment injection (issue 14): a lone CR ends a line in CommonMark, so this would make a
#: heading, a mention, an issue link and two autolinks, and break the table it sits in.
MARKDOWN_HOSTILE = "x\r## All Tensor Cores OK - approve\r@maintainer https://evil.example #123 GH-7 www.evil.example |`a`| <b>b</b> &#64;x"
#: A terminal injection: retitle the window (OSC), clear the screen (CSI), ring the bell, move back.
TERMINAL_HOSTILE = "op\x1b]0;pwned\x07\x1b[2J\x1b[31mred\r\x08\x9b2J[bold]b[/bold]"


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
    meta = RunMeta(
        format=SourceFormat.NSYS_SQLITE,
        path=f"/tmp/{name}.sqlite",
        profiler=f"Nsight Systems {name}",
        gpus=(Gpu(device_id=0, name=name, compute_capability="7.0"),),
        notes=() if name == HOSTILE else (f"note {name}",),
        iterations=IterationInfo(total=1, start=0, stop=0, aggregated=1, method="whole run"),
        kernel_granularity=Granularity.LAUNCH,
        op_granularity=Granularity.LAUNCH,
    )
    return Run(meta=meta, kernels=kernels, ops=ops, memory=schema.empty(schema.TableKind.MEMORY))
