"""A finding reads the same in every output: its detail (what to change: the padding, the layers a
fix "as listed" points to) in the terminal and the Markdown as in the HTML, and its saving in the
one wording of ``Finding.saving_words``, per iteration first where several are aggregated, so a
"313.2 µs per step" idle is never followed by a larger "saves ~626.4 µs".

The real run: ``sample_traces/h200-torch-cnn-ncu/cnn_bf16fixed`` (an H200 bf16 CNN whose first
convolution has 3 input channels; 4 aggregated ProfilerStep iterations).
"""

from __future__ import annotations

import dataclasses
import html as html_text
import io
import re

import pytest
from rich.console import Console
from synthetic import MARKDOWN_HOSTILE, TERMINAL_HOSTILE
from trace_paths import H200_NCU

from tcreport import api
from tcreport.render import escape, html, markdown, terminal
from tcreport.report import Report
from tcreport.rules.base import Finding, Severity

BF16 = H200_NCU / "cnn_bf16fixed" / "torch_cnn.pt.trace.json.gz"


@pytest.fixture(scope="module")
def view() -> Report:
    return api.analyze(api.load(BF16), source_path=str(BF16))


def _terminal(view: Report, width: int = 120) -> str:
    buf = io.StringIO()
    terminal.render(view, Console(file=buf, width=width, highlight=False))
    return buf.getvalue()


def _by_id(view: Report, fid: str) -> Finding:
    return next(f for f in view.findings if f.id == fid)


def test_terminal_and_markdown_name_what_to_change(view: Report) -> None:
    text, md = _terminal(view), markdown.render(view)
    # the items a fix "as listed" / "the named dimensions" refers to, as the rules wrote them
    for item in ("aten::cudnn_convolution: pad C 3 → 8", "in_channels 3 → 8"):
        assert item in text
        assert escape.markdown(item) in md
    for f in view.findings:  # every finding's detail, as the HTML shows it
        assert f.detail in text
        assert f"  - {escape.markdown(f.detail)}" in md


def test_finding_detail_is_escaped_in_terminal_and_markdown(view: Report) -> None:
    first = view.findings[0]
    hostile = dataclasses.replace(
        first, detail=f"{MARKDOWN_HOSTILE} {TERMINAL_HOSTILE}", evidence=()
    )
    v = dataclasses.replace(view, findings=(hostile,), fix_first=hostile)
    md = markdown.render(v)
    assert "\r" not in md and "\n## All" not in md and "@maintainer" not in md
    text = _terminal(v)
    assert "\x1b" not in text and "\x07" not in text and "\\x1b]0;pwned" in text


def test_the_saving_reads_per_iteration_in_every_output(view: Report) -> None:
    st = _by_id(view, "ST002")
    # the real run's figures: 313.2 µs idle per step, 626.4 µs saved over the 4 iterations
    assert "313.2 µs per step" in st.title
    assert st.saving_words == "saves ~156.6 µs per iteration, 626.4 µs over 4 iterations"
    text, md, page = _terminal(view), markdown.render(view), html.render(view)
    plain_page = html_text.unescape(re.sub(r"<[^>]+>", "", page))
    for f in view.findings:
        if f.saving_words is None:
            continue
        assert f"{f.title} ({f.saving_words})" in text
        assert f"{escape.markdown(f.title)} — {f.saving_words}" in md
        assert f"{f.title} {f.saving_words}" in plain_page.replace("\n", " ")
    assert "saves ~626.4 µs)" not in text  # the bare total after a per-step title: gone
    ff = view.fix_first
    assert ff is not None and ff.saving_words is not None
    assert f"Fix first: {ff.id}: {ff.title} ({ff.saving_words})" in text
    assert f"({ff.saving_words})." in plain_page


def test_one_iteration_states_the_saving_alone() -> None:
    one = Finding(
        "OP001",
        Severity.LOW,
        "t",
        "d",
        estimated_saving_ns=626_413,
        saving_iterations=1,
        saving_per_iteration_ns=626_413,
    )
    assert one.saving_words == "saves ~626.4 µs"
    assert dataclasses.replace(one, estimated_saving_ns=None).saving_words is None
    assert dataclasses.replace(one, saving_iterations=None).saving_amount == "~626.4 µs"
