"""What a hostile tester found in step truth (#26) and the invariants (#22 item 4): the host
running ahead of the GPU, a straggler on a second stream, steps whose windows vanish, a kernel
longer than the run, broken figures reaching CI, collectives judged as compute, and option types
the Python API let through. Each case is the tester's minimal trace, rebuilt here (synthetic);
the real traces' expectations live in the HTA differential tests and stay as they are."""

from __future__ import annotations

import dataclasses
import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from kineto_synthetic import KERNEL, Trace
from trace_paths import REALTRACES, need

from tcreport import api
from tcreport.analysis import invariants
from tcreport.analysis.violation import Invariant
from tcreport.batch import work
from tcreport.compare import diff as compare
from tcreport.compare import gates
from tcreport.errors import OptionError
from tcreport.report import Report

SGEMM = "ampere_sgemm_128x64_nn"


def _cpu_ahead(path: Path) -> Path:
    """The tester's cpu_ahead: four 50 µs host steps; the GPU runs each step's 1 ms kernel back
    to back, so the last host step 'lasts' until the GPU backlog drains (3.86 ms)."""
    t = Trace()
    for n in range(4):
        hs = 10 + n * 50
        t.step(n, hs, 45)
        e = t.op("aten::mm", hs + 1, 40)
        t.launch("cudaLaunchKernel", hs + 2, "kernel", SGEMM, 20 + n * 1000, 1000, eid=e)
        t.launch(
            "cudaMemsetAsync", hs + 10, "gpu_memset", "Memset (Device)",
            20 + n * 1000 + 999.5, 0.4, eid=e,
        )  # fmt: skip
    return t.write(path)


def _two_streams(path: Path) -> Path:
    """Step 0's kernel runs 20-520 µs on stream 7; step 1's first kernel starts at 70 µs on
    stream 8, so step 0's kernel straggles 450 µs into step 1's window."""
    t = Trace()
    t.step(0, 10, 40)
    e = t.op("aten::mm", 11, 30)
    t.launch("cudaLaunchKernel", 12, "kernel", SGEMM, 20, 500, eid=e)
    t.step(1, 60, 40)
    e = t.op("aten::add", 61, 30)
    t.launch("cudaLaunchKernel", 62, "kernel", KERNEL, 70, 10, stream=8, eid=e)
    t.launch("cudaLaunchKernel", 63, "kernel", SGEMM, 520, 100, eid=e)
    t.step(2, 110, 40)
    e = t.op("aten::mm", 111, 30)
    t.launch("cudaLaunchKernel", 112, "kernel", SGEMM, 630, 100, eid=e)
    return t.write(path)


def _report(path: Path) -> Report:
    return api.analyze(api.load(path))


def test_synthetic_cpu_ahead_judges_gpu_step_times_not_host_lengths(tmp_path: Path) -> None:
    """GPU steps of exactly 1 ms: no IT003 and no outlier, though host lengths are 50/50/50/3860
    µs; the last step has no GPU step time, and that alone must not send the judgement back to
    the host's lengths."""
    report = _report(_cpu_ahead(tmp_path / "cpu_ahead_synthetic.json.gz"))
    rows = report.analysis.iterations.rows
    assert [r.duration_ns for r in rows] == [50_000, 50_000, 50_000, 3_860_000]
    assert [r.gpu_step_ns for r in rows] == [1_000_000, 1_000_000, 1_000_000, None]
    assert not any(r.outlier for r in rows)
    assert "IT003" not in {f.id for f in report.findings}


