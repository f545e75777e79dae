"""An eligible op with no GPU time of its own (``aten::matmul`` over ``aten::mm``) says why in every
output, in the analysis' words: the terminal and Markdown op tables mark its "0 ns" and say under
the table what the HTML eligibility table says in its row.

Real case: the H200 ``mix.py`` trace, whose terminal table listed ``aten::matmul`` at 0 ns,
eligible, not on Tensor Cores, with nothing to tell a wrapper from a miss.
"""

from __future__ import annotations

import io
from functools import cache

from rich.console import Console
from trace_paths import H200_NCU

from tcreport import api
from tcreport.analysis import figures
from tcreport.render import terminal
from tcreport.report import Report

MIX = H200_NCU / "mix" / "kineto_mix_h.json.gz"


@cache
def _mix() -> Report:
    return api.analyze(api.load(MIX))


def _terminal(view: Report) -> str:
    buf = io.StringIO()
    terminal.render(view, Console(file=buf, width=120, color_system=None))
    return buf.getvalue()


def test_the_analysis_decides_which_ops_are_wrappers() -> None:
    ops = {o.name: o for o in _mix().analysis.breakdown.ops}
    assert ops["aten::matmul"].gpu_time_note == figures.WRAPPER  # eligible, 0 ns
    assert ops["aten::mm"].gpu_time_note is None  # its kernels are its own
    assert ops["aten::randn"].gpu_time_note is None  # not eligible: no verdict to explain


def test_terminal_marks_the_wrapper_and_says_why_under_the_table() -> None:
    text = _terminal(_mix())
    (row,) = (line for line in text.splitlines() if "aten::matmul" in line)
    assert "0 ns †" in row
    assert f"† {figures.WRAPPER}" in text
    (randn,) = (line for line in text.splitlines() if "aten::randn" in line)
    assert "†" not in randn


def test_markdown_and_html_give_the_same_words() -> None:
    view = _mix()
    md = api.render_markdown(view)
    assert "| aten::matmul | matmul | 0 ns † |" in md and f"\n† {figures.WRAPPER}\n" in md
    page = api.render_html(view)
    assert page.count(f'<span class="note">{figures.WRAPPER}</span>') == 4  # its 4 wrappers


def test_no_mark_where_no_op_is_a_wrapper() -> None:
    view = api.analyze(api.load(H200_NCU / "cnn_bf16fixed" / "torch_cnn.pt.trace.json.gz"))
    shown = view.analysis.breakdown.ops[: terminal.TOP]
    assert all(o.gpu_time_note is None for o in shown)  # its top ops all have kernels of their own
    assert "†" not in _terminal(view)
    assert "†" not in api.render_markdown(view)
