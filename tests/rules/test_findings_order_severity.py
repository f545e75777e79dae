"""Findings are listed by severity, then saving; "fix first" is the first actionable one.

A newcomer read "Fix first: no actionable finding" directly above "[high] GP001" (with a fix, but no
measurable saving) on the MI250 trace, and "[medium] TC003" above "[high] AU002" on the H200 CNN
sample: the list was ranked by saving within "high or medium", and "fix first" required a saving.
"""

from __future__ import annotations

import pytest
from trace_paths import H200_NCU, REALTRACES, need

from tcreport import api
from tcreport.report import Report
from tcreport.rules import NOT_A_FIX
from tcreport.rules.base import SEVERITY_ORDER, Severity

MI250 = REALTRACES / "kineto" / "mi250-rocm-minitoy" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"
DDP = REALTRACES / "kineto" / "a100-ddp-nccl-3step" / "nccl_data.json.gz"


def _consistent(view: Report) -> None:
    order = [SEVERITY_ORDER[f.severity] for f in view.findings]
    assert order == sorted(order), [(f.id, f.severity) for f in view.findings]
    actionable = [
        f
        for f in view.findings
        if f.severity in (Severity.HIGH, Severity.MEDIUM)
        and f.fix
        and f.id not in NOT_A_FIX
        and f.source == "tcreport"
    ]
    assert view.fix_first is (actionable[0] if actionable else None)


@pytest.mark.realtraces
def test_real_mi250_fix_first_is_the_high_gp001_not_no_actionable_finding() -> None:
    view = api.analyze(api.load(need(MI250)))
    _consistent(view)
    assert view.fix_first is not None and view.fix_first.id == "GP001"
    assert view.fix_first.severity == Severity.HIGH and view.fix_first.estimated_saving_ns is None


@pytest.mark.realtraces
def test_real_ddp_high_findings_come_before_medium_ones() -> None:
    view = api.analyze(api.load(need(DDP)))
    _consistent(view)
    ids = [f.id for f in view.findings]
    assert ids.index("GP001") < ids.index("CV003")  # [high] without a saving above [medium]


def test_h200_cnn_fp16_high_au002_is_listed_before_medium_tc003() -> None:
    view = api.analyze(api.load(need(H200_NCU / "cnn_fp16")))
    _consistent(view)
    ids = [f.id for f in view.findings]
    assert ids.index("AU002") < ids.index("TC003")
    assert view.fix_first is not None and view.fix_first.id == "GP001"  # largest high saving
