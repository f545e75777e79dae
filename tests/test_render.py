"""Renderers: hostile names stay text, output is deterministic, HTML is self-contained."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from synthetic import HOSTILE, hostile_run

from tcreport import api
from tcreport.ingest import parquet


@pytest.fixture(scope="module")
def view():  # type: ignore[no-untyped-def]
    return api.analyze(hostile_run(), source_path=f"traces/{HOSTILE}.sqlite")


def test_html_shows_hostile_names_as_text(view) -> None:  # type: ignore[no-untyped-def]
    html = api.render_html(view)
    assert "<img src=x" not in html
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in html
    # exactly one executable script, and the embedded JSON cannot close its block
    assert html.count("<script>") == 1
    block = re.search(r'<script type="application/json" id="tcreport-summary">(.*?)</script>', html, re.S)
    assert block is not None
    assert "</script" not in block.group(1) and "<" not in block.group(1)
    assert json.loads(block.group(1))["schema"] == "tcreport.summary/1"


def test_html_is_self_contained_with_strict_csp(view) -> None:  # type: ignore[no-untyped-def]
    html = api.render_html(view)
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert csp is not None
    policy = csp.group(1)
    assert "default-src 'none'" in policy and "connect-src 'none'" in policy
    assert "unsafe-inline" not in policy
    assert not re.search(r'(src|href)="(https?:)?//', html), "external resource referenced"
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")


def test_html_is_deterministic(view) -> None:  # type: ignore[no-untyped-def]
    again = api.analyze(hostile_run(), source_path=f"traces/{HOSTILE}.sqlite")
    assert api.render_html(view) == api.render_html(again)


def test_markdown_escapes_hostile_names(view) -> None:  # type: ignore[no-untyped-def]
    md = api.render_markdown(view)
    assert "</script>" not in md and "<img" not in md
    for line in md.splitlines():
        if line.startswith("| /model/"):
            assert line.count(" | ") == 5, line  # the name did not add table cells


def test_json_keeps_hostile_names_verbatim(view) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(api.render_json(view))
    assert data["kernels"][0]["name"] == HOSTILE
    assert list(data) == sorted(data)


def test_terminal_summary_does_not_interpret_markup(view, capsys) -> None:  # type: ignore[no-untyped-def]
    from rich.console import Console

    from tcreport.render import terminal

    console = Console(width=200, force_terminal=False, color_system=None)
    with console.capture() as cap:
        terminal.render(view, console)
    assert HOSTILE in cap.get()


def test_parquet_round_trip_gives_identical_summary(tmp_path: Path) -> None:
    run = hostile_run()
    out = api.ingest(run, tmp_path / "ingested")
    assert parquet.sniff(out)
    again = api.load(out)
    a = api.render_json(api.analyze(run, source_path="x"))
    b = api.render_json(api.analyze(again, source_path="x"))
    assert a == b
