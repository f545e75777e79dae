"""What the docs and README say matches what tcreport does on the bundled A100 sample."""

from __future__ import annotations

import re
from pathlib import Path

import tcreport

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
KINETO = ROOT / "sample_traces" / "kineto-a100-tf32-alexnet"


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n### ", start + 1)
    return text[start : end if end >= 0 else None]


def test_tc004_library_choice_is_low_in_the_docs_and_on_the_a100_sample() -> None:
    tc004 = _section((DOCS / "findings.md").read_text(encoding="utf-8"), "### TC004")
    assert re.search(r"every\s+reason is `library-choice` the finding is low", tc004)
    run = tcreport.open(KINETO)  # its one TC004 op is cuDNN's CUDA-core pick beside TF32 kernels
    tc = run.findings.set_index("id").loc["TC004"]
    assert "(why: library-choice)" in tc["detail"] and "30.7% of GPU kernel time" in tc["detail"]
    assert tc["severity"] == "low"  # above the 10 % high threshold, low by library choice


def test_summary_and_report_docs_name_fix_first_and_the_finding_order() -> None:
    for name in ("summary-json.md", "report.md"):
        text = (DOCS / name).read_text(encoding="utf-8")
        assert "`fix_first`" in text, name
        # named fix (fix11b): the order is by severity, then saving
        assert "by severity (high, medium, low, info)" in text, name
    summary = tcreport.open(KINETO).summary()
    order = {"high": 0, "medium": 1, "low": 2, "info": 3}
    ranks = [order[f["severity"]] for f in summary["findings"]]
    assert ranks == sorted(ranks) and summary["fix_first"]["id"] == summary["findings"][0]["id"]


def test_the_readme_commands_outputs_are_git_ignored() -> None:
    """The README's quick start writes these into the checkout; git status must stay clean."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").split()
    for out in ("sample-report.html", "tcreport.html", "tcreport.md"):
        assert out in readme and f"/{out}" in ignored, out
