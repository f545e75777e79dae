"""One offline page in Debian's Chromium through Playwright's Python API, for the browser tests.

Skips without playwright or a Chromium, and fails instead under ``TCREPORT_REQUIRE_BROWSER=1``
(``.ci/run``). The page may load its own file only: every other request is aborted and recorded,
and page errors and console errors or warnings are collected, so a test asserts both are empty.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip


def chromium() -> str:
    """The Chromium executable, after checking playwright imports; skip (or fail) otherwise."""
    required = os.environ.get("TCREPORT_REQUIRE_BROWSER") == "1"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        if required:
            pytest.fail("TCREPORT_REQUIRE_BROWSER=1 but the playwright package is not installed")
        pytest.skip("playwright is not installed")
    exe = os.environ.get("TCREPORT_CHROMIUM") or shutil.which("chromium")
    if not exe or not Path(exe).exists():
        if required:
            pytest.fail("TCREPORT_REQUIRE_BROWSER=1 but no chromium executable was found")
        pytest.skip("no chromium executable")
    return exe


@contextmanager
def offline_page(html: Path, exe: str) -> Iterator[tuple[Any, list[str], list[str]]]:
    """``html`` loaded at 1280 x 900: (the page, the requests it made, its errors)."""
    from playwright.sync_api import sync_playwright

    url = html.resolve().as_uri()
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
        try:
            yield pg, requests, problems
        finally:
            browser.close()
