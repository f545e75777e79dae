"""Iteration slicing with DLProf's key-node semantics, on synthetic runs with known ranges."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from kineto_synthetic import equal_host_steps_trace
from synthetic import run_meta

from tcreport import api, schema
from tcreport.analysis import iterations, slicing
from tcreport.errors import OptionError, UsageError
from tcreport.model import Granularity, IterationInfo, IterationMethod, Run, RunMeta
from tcreport.render.escape import markdown as markdown_escape

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
    view = api.analyze(run, api.Slice(key_node="train_step", iter_start=1, iter_stop=3))
    it = view.analysis.iterations.info
    assert (it.total, it.start, it.stop, it.aggregated) == (5, 1, 3, 3)
    assert view.analysis.time.gpu_kernel_ns == 3 * 100_000  # warm-up iteration 0 excluded
    assert it.mean_ns == STEP
    assert view.analysis.time.wall_ns == 3 * STEP
    assert len(view.analysis.iterations.rows) == 5
    assert [r.aggregated for r in view.analysis.iterations.rows] == [False, True, True, True, False]
    assert view.analysis.iterations.rows[0].non_tc_ns == 1_000_000


def test_repeating_outer_range_is_detected_without_key_node() -> None:
    view = api.analyze(synthetic_steps_run())
    it = view.analysis.iterations.info
    assert it.total == 5 and it.key_node == "train_step"
    assert it.method is IterationMethod.REPEATING_RANGE
    assert not [f for f in view.findings if f.id == "IT001"]


def _warmup_then_steps_synthetic() -> Run:
    """A 300 µs warm-up kernel and its op before the first of 5 ``train_step`` ranges (the
    ranges opening 1 ms after the trace starts): a warm-up forward outside the loop, or the first
    step's forward before a range that opens later in the step; only the user can tell which."""
    run = synthetic_steps_run()
    assert run.kernels is not None and run.ranges is not None
    shift = STEP  # everything 1 ms later, so the warm-up fits before it at a positive time

    def later(t: pa.Table, cols: tuple[str, ...]) -> pa.Table:
        for c in cols:
            t = t.set_column(t.schema.get_field_index(c), c, pc.add(t.column(c), shift))
        return t

    kernels = later(run.kernels, ("start_ns", "launch_ns"))
    warm = schema.conform(
        {"name": ["volta_sgemm_128x64_nn"], "start_ns": [200_000], "launch_ns": [100_000],
         "duration_ns": [300_000], "calls": [1]},
        schema.TableKind.KERNELS,
    )  # fmt: skip
    ops = schema.conform(
        {"op_id": ["warm", "step0"], "name": ["aten::mm", "aten::mm"],
         "start_ns": [90_000, shift + 90], "calls": [1, 1], "cpu_ns": [20_000, 20_000]},
        schema.TableKind.OPS,
    )  # fmt: skip
    return run.replace(
        kernels=pa.concat_tables([warm, kernels]),
        ranges=later(run.ranges, ("start_ns", "end_ns")),
        ops=ops,
    )


def test_work_before_an_auto_detected_marker_is_named_synthetic() -> None:
    view = api.analyze(_warmup_then_steps_synthetic())
    it = view.analysis.iterations.info
    assert it.method is IterationMethod.REPEATING_RANGE and it.key_node == "train_step"
    assert view.analysis.time.gpu_kernel_ns == 14 * 100_000  # the warm-up is left out...
    (note,) = (n for n in view.analysis.meta.notes if "before the first" in n)
    assert note.startswith(  # ...and the notes say how much, which range, and what to pass
        "1 kernel launch (300.0 µs of GPU time) and 1 op call came before the first "
        "'train_step', the repeating range tcreport took as the iteration marker"
    )
    assert "--key-node" in note
    assert note in json.loads(api.render_json(view))["notes"]
    assert markdown_escape(note) in api.render_markdown(view)


def test_no_note_when_the_marker_was_given_or_nothing_comes_before_synthetic() -> None:
    given = api.analyze(_warmup_then_steps_synthetic(), api.Slice(key_node="train_step"))
    assert given.analysis.time.gpu_kernel_ns == 14 * 100_000
    assert not [n for n in given.analysis.meta.notes if "before the first" in n]
    found = api.analyze(synthetic_steps_run())  # its first kernel is in the first range
    assert found.analysis.iterations.info.method is IterationMethod.REPEATING_RANGE
    assert not [n for n in found.analysis.meta.notes if "before the first" in n]


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
    view = api.analyze(run.replace(ranges=ranges), api.Slice(iter_start=2))
    it = view.analysis.iterations.info
    assert it.method is IterationMethod.PROFILER_STEP_RANGES
    assert (it.total, it.start, it.stop) == (4, 2, 3)
    assert view.analysis.time.gpu_kernel_ns == 2 * 100_000


