"""The batch index of the real archive in a browser: the runs table is what the page opens with,
its heads sort it (the report's own script, let in by the CSP), and nothing is fetched.

Skips like test_browser.py without playwright or a Chromium (fails under TCREPORT_REQUIRE_BROWSER=1).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from trace_paths import REALTRACES, need

from tcreport import api

ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
_COLUMN_JS = """(idx) => Array.from(document.getElementById("t-runs").tBodies[0].rows,
  (r) => r.cells[idx].getAttribute("data-v") ?? r.cells[idx].textContent)"""


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, list[str], list[str]]]:
    required = os.environ.get("TCREPORT_REQUIRE_BROWSER") == "1"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if required:
            pytest.fail("TCREPORT_REQUIRE_BROWSER=1 but the playwright package is not installed")
        pytest.skip("playwright is not installed")
    exe = os.environ.get("TCREPORT_CHROMIUM") or shutil.which("chromium")
    if not exe or not Path(exe).exists():
        if required:
            pytest.fail("TCREPORT_REQUIRE_BROWSER=1 but no chromium executable was found")
        pytest.skip("no chromium executable")
    out = tmp_path_factory.mktemp("index") / "out"
    api.batch(need(REALTRACES), out, jobs=2)
    url = (out / "index.html").resolve().as_uri()
    requests: list[str] = []
    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.route("**/*", lambda r: r.continue_() if r.request.url == url else r.abort())
        pg = context.new_page()
        pg.on("request", lambda r: requests.append(r.url))
        pg.on("pageerror", lambda e: problems.append(str(e)))
        pg.on(
            "console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None
        )
        pg.goto(url)
        pg.wait_for_load_state("load")
        yield pg, requests, problems
        browser.close()


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
