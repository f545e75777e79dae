"""The report's one-iteration timeline: which iteration, what is merged, what the HTML carries.
Real traces first; a synthetic run for the merge arithmetic and hostile names."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import budget
from synthetic import HOSTILE, hostile_run
from trace_paths import REALTRACES, need

from tcreport import api, schema
from tcreport.analysis import activity, iteration_timeline, result, timeline_blocks
from tcreport.analysis.activity import Cat
from tcreport.analysis.slicing import Slice

ROOT = Path(__file__).resolve().parents[2]
H100X2 = ROOT / "sample_traces" / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"


def test_h100x2_timeline_lanes_merges_and_gaps() -> None:
    a = result.compute(api.load(H100X2), with_timeline=True)
    tl = a.steps.timeline
    assert tl is not None and tl.iteration == 0 and tl.chosen == "median"
    assert [lane.label for lane in tl.lanes if lane.kind == "gpu"] == [
        "GPU 0 · stream 7",
        "GPU 1 · stream 15",
    ]
    assert len(tl.blocks) <= iteration_timeline.MAX_BLOCKS
    gpu_blocks = [b for b in tl.blocks if b.cat <= Cat.MEMORY]
    assert sum(b.merged for b in gpu_blocks) == tl.events  # nothing lost, only merged
    assert tl.merged_events == sum(b.merged for b in gpu_blocks if b.merged > 1)
    assert all(0 <= b.start_ns <= tl.span_ns for b in tl.blocks)
    gaps = [b for b in tl.blocks if b.cat == activity.IDLE]
    step_host_idle = sum(r.idle_host_ns for r in a.steps.rows)
    assert sum(b.work_ns for b in gaps) == step_host_idle  # one iteration = the whole breakdown
    assert any(tl.names[b.rule] == "host range" for b in gaps)


def test_resnet50_median_and_requested_iteration() -> None:
    path = need(REALTRACES / "kineto" / "v100-legacy-resnet50")
    run = api.load(next(path.glob("*.json.gz")))
    a = result.compute(run, with_timeline=True)
    durations = {r.iteration: r.duration_ns for r in a.iterations.rows}
    ordered = sorted(durations, key=lambda i: (durations[i], i))
    assert a.steps.timeline is not None
    assert a.steps.timeline.iteration == ordered[(len(ordered) - 1) // 2]
    b = result.compute(run, Slice(timeline_iter=1), with_timeline=True)
    assert b.steps.timeline is not None
    assert (b.steps.timeline.iteration, b.steps.timeline.chosen) == (1, "requested")
    # host-bound gaps inside a steady iteration show with their cause (the data loader runs
    # between iterations, outside every iteration's span: tests/analysis/test_steps.py)
    tl = b.steps.timeline
    assert any(b.cat == activity.IDLE and tl.names[b.rule] == "host range" for b in tl.blocks)


def test_synthetic_sub_pixel_kernels_merge_into_one_block() -> None:
    n = 10_000
    start = np.arange(n, dtype=np.int64) * 100  # 10 000 kernels of 50 ns, 1 ms in all
    k = schema.conform(
        {
            "name": ["tiny"] * (n - 1) + ["big"],
            "start_ns": pa.array(start),
            "duration_ns": pa.array(np.r_[np.full(n - 1, 50), 500_000]),
            "uses_tc": pa.array([False] * (n - 1) + [True]),
            "device_id": pa.array(np.zeros(n, np.int32)),
            "stream_id": pa.array(np.full(n, 7)),
            "iteration": pa.array(np.zeros(n, np.int32)),
            "calls": pa.array(np.ones(n, np.int64)),
        },
        schema.TableKind.KERNELS,
    )
    tl = iteration_timeline.build(activity.collect(k, None), k, None, None, 0, "median")
    assert tl is not None
    big = [b for b in tl.blocks if b.merged == 1 and b.cat == Cat.TC]
    assert len(big) == 1 and tl.names[big[0].name] == "big" and big[0].verdict == "yes"
    tiny = [b for b in tl.blocks if tl.names[b.name] == "tiny"]
    assert sum(b.merged for b in tiny) == n - 1  # every tiny kernel is in some block
    assert len(tiny) <= tl.span_ns // tl.column_ns + 1  # at most one block per column
    assert tl.merged_events >= n - 1 - len(tiny)  # a column holding one kernel is not "merged"
    assert len(tl.blocks) <= iteration_timeline.COLUMNS + 2


def test_synthetic_hostile_names_stay_escaped_in_the_timeline() -> None:
    html = api.render_html(api.analyze(hostile_run(), with_timeline=True))
    start = html.index('<svg class="tl-lanes"')
    lanes = html[start : html.index("</svg>", start)]
    assert HOSTILE not in lanes and "&lt;/script&gt;&lt;img" in lanes
    assert html.count("<script") == 2  # the summary JSON and report.js, nothing more


def _reference_blocks(
    lane: list[int], start: list[int], dur: list[int], col: int
) -> list[tuple[int, int, int, int, int, int]]:
    """The merge rule by its definition: (lane, start, width, count, work, lead id) per block."""
    out = [(ln, s, d, 1, d, i) for i, (ln, s, d) in enumerate(zip(lane, start, dur, strict=True))
           if d >= col]  # fmt: skip
    cells: dict[tuple[int, int], list[int]] = {}
    for i, (ln, s, d) in enumerate(zip(lane, start, dur, strict=True)):
        if d < col:
            cells.setdefault((ln, s // col), []).append(i)
    for (ln, c), members in cells.items():
        lead = min(members, key=lambda i: (-dur[i], start[i], i))  # longest, earliest, first
        out.append((ln, c * col, -1, len(members), sum(dur[i] for i in members), lead))
    return sorted(out)


@settings(max_examples=budget(80), deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 5_000), st.integers(0, 900)),
        min_size=1,
        max_size=60,
    ),
    st.integers(1, 40),
    st.integers(2, 30),
    st.sampled_from([1, 7, 1 << 20]),
    st.integers(-3, 3),
    st.booleans(),
)
def test_synthetic_premerge_and_resolution_match_the_definition(
    events: list[tuple[int, int, int]], lo: int, max_blocks: int, slice_rows: int, origin: int,
    lengths: bool,
) -> None:  # fmt: skip
    """Whatever the slices the events are read in, wherever the window starts, and whether
    the events come as ends or as lengths."""
    lane = np.array([e[0] for e in events], np.int64)
    start = np.array([e[1] for e in events], np.int64)
    dur = np.array([e[2] for e in events], np.int64)
    stop = dur if lengths else start + origin + dur
    with pytest.MonkeyPatch.context() as m:
        m.setattr(timeline_blocks, "SLICE", slice_rows)
        items = timeline_blocks.premerge(
            lane, start + origin, stop, origin, 0, 0, None, 0, lo, lengths=lengths
        )
    col, blocks = timeline_blocks.resolution(items, lo, 4, max_blocks)
    expected = _reference_blocks(lane.tolist(), start.tolist(), dur.tolist(), col)
    got = sorted(
        zip(blocks.lane.tolist(), blocks.start.tolist(), blocks.alone_ns.tolist(),
            blocks.count.tolist(), blocks.work.tolist(), blocks.ref.tolist(), strict=True)
    )  # fmt: skip
    assert got == expected
    # the column is lo times a power of two, the finest that fits (or one past every event)
    k = (col // lo).bit_length() - 1
    assert col == lo << k
    finer = col // 2
    # within the cap, or no coarser column could help: one block per lane
    assert len(expected) <= max_blocks or len(expected) == len(set(lane.tolist()))
    if k and finer >= lo:
        assert (
            len(_reference_blocks(lane.tolist(), start.tolist(), dur.tolist(), finer)) > max_blocks
        )
