"""``tcreport batch -j N`` leaves no process behind: no worker, forkserver or resource tracker is
alive or a zombie once the batch has returned, from the command line or from Python.

Each case runs in a fresh interpreter, so that no other test's forkserver or tracker is counted.
The command-line case makes that interpreter a child subreaper (Linux ``prctl``): whatever the
``tcreport`` process leaves running or unreaped when it exits is reparented to it, where the test
sees it, instead of to PID 1 (which in a container may never reap it)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from trace_paths import REALTRACES, ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc, prctl")

#: Prints this process's children, live or zombie, as JSON: (pid, state, name) from /proc.
_CHILDREN = """
import json, os
from pathlib import Path

def children():
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, rest = stat.split("(", 1)[1].rsplit(")", 1)
        state, ppid = rest.split()[:2]
        if int(ppid) == os.getpid():
            found.append([int(entry.name), state, name])
    return found
"""

_CLI = (
    _CHILDREN
    + """
import ctypes, subprocess, sys
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
done = subprocess.run([sys.executable, "-m", "tcreport", *sys.argv[1:]], capture_output=True)
assert done.returncode == 0, done.stderr.decode()
print(json.dumps(children()))
"""
)

_API = (
    _CHILDREN
    + """
import sys
from pathlib import Path
from tcreport.batch.runner import run_batch

if __name__ == "__main__":
    result = run_batch(Path(sys.argv[1]), Path(sys.argv[2]), jobs=2)
    assert result.processed == 4 and not result.failed, result
    print(json.dumps(children()))
"""
)


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    """Four real Kineto traces: enough for two workers to take two each."""
    traces = sorted((REALTRACES / "kineto").glob("*/*.json.gz"))
    if len(traces) < 4:
        pytest.skip("real traces not available")
    root = tmp_path / "in"
    root.mkdir()
    for name, src in zip("abcd", traces, strict=False):
        shutil.copy(src, root / f"{name}.json.gz")
    return root


def _children_after(script: str, tmp_path: Path, *args: str) -> list[list[object]]:
    path = tmp_path / "check_children.py"  # a file, not -c: forkserver workers re-import __main__
    path.write_text(script, encoding="utf-8")
    out = subprocess.run(
        [sys.executable, str(path), *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert "leaked" not in out.stderr  # the resource tracker found nothing left to clean up
    found: list[list[object]] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


def test_the_batch_command_leaves_no_process_behind(archive: Path, tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    assert _children_after(_CLI, tmp_path, "batch", str(archive), "-o", out, "-j", "2") == []


def test_run_batch_returns_with_no_child_alive_or_defunct(archive: Path, tmp_path: Path) -> None:
    assert _children_after(_API, tmp_path, str(archive), str(tmp_path / "out")) == []