def test_unknown_key_node_reports_whole_run_with_candidates() -> None:
    view = api.analyze(
        synthetic_steps_run(), api.Slice(key_node="optimizer.step", allow_empty=True)
    )
    assert view.analysis.iterations.key_node_found is False
    assert view.analysis.time.gpu_kernel_ns == 14 * 100_000  # everything aggregated
    it001 = [f for f in view.findings if f.id == "IT001"]
    assert it001 and "optimizer.step" in it001[0].title
    assert "train_step" in it001[0].detail


def test_iter_start_past_the_end_is_a_usage_error() -> None:
    with pytest.raises(
        UsageError,
        match="^synthetic: iter_start 9 is past the last iteration: the run has 5 \\(0 to 4, key node ",
    ):
        api.analyze(synthetic_steps_run(), api.Slice(key_node="train_step", iter_start=9))


def test_candidates_rank_frequent_names() -> None:
    assert iterations.candidate_key_nodes(synthetic_steps_run())[0] == "train_step"


def test_key_node_on_the_real_two_rank_export(nsys_h100: Path) -> None:
    """Two ranks each run FlashAttnFunc 30 times: 30 iterations, not 60 half-iterations, and
    the aggregated figures are exactly the kept iterations' rows."""
    run = api.load(nsys_h100)
    whole = api.analyze(run)
    view = api.analyze(run, api.Slice(key_node="FlashAttnFunc", iter_start=2, iter_stop=5))
    it = view.analysis.iterations.info
    assert (it.total, it.start, it.stop, it.aggregated) == (30, 2, 5, 4)
    kept = [r for r in view.analysis.iterations.rows if r.aggregated]
    assert [r.iteration for r in kept] == [2, 3, 4, 5]
    assert sum(r.tc_ns + r.non_tc_ns for r in kept) == view.analysis.time.gpu_kernel_ns
    assert sum(r.tc_ns for r in kept) == view.analysis.time.tc_kernel_ns
    assert whole.analysis.time.gpu_kernel_ns is not None
    assert 0 < view.analysis.time.gpu_kernel_ns < whole.analysis.time.gpu_kernel_ns
    missing = api.analyze(run, api.Slice(key_node="no_such_range", allow_empty=True))
    assert missing.analysis.time.gpu_kernel_ns == whole.analysis.time.gpu_kernel_ns
    assert any(f.id == "IT001" and "no_such_range" in f.title for f in missing.findings)


def test_slice_is_checked_once_where_it_is_made_in_api_words() -> None:
    with pytest.raises(OptionError, match="^iter_stop 2 is before iter_start 5$") as raised:
        api.Slice(iter_start=5, iter_stop=2)
    assert raised.value.spelt({"iter_start": "--iter-start", "iter_stop": "--iter-stop"}) == (
        "--iter-stop 2 is before --iter-start 5"
    )
    with pytest.raises(OptionError, match="^timeline_iter -1 is negative"):
        api.Slice(timeline_iter=-1)
    # a value is data: a key node spelt like an option placeholder stays itself
    text = slicing.ineffective(api.Slice(key_node="{iter_start}"), IterationInfo(), False, ())
    assert text is not None and text.spelt().startswith("key_node '{iter_start}' never occurs")


def test_iteration_method_of_an_older_ingest_folder_still_reads() -> None:
    """Before the enum, the method was free text in the ingest folder's metadata."""
    for text, method, source in (
        ("whole run", IterationMethod.WHOLE_RUN, None),
        ("key node 'train_step'", IterationMethod.KEY_NODE, None),
        ("repeating range 'step'", IterationMethod.REPEATING_RANGE, None),
        ("TF profiler window over steps", IterationMethod.TF_WINDOW, "steps"),
        ("something else", None, None),
    ):
        meta = RunMeta.from_json(
            json.dumps({"format": "kineto-json", "path": "x", "iterations": {"method": text}})
        )
        assert (meta.iterations.method, meta.iterations.step_source) == (method, source)
        if method is not None:
            again = RunMeta.from_json(meta.to_json()).iterations
            assert (again.method, again.step_source) == (method, source)
            assert slicing.method_text(again) == slicing.method_text(meta.iterations)


def test_allow_empty_past_the_last_profiler_step_aggregates_every_one_synthetic(
    tmp_path: Path,
) -> None:
    """--allow-empty's promise: a start past the last iteration aggregates the whole run (with a
    note) instead of the exit-2 refusal it gets without the flag."""
    path = equal_host_steps_trace(tmp_path / "steps_synthetic.json", 4)
    run = api.load(path)
    with pytest.raises(OptionError, match="past the last iteration"):
        api.analyze(run, slicing.Slice(iter_start=9))
    a = api.analyze(run, slicing.Slice(iter_start=9, allow_empty=True)).analysis
    info = a.iterations.info
    assert (info.start, info.stop, info.aggregated, info.total) == (0, 3, 4, 4)
    assert any("iteration 9 was asked for first" in n for n in a.meta.notes), a.meta.notes
