"""Every GPU event belongs to the step that launched it, and each GPU's step windows are ordered
and disjoint (analysis.iterations, analysis.windows): synthetic edge cases, then the invariants on
every real Kineto trace."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kineto_synthetic import KERNEL, Trace
from trace_paths import REALTRACES

from tcreport import api, schema
from tcreport.analysis import activity, steps
from tcreport.analysis.steps import StepRow

US = 1_000
KINETO = sorted((REALTRACES / "kineto").glob("*/*.json.gz")) if REALTRACES.exists() else []


def _steps(path: Path) -> tuple[StepRow, ...]:
    return api.analyze(api.load(path)).analysis.steps.rows


def _disjoint(rows: tuple[StepRow, ...]) -> None:
    """Per GPU, in iteration order: each window opens where the previous one closed, at or after
    its span ended."""
    by_dev: dict[int | None, list[StepRow]] = {}
    for r in rows:
        by_dev.setdefault(r.device_id, []).append(r)
    for mine in by_dev.values():
        mine.sort(key=lambda r: r.iteration)
        for a, b in zip(mine, mine[1:], strict=False):
            assert a.window_ns is not None
            assert a.start_ns + a.span_ns <= a.start_ns + a.window_ns == b.start_ns
        assert mine[-1].window_ns is None


def test_synthetic_memset_launched_in_a_step_stays_in_it(tmp_path: Path) -> None:
    """The issue's minimal case: K1 launched in step 1 runs 20-300 µs, a memset launched in step 1
    runs at 150 µs on another stream while the host is already in step 2, K2 runs 300-400 µs. By
    GPU time the memset opened step 2's window at 150 µs with 145 µs of invented idle."""
    t = Trace()
    t.step(1, 0, 100)
    t.step(2, 100, 150)
    t.launch("cudaLaunchKernel", 10, "kernel", KERNEL, 20, 280)
    t.launch("cudaMemsetAsync", 50, "gpu_memset", "Memset (Device)", 150, 5, stream=8)
    t.launch("cudaLaunchKernel", 120, "kernel", KERNEL, 300, 100)
    rows = _steps(t.write(tmp_path / "memset_synthetic.json.gz"))
    assert [(r.iteration, r.start_ns % (1000 * US), r.span_ns) for r in rows] == [
        (0, 20 * US, 280 * US),
        (1, 300 * US, 100 * US),
    ]
    for r in rows:
        assert r.idle_launch_ns == r.idle_host_ns == 0
    assert rows[0].memory_total_ns == 5 * US and rows[1].memory_total_ns == 0
    _disjoint(rows)


def _activity(rows: list[tuple[int, int, int, int]]) -> activity.Activity:
    """(start µs, end µs, stream, iteration) kernels on GPU 0."""
    k = schema.conform(
        {
            "name": [KERNEL] * len(rows),
            "start_ns": [r[0] * US for r in rows],
            "duration_ns": [(r[1] - r[0]) * US for r in rows],
            "stream_id": [r[2] for r in rows],
            "iteration": [r[3] for r in rows],
            "device_id": [0] * len(rows),
            "calls": [1] * len(rows),
            "uses_tc": pa.array([False] * len(rows)),
        },
        schema.TableKind.KERNELS,
    )
    act = activity.collect(k, None)
    assert act is not None
    return act


def test_synthetic_straggler_is_cut_at_the_next_window() -> None:
    """A kernel of step 0 on a second stream runs 250-450 µs while step 1's K2 starts at 300:
    step 0's window closes at 300, and the straggler's time after it counts in step 1's window,
    where the GPU really was busy with it. Spans add up to the active span, no more."""
    act = _activity([(20, 300, 7, 0), (250, 450, 8, 0), (300, 400, 7, 1)])
    rows = steps.breakdown(act)
    assert [(r.start_ns, r.span_ns) for r in rows] == [(20 * US, 280 * US), (300 * US, 150 * US)]
    assert sum(r.span_ns for r in rows) == (450 - 20) * US
    assert all(r.idle_launch_ns + r.idle_host_ns == 0 for r in rows)
    _disjoint(rows)


def test_synthetic_windows_never_go_back_in_time() -> None:
    """Step 1's only kernel starts before step 0's (another stream): its window cannot open
    before step 0's, so it opens where step 0's does and step 0's is empty of its own."""
    act = _activity([(100, 200, 7, 0), (50, 150, 8, 1), (300, 350, 7, 2)])
    rows = steps.breakdown(act)
    assert sum(r.span_ns for r in rows) <= (350 - 50) * US


