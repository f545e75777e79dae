"""What the iteration chart and the timeline say about the bundled 2xH100 sample, read as a
newcomer reads them: a figure the report shows twice is the same number with the same name, and
no hint points at something the run does not have."""

from __future__ import annotations

import html
import re
from pathlib import Path

from trace_paths import NSYS_H100, SAMPLES
from typer.testing import CliRunner

from tcreport import api, fmt
from tcreport.cli import app


def _html() -> str:
    return api.render_html(api.analyze(api.load(NSYS_H100), with_timeline=True))


def _timeline_title(page: str) -> str:
    m = re.search(r'<svg class="tl-lanes"[^>]*aria-label="([^"]*)"', page)
    assert m is not None
    return html.unescape(m.group(1))


def test_whole_run_timeline_is_not_called_a_median_iteration() -> None:
    """The sample has no iteration marker: one whole-run row is no "median", and there is no
    other iteration for --timeline-iter to show."""
    page = _html()
    title = _timeline_title(page)
    assert title.startswith("The whole run (no iteration markers): ")
    assert "median" not in title
    assert title.endswith("from the first GPU activity to the last")
    assert "--timeline-iter" not in page
    assert "Every kernel: <code>tcreport export --perfetto</code>" in page


def test_iteration_chart_names_the_wall_clock_and_the_per_gpu_parts() -> None:
    """With 15 iterations on 2 GPUs, a bar's hover starts with the iteration's wall-clock time
    (the table's *duration*) and says that the parts after it are the mean of the 2 GPUs, whose
    GPU span is the step breakdown's; the dashed line is the mean iteration time of the card."""
    view = api.analyze(
        api.load(NSYS_H100), api.Slice(key_node="aten::stack", iter_start=2), with_timeline=True
    )
    page = api.render_html(view)
    a = view.analysis
    row = next(r for r in a.iterations.rows if r.iteration == 2)
    spans = [s.span_ns for s in a.steps.rows if s.iteration == 2]
    assert len(spans) == 2
    titles = [html.unescape(t) for t in re.findall(r"<title>(iteration 2: [^<]*)</title>", page)]
    assert len(titles) == 1
    assert titles[0].startswith(
        f"iteration 2: {fmt.ns(row.duration_ns)} wall-clock; mean of 2 GPUs: Tensor Core kernels "
    )
    assert f"in a GPU span of {fmt.ns(sum(spans) / 2)}" in titles[0]
    mean = a.iterations.info.mean_ns
    assert mean is not None
    assert f"dashed line: mean iteration time of the aggregated ones ({fmt.ns(mean)})" in page
    assert "the median aggregated iteration" in _timeline_title(page)
    assert "Other iterations: <code>tcreport report --timeline-iter N</code>." in page


def test_python_api_gives_the_step_breakdown_as_the_docs_say() -> None:
    """docs/python-api.md: ``pd.DataFrame(run.summary()["steps"])`` is one row per iteration and
    GPU with the named columns; ``.iterations`` one row per iteration, kernels over all GPUs.
    The sample is a 2-process torchrun export, read as a job of one GPU per rank: the run is its
    rank shown in full (rank 0, GPU 0)."""
    import pandas as pd

    import tcreport
    from tcreport.notebook_job import AnalysedJob

    job = tcreport.open(NSYS_H100, key_node="aten::stack", iter_start=2)
    assert isinstance(job, AnalysedJob)
    run = job.detail
    steps = pd.DataFrame(run.summary()["steps"])
    assert {"span_ns", "tc_compute_ns", "idle_launch_ns", "idle_host_ns", "host_causes"} <= set(
        steps.columns
    )
    assert len(steps) == len(run.iterations) == 15
    assert sorted(set(steps["device_id"])) == [0]
    # Tensor Core kernels never overlap on one GPU in this trace: their time summed over the GPUs
    # (.iterations) equals the breakdown's Tensor Core compute summed over the GPUs
    per_iteration = steps.groupby("iteration")["tc_compute_ns"].sum()
    tc_ns = run.iterations.set_index("iteration")["tc_ns"]
    assert per_iteration.astype(int).to_dict() == tc_ns.astype(int).to_dict()


def test_cm002_title_says_its_per_gpu_figure_is_a_mean() -> None:
    """The sample's GPUs expose 10.0 and 23.8 ms of collectives: the title's one figure is their
    mean, which the Fix first line and the batch dataset's top_finding_title repeat."""
    view = api.analyze(api.load(NSYS_H100))
    cm = view.analysis.communication.overlap
    assert cm is not None and len(cm.devices) == 2
    exposed = [d.collective_ns - d.overlap_ns for d in cm.devices]
    assert exposed[0] != exposed[1]
    (f,) = [f for f in view.findings if f.id == "CM002"]
    assert f.title.endswith(f": {fmt.ns(cm.exposed_ns // 2)} exposed per GPU on average")


def test_timeline_iter_that_cannot_be_drawn_is_said_not_silently_replaced(tmp_path: Path) -> None:
    """``--timeline-iter`` past the last iteration, or on a run without iteration markers, used to
    draw another iteration without a word; the report is still written (exit 0)."""
    runner = CliRunner()
    out = tmp_path / "r.html"
    cases = [
        (
            [str(NSYS_H100), "--key-node", "aten::stack", "--timeline-iter", "99"],
            "--timeline-iter 99 ignored: no iteration 99 with GPU activity; the timeline shows "
            "iteration 9, the median aggregated one",
        ),
        (
            [str(SAMPLES / "kineto-a100-tf32-alexnet"), "--timeline-iter", "3"],
            "--timeline-iter 3 ignored: the run has no iteration markers; the timeline shows the "
            "whole run",
        ),
        ([str(NSYS_H100), "--key-node", "aten::stack", "--timeline-iter", "4"], None),
    ]
    for args, warning in cases:
        result = runner.invoke(app, ["report", *args, "-o", str(out)])
        assert result.exit_code == 0, result.stderr
        assert out.is_file()
        if warning is None:
            assert "warning" not in result.stderr
        else:
            assert f"tcreport: warning: {warning}\n" in result.stderr
