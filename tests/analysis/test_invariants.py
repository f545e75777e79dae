"""Invariants every analysed run must satisfy, on every trace we have (bundled samples, every real
trace under ``../shared/realtraces``, and generated runs): the figures add up, shares are shares,
nothing is negative, a figure is null exactly when its input is absent, and every renderer shows
the same number for the same figure."""

from __future__ import annotations

import dataclasses
import io
import json
import re
from collections.abc import Callable
from functools import cache
from html import escape as html_escape
from pathlib import Path
from typing import Any

import known_violations
import markupsafe
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import budget
from rich.console import Console
from trace_paths import NO_TF, NSYS_H100, REALTRACES, ROOT, SAMPLES, have_tf_reader, need, reads_tf

from tcreport import api, fmt
from tcreport.analysis import invariants
from tcreport.analysis.result import Analysis
from tcreport.analysis.violation import Invariant
from tcreport.compare import diff as _diff
from tcreport.model import IterationInfo, Run, RunMeta, SourceFormat
from tcreport.render import html, markdown, notebook_html, summary_json, terminal
from tcreport.render.escape import markdown as markdown_escape
from tcreport.report import Report
from tcreport.schema import TableKind, conform


def _traces() -> list[Path]:
    found = sorted(SAMPLES.glob("*/*.json.gz")) + sorted(SAMPLES.glob("*/*.sqlite"))
    found += sorted(SAMPLES.glob("h200-jax-xla-ncu/*/plugins/profile/*/*.xplane.pb"))
    if REALTRACES.exists():
        for pattern in ("*/*/*.json.gz", "*/*/*.sqlite", "*/*/*.pb"):
            found += sorted(REALTRACES.glob(pattern))
        found += sorted(p for p in REALTRACES.glob("dlprof/*") if p.is_dir())
    found += sorted((ROOT / "tests" / "fixtures").glob("dlprof*synthetic*/*detailed.csv"))
    return found


TRACES = _traces()
ALEXNET = "benchmark_result_2869224_1695835535_trace.json.gz"


@cache
def _report(path: Path) -> Report:
    return api.analyze(api.load(path))


def check_figures(a: Analysis) -> None:
    """What must hold (the checker's invariants, tcreport.analysis.invariants), and how the
    figures are defined against each other."""
    assert invariants.check(a) == ()
    t = a.time
    # the ops' kernel time plus the time no op claims is the kernel time
    if a.breakdown.has_ops and t.gpu_kernel_ns is not None and a.breakdown.kernels:
        op_ns = sum(o.gpu_ns or 0 for o in a.breakdown.ops)
        assert a.breakdown.unattributed_kernel_ns == t.gpu_kernel_ns - op_ns
    # null exactly when the input is absent
    assert (t.gpu_kernel_ns is None) == (
        not a.breakdown.has_kernels and a.meta.reported.gpu_kernel_ns is None
    )
    if not a.breakdown.has_ops:
        assert a.breakdown.unattributed_kernel_ns is None
    if a.breakdown.has_ops:
        assert a.verdict.eligible_op_count is not None and a.verdict.using_op_count is not None


def check_renderers(view: Report) -> None:
    """Terminal, Markdown, HTML, JSON and a diff of the run against itself show the same counts
    and times (each as its format writes them)."""
    a = view.analysis
    t, tc = a.time, a.verdict
    data = json.loads(summary_json.render(view))
    assert data["time"]["gpu_kernel_ns"] == t.gpu_kernel_ns
    assert data["time"]["tc_kernel_ns"] == t.tc_kernel_ns
    assert data["time"]["wall_ns"] == t.wall_ns
    assert data["tensor_core"]["eligible_op_count"] == tc.eligible_op_count
    assert data["tensor_core"]["using_op_count"] == tc.using_op_count
    assert data["tensor_core"]["eligible_not_using_op_count"] == tc.eligible_not_using_op_count
    assert data["tensor_core"]["eligible_not_using_gpu_ns"] == tc.eligible_not_using_gpu_ns
    console = Console(width=240, record=True, file=io.StringIO())
    terminal.render(view, console)
    text = console.export_text()
    assert re.search(rf"GPU kernel time\s+{re.escape(fmt.ns(t.gpu_kernel_ns))}", text)
    assert re.search(rf"Wall time \(aggregated\)\s+{re.escape(fmt.ns(t.wall_ns))}", text)
    assert f"{fmt.count(tc.eligible_op_count)} / {fmt.count(tc.using_op_count)}" in text
    md = markdown.render(view)
    assert (
        # the missed time beside the ops it is spread over, partly-missed ones included: the
        # headline card's figure (per iteration over several), as every output shows it
        f"| {tc.miss_card.value} ({fmt.count(tc.missed_op_count)} "
        f"{fmt.noun(tc.missed_op_count, 'op')}"
        f"{f'; {tc.miss_share_words}' if tc.miss_share_words else ''}) | "
        f"{fmt.ns(t.gpu_kernel_ns)} |" in md
    )
    page = html.render(view)
    assert f"{fmt.ns(t.tc_kernel_ns)} of {fmt.ns(t.gpu_kernel_ns)}" in page
    if tc.eligible_op_count is not None and a.breakdown.has_ops:
        assert (
            f"{fmt.count(tc.eligible_not_using_op_count)} of {fmt.count(tc.eligible_op_count)} "
            f"eligible {fmt.noun(tc.eligible_op_count, 'op')}" in page
        )
    d = _diff.diff(view, view, force=True)
    n = max(1, a.iterations.info.aggregated or 1)
    for key, value in (
        ("gpu_kernel_ns", t.gpu_kernel_ns),
        ("tc_kernel_ns", t.tc_kernel_ns),
        ("wall_ns", t.wall_ns),
        ("eligible_not_using_gpu_ns", tc.eligible_not_using_gpu_ns),
    ):
        f = d.figure(key)
        assert f.base == (None if value is None else value / n), key
    assert d.figure("eligible_op_count").base == tc.eligible_op_count
    assert d.figure("eligible_not_using_op_count").base == tc.eligible_not_using_op_count
    for row in d.ops:  # an XLA op's row is its framework op's, which may pool several
        ops = [x for x in a.breakdown.ops if x.name in row.base_ops]
        assert ops and row.head_ops == row.base_ops
        want = ops[0].uses_tc if len(ops) == 1 else any(x.uses_tc for x in ops)
        assert row.base_uses_tc == want


