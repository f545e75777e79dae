"""A collective call belongs to the step whose host code launched it, like every GPU event.

When the CPU runs ahead of the GPU, a step's all-reduce runs on the GPU after the host has left
that step (``ProfilerStep#N`` has ended, step N+1 is being queued). The job's bandwidth must
still count that call in step N: the analysis slices the collectives with the kernels, by the
launch, not by where the GPU start falls among the host step ranges."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from job_synthetic import write_job
from trace_paths import REALTRACES

from tcreport import api
from tcreport.analysis.slicing import Slice

DDP = REALTRACES / "kineto" / "a100-ddp-nccl-3step" / "nccl_data.json.gz"


def _host_steps_end_at_the_launch(path: Path) -> None:
    """Cut each ``ProfilerStep#N`` to end 1 µs after its last launch (the host ran ahead)."""
    with gzip.open(path, "rt") as fh:
        doc = json.load(fh)
    events = doc["traceEvents"]
    launches = sorted(e["ts"] for e in events if e["cat"] == "cuda_runtime")
    for e in events:
        if e["name"].startswith("ProfilerStep#"):
            inside = [t for t in launches if e["ts"] <= t <= e["ts"] + e["dur"]]
            e["dur"] = max(inside) + 4 - e["ts"]  # the launch call lasts 3 µs
    with gzip.open(path, "wt") as fh:
        json.dump(doc, fh)


def test_synthetic_cpu_ahead_all_reduce_counts_in_its_launching_step(tmp_path: Path) -> None:
    for path in write_job(tmp_path, 2, steps=3):
        _host_steps_end_at_the_launch(path)
    job = api.find_job(tmp_path)
    assert job is not None
    for i in range(3):
        jr = api.analyze_job(job, Slice(iter_start=i, iter_stop=i))
        (row,) = jr.section.bandwidth.rows
        assert (row.calls, row.ranks) == (1, 2), i


@pytest.mark.skipif(not DDP.exists(), reason="needs ../shared/realtraces")
def test_real_ddp_calls_are_split_by_step_like_their_kernels() -> None:
    """Each of the 21 NCCL calls is in exactly one step, the step of its kernel."""
    run = api.load(DDP)
    counts = []
    for i in range(3):
        a = api.analyze(run, Slice(iter_start=i, iter_stop=i)).analysis
        calls = a.communication.calls
        assert calls is not None
        counts.append(calls.num_rows)
    whole = api.analyze(run).analysis.communication.calls
    assert whole is not None and whole.num_rows == 21 == sum(counts)
    assert counts == [7, 7, 7]


def test_synthetic_call_whose_kernel_has_no_launch_is_in_no_step(tmp_path: Path) -> None:
    """A collective kernel without its runtime call was queued before profiling began: in no
    iteration, like every such GPU event, so its call is in none of the job's steps either."""
    for path in write_job(tmp_path, 2, steps=3):
        with gzip.open(path, "rt") as fh:
            doc = json.load(fh)
        nccl = {
            e["args"]["correlation"]
            for e in doc["traceEvents"]
            if e["cat"] == "kernel" and "Collective name" in e["args"]
        }
        first = min(nccl)
        doc["traceEvents"] = [
            e
            for e in doc["traceEvents"]
            if not (e["cat"] == "cuda_runtime" and e["args"]["correlation"] == first)
        ]
        with gzip.open(path, "wt") as fh:
            json.dump(doc, fh)
    job = api.find_job(tmp_path)
    assert job is not None
    (row,) = api.analyze_job(job).section.bandwidth.rows
    assert (row.calls, row.ranks) == (2, 2)  # the first step's call is in no step
