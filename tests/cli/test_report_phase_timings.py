"""``tcreport -v report``: how long each phase took (read, analyse, render), and nothing without -v.

Run as a real process: the ``-v`` level is set by the command's own logging set-up, which a test
runner's logging would otherwise pre-empt.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from trace_paths import ROOT

SAMPLE = ROOT / "sample_traces" / "kineto-a100-tf32-alexnet"


def _report(tmp_path: Path, *flags: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tcreport", *flags, "report", str(SAMPLE), "-o",
         str(tmp_path / "r.html")],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    return done.stderr


def test_verbose_report_times_each_phase(tmp_path: Path) -> None:
    said = _report(tmp_path, "-v")
    phases = re.findall(r"^tcreport: INFO: (read|analyse|render): \d+\.\d\d s$", said, re.M)
    assert phases == ["read", "analyse", "render"], said


def test_plain_report_says_only_what_it_wrote(tmp_path: Path) -> None:
    said = _report(tmp_path)
    assert said.splitlines() == [f"tcreport: wrote {tmp_path / 'r.html'}"]
