"""One truth for idle time: the step breakdown is the per-iteration, per-GPU idle every output
shows where kernels carry per-launch timestamps (the HTML iteration table and chart, the summary
JSON's steps, the launch-bound finding); the old estimate survives only, marked, for inputs
without them. Also: host time of a CPU-only run counts nested ops once, and per-iteration figures
come from the analysis, not the renderer. Real traces first; synthetic inputs say so."""

from __future__ import annotations

import gzip
import io
import json
import re
from pathlib import Path

import pyarrow as pa
from rich.console import Console
from synthetic import synthetic_rows_run
from trace_paths import REALTRACES, SAMPLES, need

from tcreport import api, fmt, schema
from tcreport.analysis import derived, host_time
from tcreport.model import Run
from tcreport.render import html_parts, terminal
from tcreport.report import Report
from tcreport.rules import thresholds
from tcreport.rules.base import EvidenceKind

H100X2 = SAMPLES / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"
V100 = REALTRACES / "kineto" / "v100-legacy-resnet50" / "worker0.1623143089861.pt.trace.json.gz"
BERT = (
    REALTRACES
    / "kineto"
    / "h100-bf16-bert-small"
    / "gaunernst_bert-small-uncased__1016001.redacted.json.gz"
)
MI250 = REALTRACES / "kineto" / "mi250-rocm-minitoy" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"
PARTS = (
    "tc_compute_ns",
    "other_compute_ns",
    "unknown_compute_ns",
    "communication_ns",
    "memory_ns",
    "idle_launch_ns",
    "idle_host_ns",
)


def _view(path: Path) -> Report:
    return api.analyze(api.load(need(path)))


def _iteration_table(page: str) -> list[dict[str, int]]:
    """The HTML iteration table's body rows as {column: data-v}, straight from the page."""
    table = page[page.index('id="t-iters"') :]
    table = table[: table.index("</table>")]
    head = re.findall(r'<th scope="col"[^>]*>([^<]+)</th>', table)
    rows = []
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", table.split("<tbody>")[1], re.S):
        values = [int(v) for v in re.findall(r'data-v="(-?\d+)"', tr)]
        assert len(values) == len(head) - 1  # every column but the note has a sort value
        rows.append(dict(zip(head, values, strict=False)))
    return rows


def _steps_json(view: Report) -> dict[tuple[int, int | None], dict[str, int]]:
    data = json.loads(api.render_json(view))
    return {(s["iteration"], s["device_id"]): s for s in data["steps"]}


def test_h100x2_iteration_idle_in_html_is_the_json_steps_per_gpu() -> None:
    view = _view(H100X2)
    steps = _steps_json(view)
    rows = _iteration_table(api.render_html(view))
    assert len(rows) == 2 == len(steps)
    for row in rows:
        s = steps[(row["iteration"], row["GPU"])]
        assert sum(s[p] for p in PARTS) == s["span_ns"]  # the parts-sum invariant, in the JSON
        assert row["idle"] == s["idle_launch_ns"] + s["idle_host_ns"]
        assert row["GPU span"] == s["span_ns"] <= row["duration"]
    (it,) = view.analysis.iterations.rows
    assert not it.idle_estimated and it.idle_ns == sum(r["idle"] for r in rows)


def test_v100_iteration_idle_everywhere_is_the_step_breakdown() -> None:
    view = _view(V100)
    a = view.analysis
    steps = _steps_json(view)
    page = api.render_html(view)
    rows = _iteration_table(page)
    assert [r["iteration"] for r in rows] == list(range(6))
    chart = html_parts.iter_chart(a, set())
    assert chart is not None
    titles = [b.title for b in chart.bars]
    for row, r, title in zip(rows, a.iterations.rows, titles, strict=True):
        (s,) = [v for k, v in steps.items() if k[0] == r.iteration]
        idle = s["idle_launch_ns"] + s["idle_host_ns"]
        assert row["idle"] == r.idle_ns == idle and row["GPU span"] == s["span_ns"]
        assert r.stacked.total_ns == s["span_ns"]  # the chart's stack fills the span exactly
        assert f"idle {fmt.ns(idle)} ({fmt.ns(s['idle_launch_ns'])} launch-bound" in title
        assert (
            f"{fmt.ns(s['idle_host_ns'])} host-bound) in a GPU span of {fmt.ns(s['span_ns'])}"
            in (title)
        )
    # the step chart draws the same launch-bound parts the iteration chart names
    for s in steps.values():
        assert f"launch-bound (gaps &lt; 100 µs): {fmt.ns(s['idle_launch_ns'])}" in page


