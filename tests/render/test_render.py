"""Renderers: hostile names stay text, output is deterministic, HTML is self-contained."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from synthetic import HOSTILE, hostile_run, run_meta
from trace_paths import real_or_bundled

from tcreport import api
from tcreport.ingest.parquet import reader as parquet
from tcreport.model import Run
from tcreport.report import Report


@pytest.fixture(scope="module")
def view() -> Report:
    return api.analyze(hostile_run(), source_path=f"traces/{HOSTILE}.sqlite")


def test_html_shows_hostile_names_as_text(view: Report) -> None:
    html = api.render_html(view)
    assert "<img src=x" not in html
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in html
    # exactly one executable script, and the embedded JSON cannot close its block
    assert html.count("<script>") == 1
    block = re.search(
        r'<script type="application/json" id="tcreport-summary">(.*?)</script>', html, re.S
    )
    assert block is not None
    assert "</script" not in block.group(1) and "<" not in block.group(1)
    assert json.loads(block.group(1))["schema"] == "tcreport.summary/1"


def test_html_is_self_contained_with_strict_csp(view: Report) -> None:
    html = api.render_html(view)
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert csp is not None
    policy = csp.group(1)
    assert "default-src 'none'" in policy and "connect-src 'none'" in policy
    assert "unsafe-inline" not in policy
    assert not re.search(r'(src|href)="(https?:)?//', html), "external resource referenced"
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")


def test_html_is_deterministic(view: Report) -> None:
    again = api.analyze(hostile_run(), source_path=f"traces/{HOSTILE}.sqlite")
    assert api.render_html(view) == api.render_html(again)


def test_markdown_escapes_hostile_names(view: Report) -> None:
    md = api.render_markdown(view)
    assert "</script>" not in md and "<img" not in md
    for line in md.splitlines():
        if line.startswith("| /model/"):
            assert line.count(" | ") == 5, line  # the name did not add table cells


def test_json_keeps_hostile_names_verbatim(view: Report) -> None:
    data = json.loads(api.render_json(view))
    assert data["kernels"][0]["name"] == HOSTILE
    assert list(data) == sorted(data)


def test_terminal_summary_does_not_interpret_markup(
    view: Report, capsys: pytest.CaptureFixture[str]
) -> None:
    from rich.console import Console

    from tcreport.render import terminal

    console = Console(width=200, force_terminal=False, color_system=None)
    with console.capture() as cap:
        terminal.render(view, console)
    assert HOSTILE in cap.get()


def test_notes_reach_the_markdown_and_the_terminal() -> None:
    """Run notes (a graph-level CUDA trace, a partial capture) say what the figures leave out:
    the PR comment and the shell summary show them, escaped, not only the HTML report."""
    import dataclasses

    from rich.console import Console

    from tcreport.render import terminal

    run = hostile_run()
    run = run.replace(meta=dataclasses.replace(run.meta, notes=(f"left out: {HOSTILE}",)))
    view = api.analyze(run, source_path="x")
    md = api.render_markdown(view)
    assert "**Notes**" in md and "left out:" in md
    assert HOSTILE not in md  # escaped like every other name
    console = Console(width=300, force_terminal=False, color_system=None)
    with console.capture() as cap:
        terminal.render(view, console)
    assert f"- left out: {HOSTILE}" in cap.get()


def test_parquet_round_trip_gives_identical_summary(tmp_path: Path) -> None:
    run = hostile_run()
    out = api.ingest(run, tmp_path / "ingested")
    assert parquet.sniff(out)
    again = api.load(out)
    a = api.render_json(api.analyze(run, source_path="x"))
    b = api.render_json(api.analyze(again, source_path="x"))
    assert a == b


# --- The HTML report as a product (issue #6) -------------------------------------------------

REAL_INPUTS = [
    "dlprof/v1.8-pytorch-cnn",
    "dlprof/v1.8-pytorch-cnn/dlprof_dldb_7.sqlite",
    "nsys/h100x2-bf16-fastvideo/mfu_2gpu_after.sqlite",
    "kineto/v100-legacy-resnet50/worker0.1623143089861.pt.trace.json.gz",
]


def _links_and_ids(html: str) -> tuple[list[str], list[str]]:
    links = re.findall(r'href="#([^"]*)"', html)
    ids = re.findall(r'\sid="([^"]*)"', html)
    return links, ids


def _assert_structurally_sound(html: str) -> None:
    """Every in-page link has its target, ids are unique, and no style="" attribute (the CSP's
    hashes do not cover those, so one would be silently dropped by the browser)."""
    links, ids = _links_and_ids(html)
    assert len(ids) == len(set(ids)), "duplicate ids"
    missing = sorted(set(links) - set(ids))
    assert not missing, f"links without a target: {missing[:5]}"
    assert not re.search(r"<[^>]+\sstyle=", html), "style attribute found"
    assert "frame-ancestors" not in html  # ignored in a <meta> CSP, and logged as an error


def test_html_links_resolve_for_hostile_names(view: Report) -> None:
    html = api.render_html(view)
    _assert_structurally_sound(html)
    links, _ = _links_and_ids(html)
    from tcreport.render.html_parts import anchor

    assert anchor("kernel", HOSTILE) in links  # the finding links to the hostile kernel's row
    assert all(re.fullmatch(r"[A-Za-z0-9%._~-]+", link) for link in links)


@pytest.mark.realtraces
@pytest.mark.parametrize("rel", REAL_INPUTS)
def test_real_trace_reports_are_sound_and_deterministic(rel: str) -> None:
    path = real_or_bundled(rel)  # the bundled nsys sample when ../shared is absent
    if not path.exists():
        pytest.skip(f"{path} not present")
    run = api.load(path)
    first = api.render_html(api.analyze(run, source_path=rel))
    _assert_structurally_sound(first)
    assert first == api.render_html(api.analyze(api.load(path), source_path=rel))
    for section in ("findings", "eligibility", "ops", "kernels", "precision", "system"):
        assert f'<section id="{section}"' in first
    assert first.count("<caption>") >= 3 and 'scope="col"' in first


def test_precision_mix_sums_to_one_and_names_dtypes() -> None:
    from tcreport.render import html_parts as html_mod

    view = api.analyze(hostile_run(), source_path="x")
    rows, segments = html_mod.precision(view.analysis)
    assert [r.group.name for r in rows] == ["float32"]
    assert sum(r.group.share or 0 for r in rows) == pytest.approx(1.0)
    assert segments and sum(s.width for s in segments) == pytest.approx(html_mod.CHART_W)


def _huge_run(
    kernel_names: int = 200_000, launches: int = 3_600_000, iterations: int = 2_000
) -> Run:
    """A synthetic run at the size of a long nsys capture: 200k distinct kernel names (templated
    CUTLASS names make this real), 3.6M launches, thousands of iterations, one slow iteration,
    and some hostile, unclassifiable names so that findings carry evidence."""
    import numpy as np
    import pyarrow as pa

    from tcreport import schema
    from tcreport.model import Gpu, Granularity, IterationInfo, Run

    rng = np.random.default_rng(0)
    idx = np.concatenate(
        [np.arange(kernel_names), rng.integers(0, kernel_names, launches - kernel_names)]
    ).astype(np.int32)
    names = pa.array(
        [
            f"mystery_{i}{HOSTILE}"
            if i % 1000 == 0
            else (f"sm80_xmma_gemm_f16f16_f32_tn_n_{i}" if i % 2 else f"elementwise_kernel_{i}")
            for i in range(kernel_names)
        ]
    )
    per = launches // iterations
    iteration = (np.arange(launches) // per).astype(np.int32)
    dur = rng.integers(500, 900, launches)
    dur[iteration == 7] *= 4  # one slow iteration: an outlier
    start = np.cumsum(dur + 300) - dur  # back to back, 300 ns launch gaps
    kernels = schema.conform(
        {
            "name": pa.DictionaryArray.from_arrays(pa.array(idx), names),
            "duration_ns": pa.array(dur),
            "calls": pa.array(np.ones(launches, dtype=np.int64)),
            "start_ns": pa.array(start),
            "launch_ns": pa.array(start - 10),
            "device_id": pa.array(np.zeros(launches, dtype=np.int32)),
            "iteration": pa.array(iteration),
        },
        schema.TableKind.KERNELS,
    )
    first = np.arange(iterations) * per
    iters = schema.conform(
        {
            "iteration": pa.array(np.arange(iterations, dtype=np.int32)),
            "start_ns": pa.array(start[first]),
            "end_ns": pa.array(start[first + per - 1] + dur[first + per - 1]),
        },
        schema.TableKind.ITERATIONS,
    )
    meta = run_meta(
        path="huge.sqlite",
        gpus=(Gpu(device_id=0, name="NVIDIA A100-SXM4-80GB", compute_capability="8.0"),),
        iterations=IterationInfo(total=iterations, start=0, stop=iterations - 1),
        op_granularity=Granularity.NONE,
    )
    return Run(
        meta=meta, kernels=kernels, iterations=iters, memory=schema.empty(schema.TableKind.MEMORY)
    )


@pytest.mark.slow
def test_html_stays_under_2_mb_for_millions_of_launches() -> None:
    from tcreport.analysis import iteration_timeline
    from tcreport.render import html_parts as html_mod

    view = api.analyze(_huge_run(), source_path="huge.sqlite", with_timeline=True)
    assert len(view.analysis.breakdown.kernels) == 200_000
    html = api.render_html(view)
    size = len(html.encode("utf-8"))
    assert size <= 2 * 1024 * 1024, f"{size} bytes"
    _assert_structurally_sound(html)
    assert html.count('<tr id="kernel-') <= html_mod.MAX_ROWS + html_mod.MAX_LINKS
    iters_section = html[html.index('<section id="iterations"') : html.index('id="step-time"')]
    assert iters_section.count("<rect ") < 4 * html_mod.MAX_ITER_BARS + 200  # iterations bucketed
    # the step-time section is bounded too: capped step rows, capped timeline blocks and lanes
    assert html.count("<rect ") < (
        4 * html_mod.MAX_ITER_BARS + 200 + 8 * 48 + iteration_timeline.MAX_BLOCKS + 64
    )
    assert "<img src=x" not in html
    assert '<tr id="iter-7" class="flag">' in html  # the slow iteration is called out


@pytest.mark.parametrize(
    "rel",
    [
        "nsys/h100x2-bf16-fastvideo/mfu_2gpu_after.sqlite",
        "kineto/v100-legacy-resnet50/worker0.1623143089861.pt.trace.json.gz",
    ],
)
def test_shared_op_id_dictionary_round_trips_compactly(rel: str, tmp_path: Path) -> None:
    """The readers give ops, kernels and memory one op_id dictionary (analysis joins on its
    indices); each Parquet file stores its own rows' ids as plain strings (a dictionary of
    millions of nearly unique ids is slow for Parquet to rebuild), reading gives the tables one
    dictionary again, and the summary is unchanged."""
    src = real_or_bundled(rel)
    if not src.exists():
        pytest.skip("needs ../shared/realtraces")
    run = api.load(src)
    assert run.ops is not None and run.kernels is not None
    ops_dict = run.ops.column("op_id").chunk(0).dictionary
    kernels_dict = run.kernels.column("op_id").chunk(0).dictionary
    assert [b.address for b in kernels_dict.buffers() if b] == [
        b.address for b in ops_dict.buffers() if b
    ]  # one dictionary, not two equal ones
    out = api.ingest(run, tmp_path / "ingested")
    stored = pq.read_table(out / "kernels.parquet", columns=["op_id"]).column("op_id")
    assert stored.type == pa.string()
    used = run.kernels.column("op_id").drop_null()
    assert stored.drop_null().unique().to_pylist() == used.unique().cast(pa.string()).to_pylist()
    again = api.load(out)
    assert again.kernels is not None and again.ops is not None
    shared = again.ops.column("op_id").chunk(0).dictionary
    assert [
        b.address for b in again.kernels.column("op_id").chunk(0).dictionary.buffers() if b
    ] == [b.address for b in shared.buffers() if b]  # one dictionary again after reading
    assert again.kernels.column("op_id").cast(pa.string()).equals(used.cast(pa.string())) or (
        again.kernels.column("op_id").cast(pa.string()).to_pylist()
        == run.kernels.column("op_id").cast(pa.string()).to_pylist()
    )
    a = api.render_json(api.analyze(run, source_path="x"))
    b = api.render_json(api.analyze(again, source_path="x"))
    assert a == b
