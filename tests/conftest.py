"""Shared test fixtures: where the real traces live, bundled copies, and a readable skip summary.

``TCREPORT_REALTRACES=/nonexistent python -m pytest`` runs the suite as a fresh clone without
``../shared`` beside it would: the two real traces also bundled in ``sample_traces/`` (byte for
byte the same files) are then read from there, so only tests that need other real traces skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: CI clones the repo with shared/ beside it; developers have it at ../shared as well.
REALTRACES = Path(os.environ.get("TCREPORT_REALTRACES", ROOT.parent / "shared" / "realtraces"))
SAMPLES = ROOT / "sample_traces"
#: realtraces folder -> the bundled copy of the same trace (tests/test_nsys_sqlite.py checks that
#: the nsys one is byte-identical when both are present)
BUNDLED = {
    "nsys/h100x2-bf16-fastvideo": SAMPLES / "nsys-h100x2-bf16",
    "kineto/a100-tf32-alexnet": SAMPLES / "kineto-a100-tf32-alexnet",
}


def real_or_bundled(rel: str) -> Path:
    """``REALTRACES / rel``, or its bundled copy in ``sample_traces/`` when ``../shared`` is absent
    (a path with no bundled copy is returned as is, for the caller to skip on)."""
    real = REALTRACES / rel
    if real.exists():
        return real
    for folder, sample in BUNDLED.items():
        if rel == folder or rel.startswith(folder + "/"):
            return sample / rel[len(folder) :].lstrip("/")
    return real


DLPROF_CNN = REALTRACES / "dlprof" / "v1.8-pytorch-cnn"
NSYS_H100_REAL = REALTRACES / "nsys" / "h100x2-bf16-fastvideo" / "mfu_2gpu_after.sqlite"
NSYS_H100 = real_or_bundled("nsys/h100x2-bf16-fastvideo/mfu_2gpu_after.sqlite")
NSYS_WIN2022 = REALTRACES / "nsys" / "v2022.1-windows-synthetic" / "con_kernel.sqlite"


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"real trace not available: {path}")
    return path


@pytest.fixture
def dlprof_cnn() -> Path:
    return _need(DLPROF_CNN)


@pytest.fixture
def nsys_h100() -> Path:
    return _need(NSYS_H100)


@pytest.fixture
def nsys_win2022() -> Path:
    return _need(NSYS_WIN2022)


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    text = text.removeprefix("Skipped: ")
    if "real trace" in text or "realtraces" in text:
        return "needs ../shared/realtraces (or TCREPORT_REALTRACES)"
    return text if len(text) <= 100 else text[:99] + "…"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per skip reason with its count, instead of one line per skipped test."""
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
