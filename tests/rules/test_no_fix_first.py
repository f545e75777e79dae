"""Where no finding takes the "fix first" place, the headline says why a high or medium one does
not: a newcomer read "Fix first: no actionable finding" above "[high] IT002" and was not told that
measurement findings never qualify. The words are decided once (``rules.no_fix_first``) and every
output, ``profile``'s own verdict lines included, prints them.

No bundled or real trace has only non-qualifying high or medium findings, so the real AlexNet run's
report is given such findings here (``*synthetic*``)."""

from __future__ import annotations

import dataclasses
import io

import pytest
from rich.console import Console
from trace_paths import SAMPLES

from tcreport import api, rules
from tcreport.cli import profile_flow
from tcreport.render import terminal
from tcreport.report import Report
from tcreport.rules.base import Finding, Severity

ALEXNET = next((SAMPLES / "kineto-a100-tf32-alexnet").glob("*.json.gz"))

WARMUP = Finding(
    "IT002", Severity.HIGH, "Iteration 0 is 3.2x the median", "d", fix="--iter-start 1"
)
DLPROF = Finding("dlprof:amp", Severity.MEDIUM, "AMP", "d", fix="f", source="DLProf expert systems")
NO_FIX = Finding("GP001", Severity.HIGH, "Low GPU utilisation", "d")
LOW = Finding("TC002", Severity.LOW, "Unclassified kernels", "d", fix="f")


@pytest.mark.parametrize(
    ("findings", "words"),
    [
        ((), "no actionable finding"),
        ((LOW,), "no actionable finding"),
        (
            (WARMUP, LOW),
            "no actionable finding (IT002 [high] is about the measurement or the input, not a "
            "change to the model)",
        ),
        (
            (DLPROF,),
            "no actionable finding (dlprof:amp [medium] comes from DLProf expert systems, not "
            "from tcreport's rules)",
        ),  # fmt: skip
        ((NO_FIX, WARMUP), "no actionable finding (GP001 [high] names no fix)"),
    ],
)
def test_the_words_name_the_first_high_or_medium_finding_that_does_not_qualify(
    findings: tuple[Finding, ...], words: str
) -> None:
    assert rules.fix_first(findings) is None
    assert rules.no_fix_first(findings) == words


@pytest.fixture(scope="module")
def warmup_only_synthetic() -> Report:
    view = api.analyze(api.load(ALEXNET))
    assert view.fix_first is not None and view.no_fix_first is None  # a real fix-first: TC001
    findings = (WARMUP, LOW)
    return dataclasses.replace(
        view, findings=findings, fix_first=None, no_fix_first=rules.no_fix_first(findings)
    )


def test_every_output_prints_the_one_reason(warmup_only_synthetic: Report) -> None:
    view = warmup_only_synthetic
    why = "IT002 [high] is about the measurement or the input, not a change to the model"
    console = Console(width=200, record=True, file=io.StringIO())
    terminal.render(view, console)
    assert f"Fix first: no actionable finding ({why})" in console.export_text()
    md_why = why.replace("[", "\\[").replace("]", "\\]")  # Markdown's escapes: data stays text
    assert f"**Fix first:** no actionable finding ({md_why})" in api.render_markdown(view)
    assert f"<strong>Fix first:</strong> no actionable finding ({why})." in api.render_html(view)


def test_profile_prints_the_fix_first_line_without_one_too(
    warmup_only_synthetic: Report, capsys: pytest.CaptureFixture[str]
) -> None:
    """``profile`` printed its verdict and nothing about fix first where ``summary`` said "no
    actionable finding"."""
    profile_flow._verdict(warmup_only_synthetic)
    err = capsys.readouterr().err
    assert "tcreport: fix first: no actionable finding (IT002 [high] is about" in err


def test_the_summary_json_carries_the_words_too(warmup_only_synthetic: Report) -> None:
    """``fix_first`` is null without one; ``no_fix_first`` says what the other outputs' line says
    (hostile17: the JSON gave no reason), and is null beside a fix-first finding."""
    import json

    data = json.loads(api.render_json(warmup_only_synthetic))
    assert data["fix_first"] is None
    assert data["no_fix_first"] == warmup_only_synthetic.no_fix_first
    assert data["no_fix_first"].startswith("no actionable finding (IT002 [high]")
    real = json.loads(api.render_json(api.analyze(api.load(ALEXNET))))
    assert real["fix_first"] is not None and real["no_fix_first"] is None
