"""Iteration slicing with DLProf's key-node semantics, on synthetic runs with known ranges."""

from __future__ import annotations

from pathlib import Path

import pytest
from synthetic import run_meta

from tcreport import api, schema
from tcreport.analysis import iterations
from tcreport.errors import UsageError
from tcreport.model import Granularity, Run

STEP = 1_000_000  # 1 ms per synthetic iteration


def synthetic_steps_run(n: int = 5, range_name: str = "train_step", warmup_factor: int = 10) -> Run:
    """n iterations of a `train_step` range; each launches one 100 µs kernel (the first 10x longer)."""
    starts = [i * STEP for i in range(n)]
    ranges = schema.conform(
        {
            "name": [range_name] * n,
            "start_ns": starts,
            "end_ns": [s + STEP - 1000 for s in starts],
            "depth": [0] * n,
            "thread_id": [1] * n,
        },
        schema.TableKind.RANGES,
    )
    durs = [100_000 * (warmup_factor if i == 0 else 1) for i in range(n)]
    kernels = schema.conform(
        {
            "name": ["volta_sgemm_128x64_nn"] * n,
            "start_ns": [s + 500 for s in starts],
            "launch_ns": [s + 100 for s in starts],
            "duration_ns": durs,
            "calls": [1] * n,
        },
        schema.TableKind.KERNELS,
    )
    meta = run_meta(op_granularity=Granularity.NONE)
    return Run(
        meta=meta, kernels=kernels, ranges=ranges, memory=schema.empty(schema.TableKind.MEMORY)
    )


def test_key_node_splits_and_iter_range_selects_exactly() -> None:
    run = synthetic_steps_run()
    view = api.analyze(run, key_node="train_step", iter_start=1, iter_stop=3)
    it = view.analysis.selection.info
    assert (it.total, it.start, it.stop, it.aggregated) == (5, 1, 3, 3)
    assert view.analysis.time.gpu_kernel_ns == 3 * 100_000  # warm-up iteration 0 excluded
    assert it.mean_ns == STEP
    assert view.analysis.time.wall_ns == 3 * STEP
    assert len(view.analysis.iterations) == 5
    assert [r.aggregated for r in view.analysis.iterations] == [False, True, True, True, False]
    assert view.analysis.iterations[0].non_tc_ns == 1_000_000


def test_repeating_outer_range_is_detected_without_key_node() -> None:
    view = api.analyze(synthetic_steps_run())
    it = view.analysis.selection.info
    assert it.total == 5 and it.key_node == "train_step"
    assert "repeating range" in (it.method or "")
    assert not [f for f in view.findings if f.id == "IT001"]


def test_profiler_step_ranges_are_used() -> None:
    run = synthetic_steps_run(n=4)
    names = [f"ProfilerStep#{i + 7}" for i in range(4)]
    assert run.ranges is not None
    ranges = run.ranges.set_column(
        0,
        run.ranges.schema.field("name"),
        schema.conform(
            {"name": names, "start_ns": [0] * 4, "end_ns": [0] * 4}, schema.TableKind.RANGES
        ).column("name"),
    )
    view = api.analyze(run.replace(ranges=ranges), iter_start=2)
    it = view.analysis.selection.info
    assert it.method == "ProfilerStep#N ranges"
    assert (it.total, it.start, it.stop) == (4, 2, 3)
    assert view.analysis.time.gpu_kernel_ns == 2 * 100_000


def test_unknown_key_node_reports_whole_run_with_candidates() -> None:
    view = api.analyze(synthetic_steps_run(), key_node="optimizer.step")
    assert view.analysis.selection.key_node_found is False
    assert view.analysis.time.gpu_kernel_ns == 14 * 100_000  # everything aggregated
    it001 = [f for f in view.findings if f.id == "IT001"]
    assert it001 and "optimizer.step" in it001[0].title
    assert "train_step" in it001[0].detail


def test_iter_start_past_the_end_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="past the last iteration"):
        api.analyze(synthetic_steps_run(), key_node="train_step", iter_start=9)


def test_candidates_rank_frequent_names() -> None:
    assert iterations.candidate_key_nodes(synthetic_steps_run())[0] == "train_step"


def test_key_node_on_the_real_two_rank_export(nsys_h100: Path) -> None:
    """Two ranks each run FlashAttnFunc 30 times: 30 iterations, not 60 half-iterations, and
    the aggregated figures are exactly the kept iterations' rows."""
    run = api.load(nsys_h100)
    whole = api.analyze(run)
    view = api.analyze(run, key_node="FlashAttnFunc", iter_start=2, iter_stop=5)
    it = view.analysis.selection.info
    assert (it.total, it.start, it.stop, it.aggregated) == (30, 2, 5, 4)
    kept = [r for r in view.analysis.iterations if r.aggregated]
    assert [r.iteration for r in kept] == [2, 3, 4, 5]
    assert sum(r.tc_ns + r.non_tc_ns for r in kept) == view.analysis.time.gpu_kernel_ns
    assert sum(r.tc_ns for r in kept) == view.analysis.time.tc_kernel_ns
    assert whole.analysis.time.gpu_kernel_ns is not None
    assert 0 < view.analysis.time.gpu_kernel_ns < whole.analysis.time.gpu_kernel_ns
    missing = api.analyze(run, key_node="no_such_range")
    assert missing.analysis.time.gpu_kernel_ns == whole.analysis.time.gpu_kernel_ns
    assert any(f.id == "IT001" and "no_such_range" in f.title for f in missing.findings)
