"""The test command in a fresh clone (no ../shared beside it): the bundled samples' cases run, and
skips are summarised by reason instead of one line per test."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _pytest(*args: str) -> str:
    env = {**os.environ, "TCREPORT_REALTRACES": "/nonexistent"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    return done.stdout + done.stderr


def test_bundled_trace_cases_run_without_shared() -> None:
    out = _pytest(
        "tests/ingest/test_kineto_json.py",
        "tests/ingest/test_nsys_sqlite.py",
        "tests/analysis/test_tc_kernels.py",
        "-k",
        "a100 or h100_per_device or h100_autograd or nsys_h100",
    )
    assert re.search(r"\b\d+ passed\b", out), out
    assert "skipped" not in out and "failed" not in out, out


def test_skips_are_one_line_per_reason() -> None:
    out = _pytest("tests/ingest/test_kineto_json.py", "-k", "bert or v100")
    assert "SKIPPED [" not in out, out  # no line per skipped test
    m = re.search(r"^\s+(\d+)  needs \.\./shared/realtraces \(or TCREPORT_REALTRACES\)$", out, re.M)
    assert m is not None and int(m.group(1)) > 1, out
    assert re.search(rf"\b{m.group(1)} skipped\b", out)
