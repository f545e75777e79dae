"""The roofline chart in a real browser: it renders (visible, a dot per table row, coloured by the
report's own style sheet under its CSP), says what it shows in words, and the page logs no error
and fetches nothing. Same setup as test_browser.py (Playwright's Python API driving Debian's
Chromium; skipped without them unless ``TCREPORT_REQUIRE_BROWSER=1``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import browser_page
import pytest
from trace_paths import REALTRACES, need

from tcreport import api

BERT = REALTRACES / "kineto" / "h100-bf16-bert-small"


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, list[str], list[str]]]:
    exe = browser_page.chromium()
    trace = next(need(BERT).glob("*.json.gz"))
    out = tmp_path_factory.mktemp("roofline") / "report.html"
    out.write_text(api.render_html(api.analyze(api.load(trace))), encoding="utf-8")
    with browser_page.offline_page(out, exe) as opened:
        yield opened


@pytest.mark.realtraces
def test_roofline_renders_without_errors(page: tuple[Any, list[str], list[str]]) -> None:
    pg, requests, problems = page
    svg = pg.locator("svg.roofline")
    svg.scroll_into_view_if_needed()
    assert svg.is_visible()
    box = svg.bounding_box()
    assert box is not None and box["width"] > 600 and box["height"] > 200
    dots = pg.locator("svg.roofline circle")
    rows = pg.locator("#t-roofline tbody tr")
    assert dots.count() == rows.count() == 5
    # every dot inside the plot and filled by the report's CSS (the CSP let its style in)
    fills = pg.evaluate(
        """() => Array.from(document.querySelectorAll('svg.roofline circle'), c => {
             const b = c.getBBox();
             return [getComputedStyle(c).fill, b.width, c.querySelector('title').textContent];
           })"""
    )
    tc = pg.evaluate("() => getComputedStyle(document.documentElement).getPropertyValue('--tc')")
    assert all(w > 0 and "FLOP/byte" in title for _, w, title in fills)
    assert {fill for fill, _, _ in fills} != {"rgb(0, 0, 0)"} and tc.strip()
    roof = pg.locator("svg.roofline polyline.rf-roof")
    assert roof.count() == 1 and roof.evaluate("e => getComputedStyle(e).fill") == "none"
    legend = pg.locator("#roofline .legend").inner_text()
    assert "ran on Tensor Cores" in legend
    assert "memory-bound" in rows.first.inner_text()
    assert requests == [pg.url], f"requests besides the report itself: {requests}"
    assert problems == [], problems


@pytest.mark.realtraces
def test_roofline_table_sorts(page: tuple[Any, list[str], list[str]]) -> None:
    pg, _, problems = page
    header = pg.locator("#t-roofline thead th", has_text="FLOPs / byte").locator("button")
    header.click()  # numeric: descending first
    first = pg.locator("#t-roofline tbody tr").first.locator("td").nth(8).inner_text()
    assert first == "110.1"  # the vocabulary projection, [141,512]x[512,30522]
    assert problems == []
