"""The CPU-only report in a real browser at 1280 px: nothing wider than the page, even with every
"show all" open and op names far longer than a column. Issue #25 found a 231-row host table whose
number columns were cut off at 1400 px. Same setup as test_browser.py (Playwright's Python API
driving Debian's Chromium; skipped without them unless ``TCREPORT_REQUIRE_BROWSER=1``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import browser_page
import pytest
from kineto_synthetic import cpu_only_trace

from tcreport import api

#: an op name as long as a deep Keras scope path, without a break opportunity
LONG = "gradient_tape/functional_1/" + "very_long_layer_name_" * 8 + "{:03d}/MatMul/MatMul"


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    exe = browser_page.chromium()
    tmp = tmp_path_factory.mktemp("cpu-only")
    trace = cpu_only_trace(tmp / "cpu_only_synthetic.json", small_ops=230, name=LONG)
    out = tmp / "report.html"
    out.write_text(api.render_html(api.analyze(api.load(trace))), encoding="utf-8")
    with browser_page.offline_page(out, exe) as (pg, _, _):
        yield pg


def _overflowing(page: Any) -> list[str]:
    """The page and every scrolling table box wider than their room, as 'what: scroll > client'."""
    return page.evaluate(  # type: ignore[no-any-return]
        """() => {
          const bad = [];
          const d = document.documentElement;
          if (d.scrollWidth > d.clientWidth) bad.push(`page: ${d.scrollWidth} > ${d.clientWidth}`);
          document.querySelectorAll('.wrap').forEach((w) => {
            if (w.offsetParent !== null && w.scrollWidth > w.clientWidth)
              bad.push(`${w.getAttribute('aria-label')}: ${w.scrollWidth} > ${w.clientWidth}`);
          });
          return bad;
        }"""
    )


def test_the_cpu_only_report_fits_1280_px_with_every_row_shown(page: Any) -> None:
    assert page.locator("#host").is_visible()
    assert page.locator("#host details").count() == 2  # ops and op types (named alike): 232 rows
    assert _overflowing(page) == []
    visible = page.locator("#host tbody tr:visible").count()
    page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
    assert page.locator("#host tbody tr:visible").count() > visible
    assert _overflowing(page) == []
    # the number columns are on screen, not cut off: the last one ends inside the viewport
    right = page.evaluate(
        "Math.max(...[...document.querySelectorAll('#host td.num')]"
        ".map((c) => c.getBoundingClientRect().right))"
    )
    assert 0 < right <= 1280
