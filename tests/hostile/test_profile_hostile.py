"""``tcreport profile`` and ``tcreport.profile()`` against what a hostile tester tried (issue #25,
third round), the parts that need no framework: the step window's validation, an nsys whose
``--help`` leaves a process holding its output, an nsys that writes no report, an empty key node,
a file that is not a Python script, and ``report -o x.md``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from trace_paths import DLPROF_CNN
from typer.testing import CliRunner

import tcreport
import tcreport.cli.profile_cmd  # noqa: F401  (registers the command)
from tcreport.capture import backends
from tcreport.cli import app
from tcreport.errors import UsageError
from tcreport.session import _window

runner = CliRunner()


@pytest.mark.parametrize("steps", ["abc", [1.5], None, [True], range(5, 1), range(0, 10, 2), [-1]])
def test_steps_that_are_not_a_window_are_refused_in_the_api_words(steps: object) -> None:
    window = tcreport.profile(steps=steps)
    with pytest.raises(UsageError, match=r"^steps must be consecutive step numbers"):
        window.__enter__()


def test_a_huge_range_stays_a_range() -> None:
    begun = time.perf_counter()
    assert _window(range(0, 10**9)) == (0, 10**9 - 1)
    assert _window(range(7, 8)) == (7, 7) and _window([3, 4, 5]) == (3, 5)
    assert time.perf_counter() - begun < 1


def _fake_nsys(tmp_path: Path, body: str, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    nsys = bin_dir / "nsys"
    nsys.write_text("#!/bin/bash\n" + body)
    nsys.chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent),
                                                "/usr/bin", "/bin"]))  # fmt: skip


def test_nsys_help_that_leaves_a_child_holding_its_output_does_not_stall(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_nsys(tmp_path, 'echo "usage --cuda-graph-trace"\n( sleep 30 ) &\nexit 0\n', monkeypatch)
    begun = time.perf_counter()
    assert backends.nsys_lists("--cuda-graph-trace")
    assert not backends.nsys_lists("--no-such-option")
    assert time.perf_counter() - begun < 10, "waited for the grandchild's pipe"


def test_nsys_that_writes_no_report_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_nsys(tmp_path, 'echo "usage"\nexit 0\n', monkeypatch)
    script = tmp_path / "train.py"
    script.write_text("import torch\n")
    out = tmp_path / "out"
    result = runner.invoke(app, ["profile", str(script), "--backend", "nsys", "--output-dir",
                                 str(out)])  # fmt: skip
    assert result.exit_code == 5, result.output
    assert "nsys profile exited with code 0 but wrote no report (train.nsys-rep is missing)" in (
        result.stderr
    )
    assert "failed with exit code 0" not in result.stderr
    assert not out.exists(), "a run that recorded nothing leaves no empty folder"


def test_empty_key_node_is_refused_before_the_run(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("raise SystemExit('must not run')\n")
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["profile", str(script), "--key-node", "", "--output-dir", str(out)]
    )
    assert result.exit_code == 2, result.output
    assert "--key-node '': empty" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("text", ["", "echo hello\n", "#!/bin/sh\necho hi\n"])
def test_a_file_that_is_not_a_python_script_is_a_usage_error(tmp_path: Path, text: str) -> None:
    afile = tmp_path / "afile"
    afile.write_text(text)
    out = tmp_path / "out"
    result = runner.invoke(app, ["profile", str(afile), "--output-dir", str(out)])
    assert result.exit_code == 2, result.output
    assert "not a Python script" in result.stderr
    assert not out.exists()


def test_a_python_script_without_the_suffix_is_still_run(tmp_path: Path) -> None:
    assert backends._python_script(_write(tmp_path / "train", "#!/usr/bin/env python3\n"))
    assert not backends._python_script(_write(tmp_path / "run", "#!/bin/sh\n"))


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_report_to_a_md_file_writes_markdown(tmp_path: Path) -> None:
    if not DLPROF_CNN.exists():
        pytest.skip("needs ../shared/realtraces")
    target = tmp_path / "notes.md"
    result = runner.invoke(app, ["report", str(DLPROF_CNN), "-o", str(target)])
    assert result.exit_code == 0, result.output
    text = target.read_text()
    assert not text.lstrip().lower().startswith(("<!doctype", "<html")), text[:80]
    assert text.lstrip().startswith("#"), text[:80]