def test_synthetic_unlaunched_events_are_left_out_and_said(tmp_path: Path) -> None:
    """A kernel with no launch record (queued before profiling began) is in no iteration, as in
    HTA and TraceLens, and the notes say how many and how much GPU time."""
    t = Trace()
    t.gpu_only("kernel", KERNEL, 0, 50, corr=9999)
    t.step(1, 10, 100)
    t.step(2, 110, 100)
    t.launch("cudaLaunchKernel", 20, "kernel", KERNEL, 60, 40)
    t.launch("cudaLaunchKernel", 120, "kernel", KERNEL, 130, 40)
    a = api.analyze(api.load(t.write(tmp_path / "queued_synthetic.json.gz"))).analysis
    assert [r.span_ns for r in a.steps.rows] == [40 * US, 40 * US]
    assert a.time.gpu_kernel_ns == 80 * US  # the aggregated iterations' kernels only
    assert any(
        n.startswith("1 GPU events (50.0 µs of GPU time) have no launch") for n in a.meta.notes
    )


@pytest.mark.skipif(not KINETO, reason="needs ../shared/realtraces/kineto")
@pytest.mark.parametrize("path", KINETO, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_step_invariants_on_real_kineto_traces(path: Path) -> None:
    """Per GPU: windows ordered and disjoint, the iteration spans add up to no more than the GPU's
    active span (first to last event of the iterations), every breakdown's parts add up, HTA's
    idle split adds up to the idle; eligible GPU time never exceeds kernel time."""
    run = api.load(path)
    a = api.analyze(run).analysis
    _disjoint(a.steps.rows)
    act = activity.collect(run.kernels, run.memory)
    assert act is not None
    for dev in {r.device_id for r in a.steps.rows}:
        mine = [r for r in a.steps.rows if r.device_id == dev]
        active = max(r.start_ns + r.span_ns for r in mine) - min(r.start_ns for r in mine)
        assert sum(r.span_ns for r in mine) <= active
        on = act.device == (dev if dev is not None else -1)
        assert active <= int(act.end[on].max() - act.start[on].min())
    for r in a.steps.rows:
        assert sum(r.parts) == r.span_ns
        assert r.idle_queue is not None and sum(r.idle_queue) == r.idle_launch_ns + r.idle_host_ns
        assert 0 <= r.memory_total_ns <= r.span_ns and r.communication_total_ns <= r.span_ns
    tc, t = a.verdict, a.time
    assert tc.eligible_gpu_ns is not None and t.gpu_kernel_ns is not None
    assert tc.eligible_gpu_ns <= t.gpu_kernel_ns
    assert np.all(act.start <= act.end)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 2000),
            st.integers(0, 400),
            st.integers(0, 2),
            st.integers(0, 4),
            st.integers(0, 1),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_windows_are_disjoint_and_keep_every_busy_instant(
    rows: list[tuple[int, int, int, int, int]],
) -> None:
    """Whatever the launch order and streams: per GPU the windows are ordered and disjoint, the
    spans add up to no more than the active span, and each busy instant is counted exactly once
    (the busy time of all steps is the union of the GPU's intervals)."""
    k = schema.conform(
        {
            "name": [KERNEL] * len(rows),
            "start_ns": [r[0] for r in rows],
            "duration_ns": [r[1] for r in rows],
            "stream_id": [r[2] for r in rows],
            "iteration": [r[3] for r in rows],
            "device_id": [r[4] for r in rows],
            "calls": [1] * len(rows),
            "uses_tc": pa.array([False] * len(rows)),
        },
        schema.TableKind.KERNELS,
    )
    act = activity.collect(k, None)
    assert act is not None
    out = steps.breakdown(act)
    _disjoint(out)
    for dev in {r[4] for r in rows}:
        mine = sorted((r[0], r[0] + r[1]) for r in rows if r[4] == dev)
        union, reach = 0, None
        for s, e in mine:
            if reach is None or s > reach:
                union += e - s
                reach = e
            elif e > reach:
                union += e - reach
                reach = e
        busy = [r for r in out if r.device_id == dev]
        assert sum(r.span_ns - r.idle_launch_ns - r.idle_host_ns for r in busy) == union
        assert sum(r.span_ns for r in busy) <= max(e for _, e in mine) - mine[0][0]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**31), 2**31 - 1)),
        max_size=40,
    )
)
def test_active_pairs_are_the_distinct_iteration_device_pairs(
    pairs: list[tuple[int, int]],
) -> None:
    """The one-key form gives the pairs a set of tuples gives, int32 extremes and -1 included."""
    it = np.array([p[0] for p in pairs], dtype=np.int32)
    dev = np.array([p[1] for p in pairs], dtype=np.int32)
    its, devs = steps._active_pairs(it, dev)
    got = list(zip(its.tolist(), devs.tolist(), strict=True))
    assert set(got) == set(pairs) and len(got) == len(set(pairs))