def test_synthetic_two_streams_iteration_rows_show_the_step_split(tmp_path: Path) -> None:
    """The iteration table shows what the step breakdown books: step 0's kernel cut at step 1's
    window edge (50 µs in a 50 µs span), its rest in step 1 (550 µs busy in a 550 µs span); and
    two GPU step times are too few to judge variance, so no IT003 from host lengths either."""
    report = _report(_two_streams(tmp_path / "two_streams_synthetic.json.gz"))
    a = report.analysis
    assert [(s.iteration, s.span_ns) for s in a.steps.rows] == [
        (0, 50_000),
        (1, 550_000),
        (2, 100_000),
    ]
    for r in a.iterations.rows:
        shown = r.stacked
        (step,) = r.steps
        assert shown.tc_ns + shown.other_ns + shown.memory_ns + shown.idle_ns == step.span_ns
    assert [r.stacked.other_ns for r in a.iterations.rows] == [50_000, 550_000, 100_000]
    assert "IT003" not in {f.id for f in report.findings}
    page = api.render_html(report)
    table = page[page.index('aria-sort="ascending">iteration') :]
    table = table[: table.index("</table>")]
    assert '<td class="num" data-v="50000">50.0 µs</td><td class="num" data-v="0">' in table
    assert 'data-v="500000"' not in table  # no 500 µs of kernels in a 50 µs span


def test_synthetic_the_within_span_invariant_fires(tmp_path: Path) -> None:
    """An iteration row whose stack holds more work than its window's span is reported."""
    a = _report(_two_streams(tmp_path / "two_streams_synthetic.json.gz")).analysis
    r0 = a.iterations.rows[0]
    (step,) = r0.steps
    swollen = dataclasses.replace(step, other_compute_ns=500_000)  # the old table's figure
    rows = (dataclasses.replace(r0, steps=(swollen,)), *a.iterations.rows[1:])
    broken = dataclasses.replace(a, iterations=dataclasses.replace(a.iterations, rows=rows))
    found = {(v.invariant, v.figure) for v in invariants.check(broken)}
    assert (Invariant.ITERATION_WITHIN_SPAN, "iterations.rows[0, GPU 0].work_ns") in found


def test_synthetic_steps_whose_windows_vanish_are_said(tmp_path: Path) -> None:
    """Four steps whose kernels (two streams) all start at 20 µs: steps 0-2 have empty windows
    and no row; the notes say which."""
    t = Trace()
    for n in range(4):
        t.step(n, 10 + n * 50, 45)
        e = t.op("aten::mm", 11 + n * 50, 40)
        t.launch("cudaLaunchKernel", 12 + n * 50, "kernel", SGEMM, 20, 1000, 7 + n % 2, eid=e)
    a = _report(t.write(tmp_path / "vanish_synthetic.json.gz")).analysis
    assert [s.iteration for s in a.steps.rows] == [3]
    (note,) = [n for n in a.meta.notes if "no row in the step breakdown" in n]
    assert (
        note.startswith("3 step(s) with GPU work") and "iteration 0 (GPU 0), 1 (GPU 0), 2" in note
    )


def test_synthetic_a_kernel_longer_than_the_run_is_dropped_at_ingest(tmp_path: Path) -> None:
    """A one-hour kernel during which three later kernels of its own stream start (the tester's
    poison_long) is dropped with a note, not booked as an hour of step 3."""
    t = Trace()
    for n in range(4):
        t.step(n, 10 + n * 50, 45)
        e = t.op("aten::mm", 11 + n * 50, 40)
        dur = 3600e6 if n == 0 else 1000
        t.launch("cudaLaunchKernel", 12 + n * 50, "kernel", SGEMM, 20 + n * 1000, dur, eid=e)
    run = api.load(t.write(tmp_path / "long_synthetic.json.gz"))
    assert run.kernels is not None and run.kernels.num_rows == 3
    assert any("still running when the next two events" in n for n in run.meta.notes)
    a = api.analyze(run).analysis
    assert a.time.gpu_kernel_ns == 3_000_000


