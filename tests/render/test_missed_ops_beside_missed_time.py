"""Beside the eligible time not on Tensor Cores, the count of the ops that time is spread over.

Since fix11b, ``verdict.eligible_not_using_op_count`` counts the ops that used Tensor Cores in no
call (so the JSON's counts add up), while the missed time also holds the missed calls of ops that
used them in others (``verdict.missed_op_count`` counts both). On the H200 mix sample every
eligible op used them in some calls: the Markdown verdict table read "595.1 µs (0 ops)". The
renderers that print a count beside the missed time (tcreport/render/markdown.py's verdict table,
notebook_html.py's line, the HTML eligibility caption) print ``missed_op_count``.
"""

from __future__ import annotations

from trace_paths import H200_NCU, need

from tcreport import api, fmt
from tcreport.render import markdown

MIX = H200_NCU / "mix" / "kineto_mix_h.json.gz"


def test_markdown_counts_the_ops_the_missed_time_is_spread_over() -> None:
    view = api.analyze(api.load(need(MIX)))
    v = view.analysis.verdict
    assert v.eligible_not_using_gpu_ns and v.missed_op_count == 2
    assert v.eligible_not_using_op_count == 0  # all of them used Tensor Cores in some calls
    md = markdown.render(view)
    assert f"{fmt.ns(v.eligible_not_using_gpu_ns)} (2 ops; {v.miss_share_words})" in md