def test_iteration_chart_axis_holds_every_bar_idle_included() -> None:
    """A GPU span can outlast its iteration (2xH100 split at each FlashAttnFunc range: 30
    iterations, per-GPU spans up to 19.4 ms of iterations up to 18.1 ms, the GPU still running
    its launches); the axis takes the whole stack, idle included, so no bar leaves the chart,
    multi-GPU stacks (mean per GPU) too. (The V100 trace's spans outlasted their iterations only
    while its memsets were put in the step after the one that launched them.)"""
    views = (_view(V100), api.analyze(api.load(H100X2), api.Slice(key_node="FlashAttnFunc")))
    for view in views:
        a = view.analysis
        chart = html_parts.iter_chart(a, set())
        assert chart is not None and len(chart.bars) == len(a.iterations.rows) > 1
        gpus = max(r.per_gpu_divisor for r in a.iterations.rows)
        longest = max(r.stacked.total_ns / gpus for r in a.iterations.rows)
        if view is views[1]:  # the case the axis missed
            assert longest > max(r.duration_ns for r in a.iterations.rows)
        assert min(y for b in chart.bars for _, y, _ in b.segments) >= 8.0  # the plot's top (y0)
        for r in a.iterations.rows:
            assert len(r.gpus) == (2 if gpus > 1 else 0)
            for g in r.gpus:
                assert g.step is not None and g.idle_ns == derived.step_idle_ns(g.step)


def test_every_timed_iteration_stack_sums_to_its_span_on_real_traces() -> None:
    for path in (H100X2, V100, BERT, MI250):
        a = _view(path).analysis
        for r in a.iterations.rows:
            if r.idle_estimated:  # MI250 iteration 1 launched nothing: no span to measure
                assert not r.steps and r.kernel_count == 0
                continue
            assert r.span_ns is not None and r.stacked.total_ns == r.span_ns
            for g in r.gpus:
                assert g.step is not None and g.stacked.total_ns == g.step.span_ns


def test_bert_gp002_reads_the_step_breakdowns_launch_bound_idle() -> None:
    view = _view(BERT)
    a = view.analysis
    (f,) = [f for f in view.findings if f.id == "GP002"]
    idle = derived.aggregated_idle(a.steps.rows, a.iterations.info)
    assert idle is not None
    assert idle.launch_ns == sum(s.idle_launch_ns for s in a.steps.rows) == 2_503_351
    assert idle.span_ns == sum(s.span_ns for s in a.steps.rows)
    share = fmt.pct_text(idle.launch_share)
    assert f.title.endswith(f"the GPU idles {share} between them")
    assert f"idle for {fmt.ns(idle.launch_ns)} of the {fmt.ns(idle.span_ns)} GPU span" in f.detail
    assert f.estimated_saving_ns == int(idle.launch_ns * thresholds.LAUNCH_GAP_RECOVERABLE)
    data = json.loads(api.render_json(view))
    (j,) = [x for x in data["findings"] if x["id"] == "GP002"]
    assert j["estimated_saving_ns"] == f.estimated_saving_ns and j["title"] == f.title
    assert sum(s["idle_launch_ns"] for s in data["steps"]) == idle.launch_ns
    assert f.title in api.render_markdown(view)
    out = io.StringIO()
    terminal.render(view, Console(file=out, width=400))
    assert share in out.getvalue()


def _untimed_iterations_run_synthetic() -> Run:
    """Two iterations of aggregated kernels (no per-launch timestamps), as a DLProf report has."""
    kernels = [
        {"name": "volta_sgemm_128x64_nn", "duration_ns": ns, "calls": 3, "iteration": i}
        for i, ns in enumerate((600_000, 700_000))
    ]
    run = synthetic_rows_run(kernels=kernels)
    its = schema.conform(
        {
            "iteration": pa.array([0, 1], pa.int32()),
            "start_ns": [0, 1_000_000],
            "end_ns": [1_000_000, 2_000_000],
        },
        schema.TableKind.ITERATIONS,
    )
    return run.replace(iterations=its)


def test_without_timestamps_idle_is_the_labelled_estimate_synthetic() -> None:
    view = api.analyze(_untimed_iterations_run_synthetic())
    a = view.analysis
    assert not a.steps.rows
    assert [(r.idle_ns, r.idle_estimated, r.span_ns) for r in a.iterations.rows] == [
        (400_000, True, None),
        (300_000, True, None),
    ]
    page = api.render_html(view)
    assert "&asymp; idle: an estimate, duration &minus; kernel &minus; memory time" in page
    assert "&asymp; 400.0 µs" in page and "GPU span" not in page
    chart = html_parts.iter_chart(a, set())
    assert (
        chart is not None and "(estimate: duration − kernel − memory time)" in chart.bars[0].title
    )


