"""The profiler's own TC Eligible / Using TC / GPU time decide, for every DLProf report version;
tcreport's own verdict sits beside them and disagreements are counted."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from trace_paths import ROOT

from tcreport import api
from tcreport.render import html

#: A DLProf 0.x detailed report of a TF1 + XLA run, written from the columns such reports carry
#: (synthetic: no real 0.x report is licence-clean).
DETAILED_0X = ROOT / "tests" / "fixtures" / "dlprof-0x-tf1-xla-synthetic" / "tf1_xla_detailed.csv"


def _profiler_rows() -> list[dict[str, str]]:
    with DETAILED_0X.open(newline="") as f:
        rows = list(csv.reader(f))[1:]
    return [dict(zip(rows[0], r, strict=True)) for r in rows[1:]]


def test_synthetic_dlprof_0x_detailed_report_profiler_decides() -> None:
    view = api.analyze(api.load(DETAILED_0X))
    a = view.analysis
    rows = _profiler_rows()
    eligible = [r for r in rows if r["TC Eligible"] == "yes"]
    using = [r for r in eligible if r["Using TC"] == "yes"]
    assert all(o.gpu_ns is not None and o.gpu_ns > 0 for o in a.breakdown.ops)
    assert a.verdict.eligible_op_count == len(eligible) == 5
    assert a.verdict.using_op_count == len(using) == 3
    assert a.verdict.eligible_gpu_ns == sum(int(r["Total GPU Time (ns)"]) for r in eligible)
    by_name = {o.name: o for o in a.breakdown.ops}
    for r in rows:
        o = by_name[r["Op Name"]]
        assert o.tc_eligible == (r["TC Eligible"] == "yes"), r["Op Name"]
        assert o.uses_tc == (r["Using TC"] == "yes"), r["Op Name"]
    ea = a.verdict.op_eligibility_agreement
    assert ea is not None and ea.compared == 7 and ea.agreeing == 4
    assert {d.name for d in ea.disagreements} == {"_XlaRun", "_XlaCompile", "PartitionedCall"}
    page = html.render(view)
    assert "No GPU time of its own" not in page
    assert "eligible on 4 of 7 ops (3 disagree" in page


@pytest.mark.realtraces
@pytest.mark.parametrize("what", ["folder", "dlprof_dldb_7.sqlite"])
def test_dlprof_v18_agreement_is_counted(dlprof_cnn: Path, what: str) -> None:
    path = dlprof_cnn if what == "folder" else dlprof_cnn / what
    a = api.analyze(api.load(path)).analysis
    assert a.verdict.eligible_op_count == 5 and a.verdict.using_op_count == 0
    ea, ua = a.verdict.op_eligibility_agreement, a.verdict.op_tc_agreement
    assert ea is not None and ea.compared > 0 and ea.rate == 1.0
    assert ua is not None and ua.compared > 0 and ua.rate == 1.0
