"""The HTML report in a real browser: it loads offline, runs no injected script, sorts and links.

Static checks on the HTML text (test_render.py) cannot show what a browser does with it: whether
the CSP blocks our own script, whether a fragment link finds its percent-encoded id, whether the
page fetches anything. These tests open the reports of the real traces in Debian's Chromium via
Playwright's Python API (Playwright's own browser download needs the network, which CI has not).
Without ``playwright`` or a Chromium they skip, so a developer without them still passes; CI sets
``TCREPORT_REQUIRE_BROWSER=1`` so that a missing browser fails there instead of skipping silently.
"""

from __future__ import annotations

import base64
import importlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from synthetic import HOSTILE, hostile_run, run_meta
from trace_paths import real_or_bundled

from tcreport import api, schema
from tcreport.model import Gpu, Granularity, IterationInfo, IterationMethod, Run

CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

#: name -> (path under realtraces, the reader module that must import for it)
TRACES = {
    "dlprof-csv": ("dlprof/v1.8-pytorch-cnn", "tcreport.ingest.dlprof.csv_reader"),
    "dlprof-sqlite": (
        "dlprof/v1.8-pytorch-cnn/dlprof_dldb_7.sqlite",
        "tcreport.ingest.dlprof.viewer_db",
    ),
    "nsys-h100x2": (
        "nsys/h100x2-bf16-fastvideo/mfu_2gpu_after.sqlite",
        "tcreport.ingest.nsys.reader",
    ),
    "kineto-bert-h100": (
        "kineto/h100-bf16-bert-small/gaunernst_bert-small-uncased__1016001.redacted.json.gz",
        "tcreport.ingest.kineto.reader",
    ),
    "kineto-alexnet-a100": (
        "kineto/a100-tf32-alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
        "tcreport.ingest.kineto.reader",
    ),
    "kineto-resnet50-v100": (
        "kineto/v100-legacy-resnet50/worker0.1623143089861.pt.trace.json.gz",
        "tcreport.ingest.kineto.reader",
    ),
}


