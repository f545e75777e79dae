"""The batch index of the real archive in a browser: the runs table is what the page opens with,
its heads sort it (the report's own script, let in by the CSP), and nothing is fetched.

Skips like test_browser.py without playwright or a Chromium (fails under TCREPORT_REQUIRE_BROWSER=1).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import browser_page
import pytest
from trace_paths import REALTRACES, need

from tcreport import api

_COLUMN_JS = """(idx) => Array.from(document.getElementById("t-runs").tBodies[0].rows,
  (r) => r.cells[idx].getAttribute("data-v") ?? r.cells[idx].textContent)"""


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, list[str], list[str]]]:
    exe = browser_page.chromium()
    out = tmp_path_factory.mktemp("index") / "out"
    api.batch(need(REALTRACES), out, jobs=2)
    with browser_page.offline_page((out / "index.html"), exe) as opened:
        yield opened


@pytest.mark.realtraces
def test_index_opens_on_the_runs_table_and_sorts(page: tuple[Any, list[str], list[str]]) -> None:
    pg, requests, problems = page
    rb, tb = pg.locator("#runs").bounding_box(), pg.locator("#trend").bounding_box()
    assert rb is not None and tb is not None and rb["y"] < tb["y"]
    assert rb["y"] < 900, "the runs table starts on the first screen"
    headers = pg.locator("#t-runs thead th")
    idx = next(i for i in range(headers.count()) if headers.nth(i).inner_text().startswith("on "))
    headers.nth(idx).locator("button").click()  # a number column sorts descending first
    shares = [float(v) for v in pg.evaluate(_COLUMN_JS, idx)]
    assert len(shares) > 2 and shares == sorted(shares, reverse=True)
    assert headers.nth(idx).get_attribute("aria-sort") == "descending"
    assert requests == [pg.url] and problems == []
