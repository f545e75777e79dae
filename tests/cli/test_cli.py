"""The command line: fast help, one-line errors with the file named, nothing half-written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tcreport.cli import app

runner = CliRunner()


def test_help_does_not_import_pyarrow_jinja2_or_rich() -> None:
    """rich is the stderr console's and the terminal tables' (made on first use): help is
    typer's plain text."""
    code = (
        "import sys\n"
        "from tcreport.cli import main\n"
        "sys.argv = ['tcreport', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('HEAVY', sorted(m for m in ('pyarrow', 'jinja2', 'numpy', 'rich') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "HEAVY []" in out
    assert "report" in out and "summary" in out and "ingest" in out


def _bad_inputs(tmp: Path) -> dict[str, tuple[Path, str]]:
    empty = tmp / "empty.csv"
    empty.write_bytes(b"")
    other = tmp / "other.csv"
    other.write_text("a,b,c\n1,2,3\n")
    latin = tmp / "latin1.csv"
    latin.write_bytes(b"Kernel Report\nKernel Name,Uses TC\n\xe9\xff\xfe,no\n")
    corrupt = tmp / "corrupt.sqlite"
    corrupt.write_bytes(b"SQLite format 3\x00" + b"\x00\xff" * 300)
    emptydir = tmp / "nothing_here"
    emptydir.mkdir()
    (emptydir / "notes.txt").write_text("not a trace")
    return {
        "empty file": (empty, "empty"),
        "another tool's CSV": (other, "other.csv"),
        "not UTF-8": (latin, "latin1.csv"),
        "corrupt SQLite": (corrupt, "corrupt.sqlite"),
        "directory without traces": (emptydir, "nothing_here"),
        "missing path": (tmp / "nope.sqlite", "nope.sqlite"),
    }


@pytest.mark.parametrize(
    "case",
    [
        "empty file",
        "another tool's CSV",
        "not UTF-8",
        "corrupt SQLite",
        "directory without traces",
        "missing path",
    ],
)
@pytest.mark.parametrize("command", ["report", "summary", "ingest"])
def test_bad_input_is_one_line_error_and_no_output(tmp_path: Path, case: str, command: str) -> None:
    path, named = _bad_inputs(tmp_path)[case]
    out = tmp_path / ("out.html" if command == "report" else "out_dir")
    args = [command, str(path)]
    if command in ("report", "ingest"):
        args += ["-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("tcreport: error: ")
    assert named in lines[0]
    assert "Traceback" not in result.output
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")], (
        "temporary file left behind"
    )


def test_iter_stop_before_start_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["summary", str(tmp_path), "--iter-start", "5", "--iter-stop", "2"])
    assert result.exit_code == 2
    assert "--iter-stop 2 is before --iter-start 5" in result.stderr


def test_ingest_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    (tmp_path / "existing").mkdir()
    result = runner.invoke(app, ["ingest", str(tmp_path), "-o", str(tmp_path / "existing")])
    assert result.exit_code != 0
    assert "--force" in result.stderr


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.startswith("tcreport ")


def test_summary_json_is_valid_json_on_stdout_only(dlprof_cnn: Path) -> None:
    result = runner.invoke(app, ["summary", str(dlprof_cnn), "--json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["schema"] == "tcreport.summary/1"


def test_outputs_follow_the_umask_not_tempfile_0600(dlprof_cnn: Path, tmp_path: Path) -> None:
    """Atomic writes go through temporary files (0600); the result must be shareable as usual."""
    import os
    import stat

    old = os.umask(0o022)
    try:
        out = tmp_path / "r.html"
        assert runner.invoke(app, ["report", str(dlprof_cnn), "-o", str(out)]).exit_code == 0
        assert stat.S_IMODE(out.stat().st_mode) == 0o644
        folder = tmp_path / "ingested"
        assert runner.invoke(app, ["ingest", str(dlprof_cnn), "-o", str(folder)]).exit_code == 0
        assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    finally:
        os.umask(old)