def _open(path: Path) -> pytest.MarkDecorator | tuple[()]:
    """The xfail(strict) of a trace that breaks an invariant today (tests/known_violations.py)."""
    why = known_violations.reason(path.name)
    return pytest.mark.xfail(reason=why, strict=True) if why else ()


def _cases(*marks: Callable[[Path], pytest.MarkDecorator | tuple[()]]) -> list[Any]:
    """Every trace as a case; a TensorFlow profile skips without the [tf] extra."""
    no_tf = pytest.mark.skipif(not have_tf_reader(), reason=NO_TF)
    return [
        pytest.param(
            p,
            marks=[m for m in (*(f(p) for f in marks), no_tf if reads_tf(p) else ()) if m],
            id=p.name,
        )
        for p in TRACES
    ]


@pytest.mark.parametrize("path", _cases(_open))
def test_figures_add_up(path: Path) -> None:
    check_figures(_report(path).analysis)


@pytest.mark.realtraces
@pytest.mark.parametrize("key_node", ["FlashAttnFunc", "aten::stack"])
def test_figures_add_up_on_the_h100_export_cut_by_a_key_node(key_node: str) -> None:
    """Whole, the export is one iteration; cut at a key node, GPU 1's work of iteration k ran
    into k+1 by up to 8.4 ms until each GPU's step windows were cut disjoint."""
    view = api.analyze(api.load(need(NSYS_H100)), api.Slice(key_node=key_node))
    assert view.analysis.iterations.info.total == {"FlashAttnFunc": 30, "aten::stack": 15}[key_node]
    check_figures(view.analysis)


@pytest.mark.parametrize("path", _cases())
def test_every_renderer_shows_the_same_numbers(path: Path) -> None:
    check_renderers(_report(path))


def test_the_suite_covers_samples_and_real_traces() -> None:
    # the A100 Kineto and H100 nsys samples, the torch.compile trace and the three JAX profiles
    assert len([p for p in TRACES if SAMPLES in p.parents]) == 6
    if REALTRACES.exists():
        assert len(TRACES) >= 12


# -- generated runs ------------------------------------------------------------------------------

_KERNEL_NAMES = (
    "ampere_sgemm_128x64_nn",
    "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32",
    "volta_h884gemm_64x64_ldg8_nn",
    "elementwise_kernel",
    "flash_fwd_kernel",
)
_OPS = (("aten::mm", "mm"), ("aten::add", "add"), ("aten::conv2d", "conv2d"))


@st.composite
def _runs(draw: st.DrawFn) -> Run:
    n = draw(st.integers(1, 30))
    # drawn in this order (the derandomized cases depend on it); typed lists for the op sums below
    names = [draw(st.sampled_from(_KERNEL_NAMES)) for _ in range(n)]
    devices = [draw(st.integers(0, 2)) for _ in range(n)]
    starts = [draw(st.integers(0, 10**9)) for _ in range(n)]
    durations = [draw(st.integers(0, 10**7)) for _ in range(n)]
    op_ids = [draw(st.sampled_from(("0", "1", "2", None))) for _ in range(n)]
    kernels = {
        "name": names,
        "device_id": devices,
        "start_ns": starts,
        "duration_ns": durations,
        "calls": [1] * n,
        "op_id": op_ids,
    }
    with_ops = draw(st.booleans())
    ops = None
    if with_ops:
        op_keys = ["0", "1", "2"]
        ops_rows = {
            "op_id": op_keys,
            "name": [o for o, _ in _OPS],
            "type": [t for _, t in _OPS],
            "calls": [1, 1, 1],
        }
        gpu = [sum(d for d, o in zip(durations, op_ids, strict=True) if o == k) for k in op_keys]
        ops = conform({**ops_rows, "gpu_ns": gpu}, TableKind.OPS)
    memory = None
    if draw(st.booleans()):
        m = draw(st.integers(0, 5))
        memory = conform(
            {
                "kind": ["memcpy_htod"] * m,
                "device_id": [draw(st.integers(0, 2)) for _ in range(m)],
                "start_ns": [draw(st.integers(0, 10**9)) for _ in range(m)],
                "duration_ns": [draw(st.integers(0, 10**6)) for _ in range(m)],
                "calls": [1] * m,
            },
            TableKind.MEMORY,
        )
    meta = RunMeta(format=SourceFormat.KINETO_JSON, path="synthetic.json")
    return Run(meta=meta, kernels=conform(kernels, TableKind.KERNELS), memory=memory, ops=ops)