def _chromium() -> str | None:
    path = os.environ.get("TCREPORT_CHROMIUM") or shutil.which("chromium")
    return path if path and Path(path).exists() else None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module; skipped (or failed in CI) when unavailable."""
    required = os.environ.get("TCREPORT_REQUIRE_BROWSER") == "1"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if required:
            pytest.fail("TCREPORT_REQUIRE_BROWSER=1 but the playwright package is not installed")
        pytest.skip("playwright is not installed (pip install playwright; no browser download)")
    exe = _chromium()
    if exe is None:
        if required:
            pytest.fail("TCREPORT_REQUIRE_BROWSER=1 but no chromium executable was found")
        pytest.skip("no chromium executable (apt-get install chromium, or set TCREPORT_CHROMIUM)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield b
        b.close()


@dataclass
class Opened:
    """A report open in a page, with everything the page did while loading."""

    page: Any
    url: str
    requests: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


def _open(browser: Any, html_path: Path, **context_args: Any) -> Opened:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, **context_args)
    page = context.new_page()
    url = html_path.resolve().as_uri()
    o = Opened(page=page, url=url)

    def route(r: Any) -> None:
        # Anything but the report itself is recorded and refused, so nothing leaves the machine.
        if r.request.url == url:
            r.continue_()
        else:
            r.abort()

    context.route("**/*", route)
    page.on("request", lambda r: o.requests.append(r.url))
    page.on("console", lambda m: o.console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: o.errors.append(str(e)))

    def dialog(d: Any) -> None:
        o.dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", dialog)
    page.goto(url)
    page.wait_for_load_state("load")
    return o


def _assert_quiet(o: Opened) -> None:
    assert o.requests == [o.url], f"requests besides the report itself: {o.requests}"
    bad = [c for c in o.console if c.startswith(("error", "warning"))]
    assert not bad, f"console errors: {bad}"
    assert not o.errors, f"page errors: {o.errors}"
    assert not o.dialogs, f"dialogs opened: {o.dialogs}"


_VARIANCE_JS = """async (b64) => {
  const img = new Image();
  img.src = "data:image/png;base64," + b64;
  await img.decode();
  const c = document.createElement("canvas");
  c.width = img.width; c.height = img.height;
  const ctx = c.getContext("2d");
  ctx.drawImage(img, 0, 0);
  const d = ctx.getImageData(0, 0, c.width, c.height).data;
  const colours = new Set();
  let sum = 0, sq = 0, n = 0;
  for (let i = 0; i < d.length; i += 4 * 97) {
    const v = 0.299 * d[i] + 0.587 * d[i + 1] + 0.114 * d[i + 2];
    sum += v; sq += v * v; n += 1;
    colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
  }
  const mean = sum / n;
  return {width: c.width, height: c.height, variance: sq / n - mean * mean, colours: colours.size};
}"""


def _png_stats(browser: Any, png: bytes) -> dict[str, float]:
    """Decode the screenshot in a blank page (no Pillow needed): size, luminance variance, colours."""
    page = browser.new_page()
    try:
        stats: dict[str, float] = page.evaluate(_VARIANCE_JS, base64.b64encode(png).decode())
    finally:
        page.close()
    return stats


def _render(run: Run, out: Path, source_path: str) -> Path:
    out.write_text(api.render_html(api.analyze(run, source_path=source_path)), encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def outdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="tcreport-browser-") as d:
        yield Path(d)


@pytest.fixture(scope="module", params=sorted(TRACES))
def real_report(request: pytest.FixtureRequest, outdir: Path) -> tuple[str, Path]:
    name = request.param
    rel, reader = TRACES[name]
    path = real_or_bundled(rel)  # two of them are bundled in sample_traces/ as well
    if not path.exists():
        pytest.skip(f"{path} not present (../shared/realtraces)")
    try:
        importlib.import_module(reader)
    except ImportError as exc:
        pytest.skip(f"reader {reader} does not import: {exc}")
    return name, _render(api.load(path), outdir / f"{name}.html", f"realtraces/{rel}")


@pytest.mark.realtraces
def test_real_trace_report_is_quiet_offline_and_not_blank(
    browser: Any, real_report: tuple[str, Path], outdir: Path
) -> None:
    name, html = real_report
    o = _open(browser, html)
    try:
        _assert_quiet(o)
        assert o.page.title().startswith("Tensor Core report")
        # our own script ran under the CSP: it turned header cells into sort buttons
        assert o.page.locator("table.sortable thead button").count() > 0
        png = o.page.screenshot(full_page=True)
    finally:
        o.page.context.close()
    (outdir / f"{name}.png").write_bytes(png)
    assert len(png) > 20_000, "screenshot suspiciously small"
    stats = _png_stats(browser, png)
    assert stats["width"] == 1280 and stats["height"] > 900
    assert stats["variance"] > 100 and stats["colours"] > 8, f"blank-looking screenshot: {stats}"


_LINKS_RESOLVE_JS = """() => {
  const missing = [];
  for (const a of document.querySelectorAll('a[href^="#"]')) {
    const id = a.getAttribute("href").slice(1);
    if (!document.getElementById(id)) missing.push(id);
  }
  const ids = Array.from(document.querySelectorAll("[id]"), (e) => e.id);
  return {missing, links: document.querySelectorAll('a[href^="#"]').length,
          duplicates: ids.length - new Set(ids).size};
}"""


@pytest.mark.realtraces
def test_every_link_finds_its_row_and_the_browser_scrolls_there(
    browser: Any, real_report: tuple[str, Path]
) -> None:
    _, html = real_report
    o = _open(browser, html)
    try:
        res = o.page.evaluate(_LINKS_RESOLVE_JS)
        assert res["missing"] == [] and res["duplicates"] == 0, res
        evidence = o.page.locator(".finding .ev a")
        if evidence.count():
            href = evidence.first.get_attribute("href")
            for box in o.page.locator("input.filter").all():
                box.fill("matches-no-row")  # the link must un-hide its row
            evidence.first.click()
            # the browser's own fragment matching (not ours) found the percent-encoded id
            target = o.page.evaluate("() => document.querySelector(':target')?.id")
            assert target is not None and "#" + target == href
            o.page.wait_for_function("(id) => !document.getElementById(id).hidden", arg=target)
            assert o.page.locator(f'[id="{target}"]').is_visible()
        _assert_quiet(o)
    finally:
        o.page.context.close()


_COLUMN_JS = """([table, idx]) => Array.from(document.getElementById(table).tBodies[0].rows,
  (r) => r.cells[idx].getAttribute("data-v") ?? r.cells[idx].textContent)"""


@pytest.mark.realtraces
def test_a_header_click_sorts_and_a_filter_hides_rows(
    browser: Any, real_report: tuple[str, Path]
) -> None:
    _, html = real_report
    o = _open(browser, html)
    try:
        table = next(
            (t for t in ("t-kernels", "t-ops") if o.page.locator(f"#{t} tbody tr").count() > 2),
            None,
        )
        if table is None:
            pytest.skip("no table with three rows in this report")
        headers = o.page.locator(f"#{table} thead th")
        idx = next(i for i in range(headers.count()) if "GPU time" in headers.nth(i).inner_text())
        names_before = o.page.evaluate(_COLUMN_JS, [table, 0])
        before = [float(v) for v in o.page.evaluate(_COLUMN_JS, [table, idx])]
        assert before == sorted(before, reverse=True), "served sorted by GPU time, descending"
        headers.nth(idx).locator("button").click()
        after = [float(v) for v in o.page.evaluate(_COLUMN_JS, [table, idx])]
        assert after == sorted(before), "one click on the sorted column reverses it"
        assert headers.nth(idx).get_attribute("aria-sort") == "ascending"
        if len(set(before)) > 1:
            assert o.page.evaluate(_COLUMN_JS, [table, 0]) != names_before
        headers.nth(0).locator("button").click()
        assert headers.nth(0).get_attribute("aria-sort") == "ascending"
        assert headers.nth(idx).get_attribute("aria-sort") is None

        first = o.page.evaluate(_COLUMN_JS, [table, 0])[0]
        o.page.locator(f'input.filter[data-table="{table}"]').fill(first)
        visible = o.page.locator(f"#{table} tbody tr:visible").count()
        assert 1 <= visible < o.page.locator(f"#{table} tbody tr").count()
        _assert_quiet(o)
    finally:
        o.page.context.close()


def test_tables_are_complete_with_scripts_off(browser: Any, outdir: Path) -> None:
    html = _render(_hostile_variant("</script><b>x"), outdir / "noscript.html", "noscript")
    o = _open(browser, html, java_script_enabled=False)
    try:
        page = o.page
        assert page.locator("table.sortable thead button").count() == 0
        assert page.locator("input.filter:visible").count() == 0, "filters need the script"
        assert page.locator("#t-kernels tbody tr:visible").count() == 2
        assert page.locator("#t-kernels thead th[aria-sort=descending]").count() == 1
        _assert_quiet(o)
    finally:
        page.context.close()


def test_dark_and_print_styles_apply(browser: Any, outdir: Path) -> None:
    html = _render(hostile_run(), outdir / "media.html", "media")
    o = _open(browser, html, color_scheme="dark")
    try:
        page = o.page
        dark_bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
        page.emulate_media(media="print", color_scheme="dark")
        assert (
            page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(255, 255, 255)"
        )
        assert (
            page.evaluate("getComputedStyle(document.querySelector('.wrap')).maxHeight") == "none"
        )
        assert page.evaluate("getComputedStyle(document.querySelector('.toc')).display") == "none"
        assert dark_bg != "rgb(255, 255, 255)"
        _assert_quiet(o)
    finally:
        page.context.close()


def _hostile_variant(name: str) -> Run:
    """Like synthetic.hostile_run, with ``name`` everywhere and enough rows for every section."""
    kernels = schema.conform(
        {
            "name": [name, "volta_h884gemm_128x64_nn", name, name],
            "duration_ns": [5000, 3000, 2000, 4000],
            "calls": [1, 1, 1, 1],
            "start_ns": [100, 6000, 9500, 20100],
            "launch_ns": [90, 5900, 9400, 20090],
            "op_id": ["op1", "op2", "op1", "op1"],
            "device_id": [0, 0, 0, 0],
            "iteration": [0, 0, 0, 1],
        },
        schema.TableKind.KERNELS,
    )
    ops = schema.conform(
        {
            "op_id": ["op1", "op2"],
            "name": [f"/model/{name}/linear", f"/model/{name}/conv2d"],
            "type": ["linear", name],
            "scope": [name, name],
            "dtype": [name, "float16"],
            "input_shapes": [name, "[[8,8],[8,8]]"],
            "calls": [2, 1],
            "cpu_ns": [6000, 4000],
            "gpu_ns": [11000, 3000],
            "start_ns": [80, 5800],
        },
        schema.TableKind.OPS,
    )
    iters = schema.conform(
        {"iteration": [0, 1], "start_ns": [0, 20000], "end_ns": [20000, 40000]},
        schema.TableKind.ITERATIONS,
    )
    meta = run_meta(
        path=f"/tmp/{name}.sqlite",
        profiler=f"Nsight Systems {name}",
        profiler_version=name,
        framework=name,
        cuda_version=name,
        gpus=(Gpu(device_id=0, name=name, compute_capability="7.0"),),
        iterations=IterationInfo(
            total=2, start=0, stop=1, aggregated=2, key_node=name, method=IterationMethod.KEY_NODE
        ),
        kernel_granularity=Granularity.LAUNCH,
        op_granularity=Granularity.LAUNCH,
        files=(name,),
        notes=(name,),
    )
    return Run(
        meta=meta,
        kernels=kernels,
        ops=ops,
        iterations=iters,
        memory=schema.empty(schema.TableKind.MEMORY),
    )


PAYLOADS = [
    HOSTILE,  # alert(1): would open a dialog
    "</script><img src=x onerror=\"window.__pwned=1;console.log('pwned')\">",
    '"><svg onload=window.__pwned=1><script>window.__pwned=1</script>',
    '</style></svg></table><iframe srcdoc="<script>parent.__pwned=1</script>"></iframe>',
    "javascript:window.__pwned=1//%3C/script%3E",
]


@pytest.mark.parametrize("payload", PAYLOADS, ids=range(len(PAYLOADS)))
def test_hostile_names_run_no_script(browser: Any, outdir: Path, payload: str) -> None:
    runs = [_hostile_variant(payload)] + ([hostile_run()] if payload == HOSTILE else [])
    for i, run in enumerate(runs):
        html = _render(run, outdir / f"hostile-{PAYLOADS.index(payload)}-{i}.html", payload)
        o = _open(browser, html)
        try:
            page = o.page
            for link in page.locator('a[href^="#"]').all()[:20]:
                link.click()  # following every kind of link runs nothing either
            assert page.evaluate("() => window.__pwned") is None
            assert page.locator("img, iframe, object, embed").count() == 0
            assert page.locator("body script").count() == 2  # the JSON block and ours
            assert page.get_by_text(payload, exact=False).count() > 0, "name shown as text"
            assert not any("pwned" in c for c in o.console)
            _assert_quiet(o)
        finally:
            page.context.close()


# --- the notebook view (AnalysedRun._repr_html_) ----------------------------------------------

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


def _notebook_page(fragment: str, out: Path) -> Path:
    """The fragment as a notebook shows it: inside someone else's page, with no CSP of ours."""
    out.write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>notebook</title></head>"
        f"<body><div class='output_html'>{fragment}</div></body></html>",
        encoding="utf-8",
    )
    return out


