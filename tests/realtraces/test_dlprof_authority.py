"""The profiler's own TC Eligible / Using TC / GPU time decide, for every DLProf report version;
tcreport's own verdict sits beside them and disagreements are counted."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from trace_paths import ROOT

from tcreport import api
from tcreport.render import html, terminal

#: A DLProf 0.x detailed report of a TF1 + XLA run, written from the columns such reports carry
#: (synthetic: no real 0.x report is licence-clean).
DETAILED_0X = ROOT / "tests" / "fixtures" / "dlprof-0x-tf1-xla-synthetic" / "tf1_xla_detailed.csv"


def _profiler_rows() -> list[dict[str, str]]:
    with DETAILED_0X.open(newline="") as f:
        rows = list(csv.reader(f))[1:]
    return [dict(zip(rows[0], r, strict=True)) for r in rows[1:]]


def test_synthetic_dlprof_0x_detailed_report_profiler_decides() -> None:
    """DLProf's own TC Eligible / Using TC decide, eligible ops with no GPU time included: a TF1
    + XLA run lists ``_XlaCompile``, ``PartitionedCall`` and ``_HostRecv`` ops as eligible
    without GPU time, and DLProf counts them (the filter for Kineto wrapper ops must not)."""
    view = api.analyze(api.load(DETAILED_0X))
    a = view.analysis
    rows = _profiler_rows()
    eligible = [r for r in rows if r["TC Eligible"] == "yes"]
    using = [r for r in eligible if r["Using TC"] == "yes"]
    no_time = [r for r in eligible if r["Total GPU Time (ns)"] == "0"]
    assert len(no_time) == 3
    assert a.verdict.eligible_op_count == len(eligible) == 8
    assert a.verdict.using_op_count == len(using) == 3
    assert a.verdict.eligible_not_using_op_count == len(eligible) - len(using)
    assert a.verdict.eligible_gpu_ns == sum(int(r["Total GPU Time (ns)"]) for r in eligible)
    by_name = {o.name: o for o in a.breakdown.ops}
    for r in rows:
        o = by_name[r["Op Name"]]
        assert o.tc_eligible == (r["TC Eligible"] == "yes"), r["Op Name"]
        assert o.uses_tc == (r["Using TC"] == "yes"), r["Op Name"]
    ea = a.verdict.op_eligibility_agreement
    assert ea is not None and ea.compared == 10 and ea.agreeing == 4
    assert {d.name for d in ea.disagreements} == {
        "_XlaRun", "_XlaCompile", "PartitionedCall", "_HostRecv"
    }  # fmt: skip
    page = html.render(view)
    assert "No GPU time of its own" not in page
    assert "eligible on 4 of 10 ops (6 disagree" in page


def test_synthetic_dlprof_0x_detailed_only_report_gives_op_level_figures() -> None:
    """No kernel table: the kernel-level figures stay n/a, and the op-level GPU total and the
    share of it in ops using Tensor Cores are given, labelled op-level in every output."""
    view = api.analyze(api.load(DETAILED_0X))
    a = view.analysis
    rows = _profiler_rows()
    total = sum(int(r["Total GPU Time (ns)"]) for r in rows)
    using = sum(int(r["Total GPU Time (ns)"]) for r in rows if r["Using TC"] == "yes")
    assert a.time.gpu_kernel_ns is None and a.verdict.tc_share is None
    assert a.verdict.op_level_gpu_ns == total == 67_500_000
    assert a.verdict.op_level_tc_share == pytest.approx(using / total)
    summary = json.loads(api.render_json(view))["tensor_core"]
    assert (summary["op_level_gpu_ns"], summary["op_level_share"]) == (total, using / total)
    assert "(op-level)" in html.render(view)
    assert "Op-level (the input has no kernel table): 83.0 % of 67.5 ms" in api.render_markdown(
        view
    )
    buf = io.StringIO()
    terminal.render(view, Console(file=buf, width=200))
    text = buf.getvalue()
    assert "Tensor Core share of op GPU time (op-level)  83.0 %" in text
    assert "Op GPU time (op-level)" in text and "67.5 ms" in text


@pytest.mark.realtraces
@pytest.mark.parametrize("what", ["folder", "dlprof_dldb_7.sqlite"])
def test_dlprof_v18_agreement_is_counted(dlprof_cnn: Path, what: str) -> None:
    path = dlprof_cnn if what == "folder" else dlprof_cnn / what
    a = api.analyze(api.load(path)).analysis
    assert a.verdict.eligible_op_count == 5 and a.verdict.using_op_count == 0
    ea, ua = a.verdict.op_eligibility_agreement, a.verdict.op_tc_agreement
    assert ea is not None and ea.compared > 0 and ea.rate == 1.0
    assert ua is not None and ua.compared > 0 and ua.rate == 1.0