@settings(max_examples=budget(40), deadline=None)
@given(_runs())
def test_synthetic_generated_runs_keep_the_invariants(run: Run) -> None:
    view = api.analyze(run)
    check_figures(view.analysis)
    check_renderers(view)


# -- the checker itself --------------------------------------------------------------------------


def _broken(view: Report) -> Report:
    """``view`` with more matrix-unit time than kernel time: what a reader bug would give."""
    a = view.analysis
    assert a.time.gpu_kernel_ns is not None
    time = dataclasses.replace(a.time, tc_kernel_ns=a.time.gpu_kernel_ns + 1)
    return dataclasses.replace(view, analysis=dataclasses.replace(a, time=time))


def test_the_checker_fires_and_every_output_names_the_broken_figure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    view = _broken(_report(SAMPLES / "kineto-a100-tf32-alexnet" / ALEXNET))
    found = invariants.check(view.analysis)
    # the figure itself, and the kernel and per-GPU rows that no longer add up to it
    assert [(v.invariant, v.figure) for v in found] == [
        (Invariant.TC_WITHIN_KERNEL, "time.tc_kernel_ns"),
        (Invariant.KERNEL_ROWS_SUM, "time.tc_kernel_ns"),
        (Invariant.DEVICES_SUM, "time.tc_kernel_ns"),
    ]
    with pytest.raises(invariants.InvariantError, match=r"time\.tc_kernel_ns: .* exceeds"):
        invariants.enforce(view.analysis)  # the suite runs strictly (tests/conftest.py)
    monkeypatch.delenv(invariants.STRICT_ENV)  # a user's run: a note in every output
    noted = dataclasses.replace(view, analysis=invariants.enforce(view.analysis))
    data = json.loads(summary_json.render(noted))
    assert data["invariant_violations"] == [
        {"invariant": v.invariant.value, "figure": v.figure, "message": v.message} for v in found
    ]
    console = Console(width=400, record=True, file=io.StringIO())
    terminal.render(noted, console)
    text, md, page = console.export_text(), markdown.render(noted), html.render(noted)
    fragment = notebook_html.render(noted)
    assert 'id="checks"' in page
    for v in found:
        line = f"check failed: {v}"
        assert line in text and f"- {markdown_escape(line)}" in md
        assert html_escape(line) in fragment and f"<li>{markupsafe.escape(v)}</li>" in page


def test_an_analysis_that_breaks_an_invariant_fails_in_strict_mode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The checker runs inside every analysis (result.compute), not only when a test calls it."""
    from tcreport.analysis import figures

    real = figures.time_figures

    def inflated(run: Run, info: IterationInfo) -> figures.TimeFigures:
        t = real(run, info)
        return dataclasses.replace(t, tc_kernel_ns=(t.gpu_kernel_ns or 0) + 1)

    monkeypatch.setattr(figures, "time_figures", inflated)
    run = api.load(SAMPLES / "kineto-a100-tf32-alexnet" / ALEXNET)
    with pytest.raises(invariants.InvariantError, match=r"time\.tc_kernel_ns"):
        api.analyze(run)
    monkeypatch.delenv(invariants.STRICT_ENV)
    noted = api.analyze(run).analysis.violations
    assert (noted[0].invariant, noted[0].figure) == (
        Invariant.TC_WITHIN_KERNEL,
        "time.tc_kernel_ns",
    )


def test_synthetic_profiler_memory_total_over_several_gpus_still_sums() -> None:
    """A DLProf-style input gives memory time only as the profiler's total: with kernels on two
    devices no GPU is known to have had it, so it is a row of its own and the rows still sum (a
    fuzzed DLProf folder whose kernel report named a second device broke this)."""
    from synthetic import kernel_row, synthetic_rows_run

    from tcreport.model import ReportedFigures

    run = synthetic_rows_run(
        kernels=[
            kernel_row("volta_sgemm_128x64_nn", None, 0, 5_000),
            kernel_row("relu_kernel", None, 6_000, 1_000, device=1),
        ],
        fmt=SourceFormat.DLPROF_CSV,
    )
    reported = ReportedFigures(memory_ns=4_000)
    run = run.replace(meta=dataclasses.replace(run.meta, reported=reported), memory=None)
    a = api.analyze(run).analysis  # strict
    rows = {d.device_id: d.memory_ns for d in a.breakdown.devices}
    assert rows == {0: 0, 1: 0, None: 4_000} and a.time.memory_ns == 4_000