def test_real_windows_export_keeps_its_overlapping_pairs() -> None:
    """The real Nsight Systems 2022.1 export records a kernel twice and one inside its
    predecessor on the same stream: pairs, which the stream check leaves alone."""
    path = need(REALTRACES / "nsys" / "v2022.1-windows-synthetic" / "con_kernel.sqlite")
    run = api.load(path)
    assert run.kernels is not None and run.kernels.num_rows == 9
    assert not any("still running" in n for n in run.meta.notes)


@pytest.mark.parametrize(
    "trace",
    ["a100-ddp-nccl-3step/nccl_data.json.gz", "two-rank-sampled/sampled_rank-0.json.gz"],
)
def test_real_ddp_communication_ops_are_not_op001(trace: str) -> None:
    """record_param_comms (and c10d::/nccl: ops) carry collectives' time: CM002's, not OP001's."""
    report = _report(need(REALTRACES / "kineto" / trace))
    titles = [f.title for f in report.findings if f.id == "OP001"]
    assert not [t for t in titles if "record_param_comms" in t or "nccl" in t.lower()]
    assert report.fix_first is not None and report.fix_first.id == "CM002"


@pytest.mark.parametrize(
    ("options", "word"),
    [
        ({"iter_start": "1"}, "iter_start must be a whole number"),
        ({"iter_start": 1.5}, "iter_start must be a whole number"),
        ({"iter_stop": math.nan}, "iter_stop must be a whole number"),
        ({"iter_start": True}, "iter_start must be a whole number"),
        ({"key_node": 5}, "key_node must be an op or range name"),
        ({"allow_empty": "yes"}, "allow_empty must be True or False"),
    ],
)
def test_synthetic_option_types_are_refused_before_reading(
    tmp_path: Path, options: dict[str, object], word: str
) -> None:
    """A wrong type is an OptionError in the API's words, raised before the trace is opened (the
    path here does not exist, so reading it first would be an InputError)."""
    with pytest.raises(OptionError, match=word):
        api.open(tmp_path / "absent_synthetic.json.gz", **options)  # type: ignore[arg-type]


def test_synthetic_numpy_integers_are_iteration_numbers(tmp_path: Path) -> None:
    slc = api.Slice(iter_start=np.int64(1), iter_stop=np.int32(2))  # type: ignore[arg-type]
    assert (slc.iter_start, slc.iter_stop) == (1, 2) and type(slc.iter_start) is int


def _broken(view: Report) -> Report:
    a = view.analysis
    time = dataclasses.replace(a.time, tc_kernel_ns=(a.time.gpu_kernel_ns or 0) + 1)
    broken = dataclasses.replace(a, time=time)
    return dataclasses.replace(
        view, analysis=dataclasses.replace(broken, violations=invariants.check(broken))
    )


def test_synthetic_broken_figures_fail_check_mark_batch_and_diff(tmp_path: Path) -> None:
    """The analysis' violations list decides; check fails, the batch row carries them, the diff
    says which side is broken."""
    path = _cpu_ahead(tmp_path / "cpu_ahead_synthetic.json.gz")
    good = _report(path)
    bad = _broken(good)
    assert bad.analysis.violations
    assert gates.check(good, gates.Gates(min_tc_share=0.0)).passed
    result = gates.check(bad, gates.Gates(min_tc_share=0.0))
    assert [r.name for r in result.failures] == ["invariants"]
    assert "run's figures break" in result.failures[0].message
    task = work.Task(str(path), path.name, "r1", "h", 0.0, "kineto-json")
    when = datetime(2026, 1, 1, tzinfo=UTC)
    row = work._runs_table(task, bad, when, "trace", 0.1).to_pylist()[0]
    assert row["status"] == "ok" and "tc-within-kernel-time" in row["invariant_violations"]
    clean = work._runs_table(task, good, when, "trace", 0.1).to_pylist()[0]
    assert clean["invariant_violations"] is None
    d = compare.diff(good, bad)
    assert any(n.startswith("head has broken figures") for n in d.notes)
    assert not any("base has broken" in n for n in d.notes)
