"""Synthetic distributed jobs: one Kineto trace per rank, as PyTorch writes them for DDP.

Each step on each rank: a forward GEMM (10 ms), a backward GEMM (20 ms), then an NCCL all-reduce
of 100 MB (25 M floats) that ends when the last rank's backward has ended plus ``TRANSFER_US``;
every rank starts the next step together. ``slow`` ranks sleep ``sleep_us`` on the host before
their backward (a ``sleep`` range), so the others wait that long inside the all-reduce. Every
rank writes ``distributedInfo`` (``backend``, ``rank``, ``world_size``) like PyTorch. Named as
synthetic wherever they are used; the real multi-rank trace is ../shared's two-rank-sampled.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

PID = 100
FWD_US, BWD_US, TRANSFER_US = 10_000, 20_000, 5_000
NELEMS = 25_000_000  # floats: 100 MB
GEMM = "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage3_warpsize2x2x1_tensor16x8x16_kernel"
NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"


def _x(cat: str, name: str, ts: float, dur: float, args: dict[str, Any], tid: int = PID) -> Any:
    pid = PID if tid == PID else 0  # GPU events: pid = device, tid = stream
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
            "args": args}  # fmt: skip


def _launch(events: list[Any], op: str, ts: float, kernel: str, gpu: tuple[float, float], stream: int,
            corr: int, extra: dict[str, Any] | None = None) -> None:  # fmt: skip
    """An op, its runtime call and the kernel it launched on ``stream`` (``gpu``: start, length)."""
    ids = {"correlation": corr, "External id": corr}
    events.append(_x("cpu_op", op, ts, 30, {"External id": corr}))
    events.append(_x("cuda_runtime", "cudaLaunchKernel", ts + 5, 3, ids))
    args = {**ids, "device": 0, "stream": stream, **(extra or {})}
    events.append(_x("kernel", kernel, gpu[0], gpu[1], args, stream))


def rank_events(
    rank: int,
    world: int,
    steps: int,
    slow: set[int],
    sleep_us: int,
    gemm: str = GEMM,
    plan: list[tuple[set[int], int]] | None = None,
) -> list[dict[str, Any]]:
    """The events of one rank; the step layout is the job's, so every rank agrees on the times.
    ``plan``: each step's own (slow ranks, their sleep in µs), for a straggler that rotates."""
    events: list[dict[str, Any]] = []
    corr = 1000 * rank
    start = 1_700_000_000_000_000.0  # epoch µs, shared by the ranks
    message = {"Collective name": "allreduce", "In msg nelems": NELEMS, "Out msg nelems": NELEMS,
               "Group size": world, "dtype": "Float", "Process Group Name": "0"}  # fmt: skip
    for k in range(steps):
        if plan is not None:
            slow, sleep_us = plan[k]
        late = {r: sleep_us if r in slow else 0 for r in range(world)}
        bwd_end = {r: start + FWD_US + 40 + late[r] + BWD_US for r in range(world)}
        nccl_end = max(bwd_end.values()) + TRANSFER_US
        me = start + FWD_US + 30 + late[rank]  # the backward's launch
        events.append(
            _x("user_annotation", f"ProfilerStep#{k + 10}", start, nccl_end + 50 - start, {})
        )
        _launch(events, "aten::mm", start + 5, gemm, (start + 20, FWD_US), 7, corr + 1)
        op = "autograd::engine::evaluate_function: MmBackward0"
        _launch(events, op, me - 5, gemm, (me + 10, BWD_US), 7, corr + 2)
        if rank in slow:
            events.append(_x("user_annotation", "sleep", start + 35, me - 45 - start, {}))
        end = bwd_end[rank]
        _launch(
            events, "nccl:all_reduce", me + 20, NCCL, (end, nccl_end - end), 20, corr + 3, message
        )
        corr += 3
        start = nccl_end + 100
    return events


def write_job(
    folder: Path,
    world: int = 4,
    *,
    steps: int = 3,
    slow: tuple[int, ...] = (),
    sleep_us: int = 20_000,
    ranks: tuple[int, ...] | None = None,
    prefix: str = "synthetic",
    world_size: int | None = None,
    gemm: str = GEMM,
    plan: list[tuple[set[int], int]] | None = None,
) -> list[Path]:
    """Write ``ranks`` (default: all) of a synthetic ``world``-rank job into ``folder``;
    ``plan`` (one entry per step, see :func:`rank_events`) replaces ``steps``/``slow``/``sleep_us``."""
    steps = len(plan) if plan is not None else steps
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for r in ranks if ranks is not None else range(world):
        doc = {
            "schemaVersion": 1,
            "distributedInfo": {"backend": "nccl", "rank": r, "world_size": world_size or world},
            "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-40GB", "computeMajor": 8,
                                  "computeMinor": 0, "numSms": 108}],
            "traceEvents": rank_events(r, world, steps, set(slow), sleep_us, gemm, plan),
        }  # fmt: skip
        path = folder / f"{prefix}_rank-{r}.json.gz"
        with gzip.open(path, "wt") as fh:
            json.dump(doc, fh)
        out.append(path)
    return out
