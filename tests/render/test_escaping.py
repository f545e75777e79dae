"""Trace strings are data: inert in PR-comment Markdown, never raw control codes on a terminal.

Synthetic hostile runs (tests/synthetic.py) carry the injections from issue 14 in every name.
The Markdown is rendered with cmark-gfm, the engine GitHub uses, to prove what a reviewer sees.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console
from synthetic import MARKDOWN_HOSTILE, TERMINAL_HOSTILE, hostile_run
from typer.testing import CliRunner

from tcreport import api
from tcreport.cli import app
from tcreport.compare import diff as compare
from tcreport.render import diff_html, diff_markdown, escape, terminal
from tcreport.report import Report

runner = CliRunner()
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # all but TAB and LF


def _view(name: str) -> Report:
    return api.analyze(hostile_run(name), source_path=f"traces/{name}.sqlite")


def _gfm(text: str) -> str:
    cmarkgfm = pytest.importorskip("cmarkgfm")
    from cmarkgfm.cmark import Options

    html: str = cmarkgfm.github_flavored_markdown_to_html(text, options=Options.CMARK_OPT_UNSAFE)
    return html


def _assert_inert(markdown: str, headings: int) -> str:
    """No heading, link, mention, issue reference or HTML beyond the renderer's own."""
    html = _gfm(markdown)
    assert len(re.findall(r"<h[1-6]", html)) == headings, html
    assert "<a " not in html and "<b>" not in html and "<img" not in html, html
    assert "evil.example" in html  # the text is still there, shown, not linked
    text = re.sub(r"<[^>]+>", "", html)
    assert not re.search(r"@\w", text), "a mention would ping someone"
    assert not re.search(r"#\d|GH-\d", text), "an issue reference would link"
    assert "All Tensor Cores OK" in text
    for table in re.findall(r"<table>(.*?)</table>", html, flags=re.S):  # no cell split/merged
        widths = {
            len(re.findall(r"<t[dh][ >]", row))
            for row in re.findall(r"<tr>(.*?)</tr>", table, flags=re.S)
        }
        assert len(widths) == 1, table
    cells = [c for c in re.findall(r"<td>(.*?)</td>", html, flags=re.S) if "Tensor Cores OK" in c]
    assert cells, "the hostile name is in no table cell"
    for cell in cells:  # the whole name stayed in its cell: "|" split nothing off
        assert "evil.example" in cell and "&lt;b&gt;b&lt;/b&gt;" in cell, cell
    return html


def test_markdown_escaper_neutralises_every_construct() -> None:
    out = escape.markdown(MARKDOWN_HOSTILE)
    assert "\r" not in out and "\n" not in out
    html = _gfm(f"| a |\n|---|\n| {out} |\n")
    assert "<h2" not in html and "<a " not in html and "<code>" not in html
    assert len(re.findall(r"<td>", html)) == 1


def test_report_markdown_is_inert() -> None:
    md = api.render_markdown(_view(MARKDOWN_HOSTILE))
    _assert_inert(md, headings=1)


def test_diff_markdown_is_inert() -> None:
    base, head = _view(MARKDOWN_HOSTILE), _view(MARKDOWN_HOSTILE)
    d = compare.diff(base, head, force=True)
    md = diff_markdown.render(d, "0")
    _assert_inert(md, headings=1)


def test_terminal_escaper_shows_controls() -> None:
    out = escape.terminal(TERMINAL_HOSTILE)
    assert not CONTROL.search(out)
    assert "\\x1b]0;pwned\\x07" in out and "\\x9b" in out and "\\r" not in out
    assert escape.terminal("plain name ünïcode") == "plain name ünïcode"


def test_terminal_summary_sends_no_control_characters() -> None:
    buf = io.StringIO()
    console = Console(file=buf, width=200, force_terminal=False, color_system=None)
    terminal.render(_view(TERMINAL_HOSTILE), console)
    out = buf.getvalue()
    assert not CONTROL.search(out), repr(out)
    assert "\\x1b]0;pwned" in out  # the GPU, op, type, path names and the note are shown
    assert out.count("\\x1b]0;pwned") >= 5
    assert "[bold]b[/bold]" in out  # rich markup in a name is text, not style


def test_terminal_summary_through_the_cli_on_a_hostile_ingest(tmp_path: Path) -> None:
    api.ingest(hostile_run(TERMINAL_HOSTILE), tmp_path / "run")
    result = runner.invoke(app, ["summary", str(tmp_path / "run")])
    assert result.exit_code == 0, result.stderr
    assert not CONTROL.search(result.stdout)
    assert "\\x1b[2J" in result.stdout


def test_error_line_shows_control_characters_in_file_names(tmp_path: Path) -> None:
    bad = tmp_path / "evil\n\x1b]0;pwned\x07\x1b[2J.json"
    bad.write_text("{not json")
    result = runner.invoke(app, ["summary", str(bad)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tcreport: error: "), result.stderr
    assert not CONTROL.search(result.stderr)
    assert "evil\\x0a\\x1b]0;pwned\\x07\\x1b[2J.json" in lines[0]


@pytest.mark.parametrize(
    "char", ["\u202a", "\u202e", "\u2066", "\u2069", "\u200b", "\u200d", "\ufeff"]
)
def test_synthetic_markdown_shows_bidi_overrides_and_zero_width_characters(char: str) -> None:
    """ "Trojan Source": an override or a zero-width character would change what a reviewer reads."""
    out = escape.markdown(f"gemm{char}_kernel")
    assert char not in out
    assert out == f"gemm\\\\u{ord(char):04x}\\_kernel"


def test_html_escaper_shows_control_characters_as_symbols() -> None:
    out = escape.html(TERMINAL_HOSTILE + "\x7f\tx\ny")
    assert not CONTROL.search(out)
    assert "op␛]0;pwned␇␛[2J␛[31mred␍␈\\u009b2J" in out and out.endswith("␡\tx\ny")
    assert escape.html("plain name ünïcode") == "plain name ünïcode"


def test_synthetic_html_report_and_diff_show_no_raw_control_characters() -> None:
    """ESC, BEL and CR stayed raw in the HTML's text and title attributes: invisible on the page,
    live again when a name is copied into a terminal. Every printed string is shown instead."""
    view = _view(TERMINAL_HOSTILE)
    page = api.render_html(view)
    assert not CONTROL.search(page)
    assert page.count("op␛]0;pwned␇␛[2J") >= 3  # names in the tables and in titles
    assert 'title="op␛]0;pwned␇' in page or "<title>op␛]0;pwned␇" in page
    diff = diff_html.render(compare.diff(view, view, force=True), "0")
    assert not CONTROL.search(diff) and "op␛]0;pwned␇" in diff


def test_synthetic_batch_index_shows_no_raw_control_characters(tmp_path: Path) -> None:
    """A folder named with ANSI sequences (a run's source in the index) and a hostile run."""
    root = tmp_path / "traces"
    root.mkdir()
    api.ingest(hostile_run(TERMINAL_HOSTILE), root / "synthetic_ansi\x1b[31mred\x07")
    api.batch(root, tmp_path / "out")
    index = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert not CONTROL.search(index)
    assert "synthetic_ansi␛[31mred␇" in index
    for report in (tmp_path / "out" / "reports").glob("*.html"):
        assert not CONTROL.search(report.read_text(encoding="utf-8"))