@pytest.mark.parametrize("sample", ["kineto-a100-tf32-alexnet", "nsys-h100x2-bf16"])
def test_notebook_view_of_each_sample_renders_quietly(
    browser: Any, outdir: Path, sample: str
) -> None:
    import tcreport
    from tcreport.notebook_job import AnalysedJob

    opened = tcreport.open(SAMPLES / sample)
    # the nsys sample is a 2-rank job: its rank shown in full is the notebook run
    run = opened.detail if isinstance(opened, AnalysedJob) else opened
    o = _open(browser, _notebook_page(run._repr_html_(), outdir / f"nb-{sample}.html"))
    try:
        page = o.page
        share = run.summary()["tensor_core"]["kernel_time_share"]
        assert page.get_by_text(f"{share * 100:.1f} %").count() == 1
        assert page.locator("div.tcreport tbody tr").count() == len(run.findings)
        assert page.locator("script, style, link, img, iframe, object, embed").count() == 0
        assert page.locator("div.tcreport").bounding_box()["height"] > 50  # drawn, not empty
        _assert_quiet(o)
    finally:
        page.context.close()


def test_notebook_view_of_hostile_names_runs_nothing(browser: Any, outdir: Path) -> None:
    from tcreport.notebook import AnalysedRun

    run = hostile_run()
    view = api.analyze(run, source_path=HOSTILE)
    frag = AnalysedRun(report=view, run=run)._repr_html_()
    o = _open(browser, _notebook_page(frag, outdir / "nb-hostile.html"))
    try:
        page = o.page
        assert page.get_by_text(HOSTILE, exact=False).count() > 0, "name shown as text"
        assert page.locator("img, script").count() == 0
        _assert_quiet(o)
    finally:
        page.context.close()
