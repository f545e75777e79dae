"""The step-time timeline in a real browser: it renders, hover names a kernel's verdict, zoom and
pan move the view, and nothing is fetched. Same setup as test_browser.py (Playwright's Python API
driving Debian's Chromium; skipped without them unless ``TCREPORT_REQUIRE_BROWSER=1``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import browser_page
import pytest

from tcreport import api

ROOT = Path(__file__).resolve().parents[2]
H100X2 = ROOT / "sample_traces" / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, list[str], list[str]]]:
    exe = browser_page.chromium()
    out = tmp_path_factory.mktemp("timeline") / "report.html"
    view = api.analyze(
        api.load(H100X2), source_path="sample_traces/nsys-h100x2-bf16", with_timeline=True
    )
    out.write_text(api.render_html(view), encoding="utf-8")
    with browser_page.offline_page(out, exe) as opened:
        yield opened


def _viewbox(pg: Any) -> list[float]:
    return [float(v) for v in pg.get_attribute("#tl-lanes", "viewBox").split()]


def test_timeline_renders_lanes_and_blocks(page: tuple[Any, list[str], list[str]]) -> None:
    pg, requests, problems = page
    lanes = pg.locator("#tl-lanes")
    lanes.scroll_into_view_if_needed()
    box = lanes.bounding_box()
    assert box is not None and box["width"] > 700 and box["height"] >= 6 * 18
    labels = pg.locator(".tl-labels text").all_text_contents()
    assert "GPU 0 · stream 7" in labels and "GPU 1 · stream 15" in labels
    assert pg.locator("#tl-lanes rect.t-tc").count() > 50
    assert pg.locator("#tl-lanes rect.t-comm").count() > 0  # NCCL on the compute stream
    assert pg.locator("#tl-lanes rect.t-idle").count() > 0  # host-bound gaps marked
    assert requests == [pg.url] and not problems


def test_hover_shows_name_duration_verdict_and_rule(page: tuple[Any, list[str], list[str]]) -> None:
    pg, _, problems = page
    widest = pg.evaluate(
        """() => { const rs = [...document.querySelectorAll('#tl-lanes rect.t-tc')];
                   let b = 0; rs.forEach((r, i) => { if (+r.getAttribute('width') >
                   +rs[b].getAttribute('width')) b = i; }); return b; }"""
    )
    block = pg.locator("#tl-lanes rect.t-tc").nth(widest)
    block.scroll_into_view_if_needed()
    block.hover(force=True)
    tip = pg.locator("#tl .tl-tip")
    assert tip.is_visible()
    text = tip.inner_text()
    names = pg.evaluate("() => JSON.parse(document.getElementById('tl-lanes').dataset.names)")
    assert names[int(block.get_attribute("data-k"))] in text
    assert "Tensor Core: yes" in text and "rule:" in text and "ms" in text
    pg.mouse.move(5, 5)
    assert not tip.is_visible()
    assert not problems


def test_zoom_and_pan_move_the_view(page: tuple[Any, list[str], list[str]]) -> None:
    pg, requests, problems = page
    full = _viewbox(pg)
    pg.click("#tl .tl-tools button[data-z=in]")
    zoomed = _viewbox(pg)
    assert zoomed[2] == pytest.approx(full[2] / 2) and zoomed[3] == full[3]
    lanes = pg.locator("#tl-lanes")
    box = lanes.bounding_box()
    assert box is not None
    pg.mouse.move(box["x"] + box["width"] * 0.25, box["y"] + 10)
    pg.mouse.wheel(0, -300)  # zoom in around the pointer
    wheeled = _viewbox(pg)
    assert wheeled[2] < zoomed[2]
    pg.mouse.down()
    pg.mouse.move(box["x"] + box["width"] * 0.10, box["y"] + 10, steps=4)
    pg.mouse.up()
    assert _viewbox(pg)[0] > wheeled[0]  # dragged left: the view moved right
    assert "of 299.27 ms" in pg.locator("#tl .tl-range").inner_text()
    pg.click("#tl .tl-tools button[data-z=reset]")
    assert _viewbox(pg) == full
    assert requests == [pg.url] and not problems