def test_per_iteration_card_and_savings_come_from_the_analysis() -> None:
    view = _view(V100)
    a = view.analysis
    n = a.iterations.info.aggregated
    assert n == 6
    miss = a.verdict.eligible_not_using_gpu_ns
    assert miss and a.verdict.eligible_not_using_per_iteration_ns == miss / n
    (card,) = [c for c in html_parts.cards(a) if c.label == "eligible GPU time not on Tensor Cores"]
    assert card.value == fmt.ns(miss / n) + " / iteration"
    for fv in html_parts.findings(view, {k: {} for k in EvidenceKind}):
        f = fv.finding
        if f.estimated_saving_ns:
            assert f.saving_per_iteration_ns == f.estimated_saving_ns // n
            assert f.saving_iterations == n  # the HTML states it in Finding.saving_words
            assert f"~{fmt.ns(f.saving_per_iteration_ns)} per iteration" in (f.saving_words or "")


def _nested_cpu_trace_synthetic(path: Path) -> Path:
    """A CPU-only Kineto trace (synthetic): on thread 1 ``aten::linear`` [0, 100) µs holds
    ``aten::addmm`` [10, 90) which holds ``aten::mm`` [20, 80); thread 2 runs ``aten::relu``
    [50, 70) at the same time. Host time in ops: 100 + 20 µs; the recorded times sum to 260 µs,
    the rows' self times (linear 20, addmm 20, mm 60, relu 20 µs) to the 120 µs of the headline."""
    ops = [
        ("aten::linear", 1, 0, 100),
        ("aten::addmm", 1, 10, 80),
        ("aten::mm", 1, 20, 60),
        ("aten::relu", 2, 50, 20),
    ]
    events = [
        {"ph": "X", "cat": "cpu_op", "name": n, "pid": 7, "tid": t, "ts": 1000 + ts, "dur": d,
         "args": {"External id": i + 1}}
        for i, (n, t, ts, d) in enumerate(ops)
    ]  # fmt: skip
    out = path / "cpu_only_synthetic.pt.trace.json.gz"
    out.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    return out


def test_cpu_only_host_time_counts_nested_ops_once_synthetic(tmp_path: Path) -> None:
    view = api.analyze(api.load(_nested_cpu_trace_synthetic(tmp_path)))
    a = view.analysis
    assert a.host.cpu_only and a.host.total is not None
    assert sum(r.inclusive_ns for r in a.host.ops) == 260_000
    # issue 25, newcomer round: a row's host time is its self time and its share is of the
    # headline (they were the recorded time and a share of the 260 µs sum)
    rows = {r.name: (r.cpu_ns, r.share) for r in a.host.ops}
    assert rows == {
        "aten::mm": (60_000, 0.5),
        "aten::addmm": (20_000, 1 / 6),
        "aten::linear": (20_000, 1 / 6),
        "aten::relu": (20_000, 1 / 6),
    }
    assert (a.host.total.ns, a.host.total.method) == (120_000, host_time.UNION)
    shown = fmt.ns(120_000)
    data = json.loads(api.render_json(view))
    assert (data["host"]["total_ns"], data["host"]["total_method"]) == (120_000, host_time.UNION)
    assert f"Host time in ops: {shown} ({host_time.UNION})." in api.render_markdown(view)
    assert f"Host time in ops: <strong>{shown}</strong>" in api.render_html(view)
    out = io.StringIO()
    terminal.render(view, Console(file=out, width=200))
    (line,) = [x for x in out.getvalue().splitlines() if x.startswith("Host time (ops)")]
    assert line.split()[-2:] == shown.split()


def test_gpu_runs_have_no_host_total() -> None:
    data = json.loads(api.render_json(_view(H100X2)))
    assert data["host"]["total_ns"] is None and data["host"]["total_method"] is None


def test_the_html_names_the_wait_between_steps_that_gp001_names() -> None:
    """cnn_bf16fixed (real H200 run): GP001 leads with "the GPU waits for the host in
    aten::normal_ 24.0 ms per step", which lies between one step's last GPU activity and the
    next one's first, outside the step bars; the idle-causes table named only the in-step gaps,
    so the report's own breakdown did not back its first finding."""
    view = api.analyze(api.load(SAMPLES / "h200-torch-cnn-ncu" / "cnn_bf16fixed"))
    page = api.render_html(view)
    first = view.analysis.steps.rows[0]
    assert first.between is not None and first.between.name == "aten::normal_"
    wait = "then, until the next step&#39;s first GPU activity, host range: aten::normal_ "
    assert f"{wait}{fmt.ns(first.between.idle_ns)}" in page
    assert "fix first" in page.lower() and "aten::normal_" in page
