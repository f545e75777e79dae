"""Shared test fixtures: the real traces (skipped where absent; the two bundled in sample_traces/
are read from there without ../shared, see trace_paths.py), the Hypothesis profile, a skip summary,
and strict invariants for every analysis."""

from __future__ import annotations

import os
from pathlib import Path

import known_violations
import profiles  # noqa: F401  registers and loads the Hypothesis profile
import pytest
from trace_paths import DLPROF_CNN, NSYS_H100, NSYS_WIN2022, need

# Every analysis in the suite (subprocesses included) fails on a broken invariant instead of
# noting it (tcreport.analysis.invariants), except the open ones tests/known_violations.py lists.
os.environ.update(known_violations.environ())


@pytest.fixture
def dlprof_cnn() -> Path:
    return need(DLPROF_CNN)


@pytest.fixture
def nsys_h100() -> Path:
    return need(NSYS_H100)


@pytest.fixture
def nsys_win2022() -> Path:
    return need(NSYS_WIN2022)


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    text = text.removeprefix("Skipped: ")
    if "real trace" in text or "realtraces" in text:
        return "needs ../shared/realtraces (or TCREPORT_REALTRACES)"
    return text if len(text) <= 100 else text[:99] + "…"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per skip reason with its count, instead of one line per skipped test (-ra printed
    ~140 SKIPPED lines that buried the result)."""
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if r.skipped]
    if not skipped:
        return
    counts: dict[str, int] = {}
    for r in skipped:
        reason = _skip_reason(r)
        counts[reason] = counts.get(reason, 0) + 1
    terminalreporter.write_sep("-", f"{len(skipped)} skipped, by reason")
    for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        terminalreporter.write_line(f"{n:5d}  {reason}")
