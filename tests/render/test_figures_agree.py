"""Contradictions once seen on the bundled samples and real traces: each figure now has one
definition, and every place that shows it agrees (issue "one truth per figure")."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console
from trace_paths import REALTRACES, SAMPLES

from tcreport import api, fmt
from tcreport.compare import diff as _diff
from tcreport.render import diff_html, diff_markdown, html, terminal
from tcreport.report import Report

A100 = SAMPLES / "kineto-a100-tf32-alexnet" / "benchmark_result_2869224_1695835535_trace.json.gz"
H100 = SAMPLES / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"
V100 = REALTRACES / "kineto" / "v100-legacy-resnet50" / "worker0.1623143089861.pt.trace.json.gz"
BERT = (
    REALTRACES
    / "kineto"
    / "h100-bf16-bert-small"
    / "gaunernst_bert-small-uncased__1016001.redacted.json.gz"
)


def _report(path: Path) -> Report:
    if not path.exists():
        pytest.skip(f"real trace not available: {path}")
    return api.analyze(api.load(path))


def test_a100_counts_agree_between_headline_and_finding() -> None:
    r = _report(A100)
    tc = r.analysis.verdict
    assert (tc.eligible_op_count, tc.using_op_count, tc.partly_using_op_count) == (2, 1, 1)
    # the two misses are split by cause: addmm's float32 GEMM (TF32 off for matmuls, TC001) and
    # cudnn_convolution's CUDA-core calls while its other calls ran TF32 (TC004); together they
    # name as many ops as the headline's eligible-not-using count
    by_id = {f.id: f for f in r.findings}
    # named fix: the title names PyTorch's matmul switch, as TC004 may say cuDNN's is on
    assert by_id["TC001"].title.startswith(
        "Matmul TF32 (torch.backends.cuda.matmul.allow_tf32) is off: 1 eligible op runs"
    )
    assert by_id["TC004"].title.startswith("1 Tensor Core eligible op did not use")
    # named fix (fix11b): the JSON's counts add up (1 using + 1 using in no call = 2 eligible);
    # the ops with a missed call, the partly using convolution included, are missed_op_count
    assert (tc.missed_op_count, tc.eligible_not_using_op_count) == (2, 1)
    assert by_id["TC004"].title.endswith("did not use Tensor Cores (only in some of its calls)")
    console = Console(width=200, record=True, file=io.StringIO())
    terminal.render(r, console)
    assert (
        "2 / 1 (only in some of its calls)" in console.export_text()
    )  # figures.in_some_calls_only


def test_a100_wall_time_is_the_range_gp001_uses() -> None:
    r = _report(A100)
    wall = r.analysis.time.wall_ns
    assert wall is not None and r.analysis.time.busy is not None
    assert r.analysis.time.busy.range_ns == wall
    gp001 = next(f for f in r.findings if f.id == "GP001")
    assert f"of the {fmt.ns(wall)} aggregated range" in gp001.detail


def test_a100_op_tc_time_is_its_tc_kernels() -> None:
    a = _report(A100).analysis
    conv = next(o for o in a.breakdown.ops if o.name == "aten::cudnn_convolution")
    assert conv.tc_ns == 1_814_000 == a.time.tc_kernel_ns
    conv_type = next(g for g in a.breakdown.op_types if g.name == "cudnn_convolution")
    assert conv_type.tc_ns == conv.tc_ns
    assert sum(g.tc_ns for g in a.breakdown.op_types) <= (a.time.tc_kernel_ns or 0)


def test_a100_diff_shows_the_reports_verdict() -> None:
    r = _report(A100)
    d = _diff.diff(r, r)
    row = next(x for x in d.ops if x.key == "aten::cudnn_convolution")
    assert row.base_uses_tc is True
    # a self-diff's Markdown lists no row (none changed); the HTML lists every row
    assert "aten::cudnn\\_convolution" not in diff_markdown.render(d, "0")
    page = diff_html.render(d, "0")
    line = next(x for x in page.splitlines() if ">aten::cudnn_convolution</th>" in x)
    assert "yes → yes" in line


def test_v100_gpu_busy_card_equals_gp001() -> None:
    r = _report(V100)
    b = r.analysis.time.busy
    assert b is not None and b.share is not None
    page = html.render(r)
    assert f"{fmt.pct(b.share)}</" in page  # the card
    (gp,) = [f for f in r.findings if f.id == "GP001"]
    assert fmt.pct(b.share).replace(" ", "") in gp.title  # the rules write "55.5%"


def test_h100_iterations_are_per_gpu_and_no_empty_shape_columns() -> None:
    r = _report(H100)
    a = r.analysis
    (row,) = a.iterations.rows
    assert len(row.gpus) == 2
    for g in row.gpus:
        # idle is the step breakdown's (measured, not duration minus kernel time), so each GPU's
        # parts fill its GPU span exactly; nothing overlaps on this trace (NCCL shares the compute
        # stream), so the summed kernel columns plus idle are that span too, inside the iteration
        assert g.step is not None and not g.idle_estimated
        assert g.stacked.total_ns == g.step.span_ns <= row.duration_ns
        assert g.tc_ns + g.non_tc_ns + g.memory_ns + g.idle_ns == g.step.span_ns
        assert g.idle_ns > 0
    assert sum(g.tc_ns for g in row.gpus) == row.tc_ns
    assert not a.breakdown.ops_have_shapes and not a.precision.ops_have_dtype
    page = html.render(r)
    assert "The input records no data types or shapes for its ops" in page
    assert sum(1 for o in a.breakdown.ops if o.scope) > 0


def test_single_profiler_step_fills_wall_time() -> None:
    r = _report(BERT)
    a = r.analysis
    assert a.iterations.info.total == 1 and a.iterations.info.mean_ns is not None
    assert a.time.wall_ns == round(a.iterations.info.mean_ns)
    for f in r.findings:
        assert "no iteration split" not in f.detail


@pytest.mark.realtraces
def test_dlprof_csv_device_memory_is_the_total(dlprof_cnn: Path) -> None:
    r = api.analyze(api.load(dlprof_cnn))
    data = json.loads(api.render_json(r))
    assert data["time"]["memory_ns"] == 66690
    assert sum(d["memory_ns"] for d in data["devices"]) == 66690


def test_no_html_figure_is_negative_on_samples() -> None:
    for path in (A100, H100):
        page = html.render(_report(path))
        assert not re.search(r">-\d", page)


def _terminal_text(view: Report) -> str:
    buf = io.StringIO()
    terminal.render(view, Console(file=buf, width=200, color_system=None, highlight=False))
    return buf.getvalue()


@pytest.mark.parametrize("path", [A100, H100], ids=["a100-named", "h100x2-unnamed"])
def test_gpu_label_is_one_text_in_every_renderer(path: Path) -> None:
    """The A100 sample names its GPU; the H100 export has no TARGET_INFO_GPU table (no name), so
    every output says the generation its kernel names give, as the diff does (it said "unknown"
    beside the diff's "Hopper")."""
    from tcreport.render import markdown, notebook_html

    view = _report(path)
    label = view.analysis.gpu_names()
    hopper = "Hopper (inferred from kernel names)"
    assert label == ("NVIDIA A100-PG509-200" if path == A100 else hopper)
    assert label == view.analysis.gpu.label == api.diff(view, view).head.gpu
    assert f"; {label})" in _terminal_text(view)
    assert f" · {label} · " in markdown.render(view)
    assert f" · {label} · " in notebook_html.render(view)
    assert f"<dt>GPU 0</dt><dd>{label}" in html.render(view)


def test_flop_figures_and_gap_label_in_html_come_from_fmt() -> None:
    """BERT-small on an H100 (real): the throughput note's FLOPs and TFLOP/s are fmt's text, and
    the launch-bound label follows the analysis threshold instead of a typed-in '100 µs'."""
    from tcreport.analysis.timeline import LAUNCH_GAP_NS

    view = _report(BERT)
    t = view.analysis.throughput
    assert t is not None and t.tflops is not None
    page = html.render(view)
    assert f"{fmt.flops(t.flops)} in {fmt.ns(t.wall_ns)}" in page
    assert f"{fmt.tflops(t.tflops)} achieved" in page
    assert fmt.flops(4_406_888_448) == "4.41 GFLOP" and fmt.flops(999) == "999 FLOP"
    assert fmt.ns(LAUNCH_GAP_NS, 0) == "100 µs"
    assert f"gaps &lt; {fmt.ns(LAUNCH_GAP_NS, 0)})" in page  # the step chart's legend


CNN = SAMPLES / "h200-torch-cnn-ncu" / "cnn_fp32" / "torch_cnn.pt.trace.json.gz"


def test_eligible_time_not_on_tc_is_one_figure_with_one_unit_everywhere() -> None:
    """Over several iterations the headline's "eligible GPU time not on Tensor Cores" is per
    iteration in every output, labelled so; the terminal, Markdown and notebook said the total
    (1.5 ms) where the HTML card said 381.7 µs / iteration for the same run."""
    from tcreport.render import markdown, notebook_html

    r = _report(CNN)
    v = r.analysis.verdict
    assert (r.analysis.iterations.info.aggregated or 0) > 1 and v.eligible_not_using_gpu_ns
    per = v.eligible_not_using_per_iteration_ns
    assert per is not None and per < v.eligible_not_using_gpu_ns
    shown = f"{fmt.ns(per)} / iteration"
    assert v.miss_card.value == shown
    assert f'<div class="v">{shown}</div><div class="k">eligible GPU time not on Tensor Cores' in (
        html.render(r)
    )
    console = Console(width=200, record=True, file=io.StringIO())
    terminal.render(r, console)
    # beside the totals its share of kernel time (analysis: Verdict.miss_share_words)
    beside = f"{shown} ({fmt.pct(v.eligible_not_tc_share)} of kernel time)"
    assert v.miss_share_words == f"{fmt.pct(v.eligible_not_tc_share)} of kernel time"
    assert re.search(rf"^Eligible GPU time not on TC\s+{re.escape(beside)}\s*$",
                     console.export_text(), re.MULTILINE)  # fmt: skip
    assert f"| {shown} (" in markdown.render(r)
    assert f"eligible time not on Tensor Cores: {shown} in " in notebook_html.render(r)
    tc = json.loads(api.render_json(r))["tensor_core"]
    assert tc["eligible_not_using_per_iteration_ns"] == round(per)
    assert tc["eligible_not_using_gpu_ns"] == v.eligible_not_using_gpu_ns  # the total, as before


def test_a_miss_that_rounds_to_zero_percent_is_not_called_0_0_percent() -> None:
    """A missed time under 0.05 % of kernel time read "(0.0 % of kernel time)" beside a nonzero
    figure (hostile17); it reads "under 0.1 %"."""
    import dataclasses

    v = _report(CNN).analysis.verdict
    tiny = dataclasses.replace(v, eligible_not_tc_share=0.0001)
    assert tiny.miss_share_words == "under 0.1 % of kernel time"
    assert dataclasses.replace(v, eligible_not_tc_share=0.0005).miss_share_words == (
        "0.1 % of kernel time"
    )
