"""Every error is one line ``tcreport: error: ...`` with the README's exit code, Click's too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from synthetic import hostile_run
from trace_paths import SAMPLES
from typer.testing import CliRunner

import tcreport.cli.batch_cmds  # noqa: F401  registers batch/query on the app
from tcreport import api
from tcreport.cli import app

runner = CliRunner()
KINETO = SAMPLES / "kineto-a100-tf32-alexnet" / "benchmark_result_2869224_1695835535_trace.json.gz"


def one_line(args: list[str], code: int) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == code, (result.exit_code, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tcreport: error: "), result.stderr
    assert "Usage:" not in result.stderr and "Traceback" not in result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["diff", str(KINETO)], "Missing argument"),
        (["report"], "Missing argument"),
        (["diff", str(KINETO), str(KINETO), "--format", "xml"], "'xml'"),
        (["check", str(KINETO), "--min-tc-share", "2"], "--min-tc-share"),
        (["summary", str(KINETO), "--iter-start", "-1"], "--iter-start"),
        (["summary", str(KINETO), "--bogus"], "--bogus"),
        (["nocommand"], "nocommand"),
        (["batch", str(KINETO), "-o", "x", "--jobs", "many"], "--jobs"),
    ],
)
def test_usage_errors_are_one_line_exit_2(args: list[str], needle: str) -> None:
    assert needle in one_line(args, 2)


def test_usage_error_from_the_installed_entry_point_is_one_line() -> None:
    code = "import sys\nfrom tcreport.cli import main\nsys.argv = ['tcreport', 'report']\nmain()\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2
    # the argument is named as the usage line writes it (PATH, its metavar)
    assert done.stderr.strip().splitlines() == [
        "tcreport: error: Missing argument 'PATH'. (see 'tcreport report --help')"
    ]


def test_help_and_version_still_exit_0() -> None:
    assert runner.invoke(app, ["report", "--help"]).exit_code == 0
    assert runner.invoke(app, ["--version"]).exit_code == 0


def test_a_damaged_ingest_folder_is_a_schema_error_exit_3(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    api.ingest(hostile_run(), folder)
    table = pq.read_table(folder / "kernels.parquet")
    bad = table.set_column(
        table.schema.get_field_index("duration_ns"),
        "duration_ns",
        pa.array([str(v) for v in table.column("duration_ns").to_pylist()]),
    )
    pq.write_table(bad.drop_columns(["calls"]), folder / "kernels.parquet")
    line = one_line(["summary", str(folder)], 3)
    assert "kernels.parquet" in line and "'calls'" in line and "duration_ns" in line


def test_an_unknown_table_in_an_ingest_manifest_is_one_line_exit_2(tmp_path: Path) -> None:
    import json

    folder = tmp_path / "run"
    api.ingest(hostile_run(), folder)
    manifest = folder / "tcreport-run.json"
    data = json.loads(manifest.read_text())
    data["tables"].append("bogus")
    manifest.write_text(json.dumps(data))
    assert "unknown table 'bogus'" in one_line(["summary", str(folder)], 2)


@pytest.mark.parametrize(
    ("damage", "needle"),
    [
        ("truncated", "kernels.parquet: Could not open Parquet"),
        ("missing", "kernels.parquet: missing (the manifest lists it)"),
        ("manifest-json", "tcreport-run.json: unreadable tcreport manifest"),
        ("manifest-null", "tcreport-run.json: unreadable tcreport manifest"),
        ("manifest-key", "tcreport-run.json: unreadable tcreport manifest (no 'meta')"),
        ("manifest-tables", "tcreport-run.json: 'tables' is not a list of table names"),
    ],
)
def test_synthetic_damaged_ingest_folder_is_one_line_naming_the_file_exit_2(
    tmp_path: Path, damage: str, needle: str
) -> None:
    """The README's code 2 (unreadable input): a bad manifest or a missing/truncated table."""
    import json

    folder = tmp_path / "run"
    api.ingest(hostile_run(), folder)
    manifest = folder / "tcreport-run.json"
    data = json.loads(manifest.read_text())
    if damage == "truncated":
        (folder / "kernels.parquet").write_bytes((folder / "kernels.parquet").read_bytes()[:100])
    elif damage == "missing":
        (folder / "kernels.parquet").unlink()
    elif damage == "manifest-json":
        manifest.write_text(manifest.read_text()[:40])
    elif damage == "manifest-null":
        manifest.write_text("null\n")
    elif damage == "manifest-key":
        del data["meta"]
        manifest.write_text(json.dumps(data))
    else:
        data["tables"] = "kernels"
        manifest.write_text(json.dumps(data))
    line = one_line(["summary", str(folder)], 2)
    assert needle in line and str(folder) in line, line


def test_synthetic_batch_piped_stderr_has_no_blank_first_line(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.pt.trace.json.gz").write_bytes(KINETO.read_bytes())
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    cmd = [sys.executable, "-m", "tcreport", "batch", str(tmp_path / "in"), "-o"]
    done = subprocess.run([*cmd, str(tmp_path / "out")], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0].startswith("tcreport: 1 processed"), repr(done.stderr)


def test_line_breaks_in_names_read_the_same_in_the_diff_refusal_and_the_force_warning_synthetic(
    tmp_path: Path,
) -> None:
    """The refusal turned CR/LF into spaces while the ``--force`` warning showed ``\\x0a``: both
    now go through one rule (line breaks become spaces; other control codes shown escaped)."""
    import dataclasses

    from synthetic import synthetic_run

    sides = []
    for name, framework in (("base", "PyTorch 2.0\r\nnightly\x1b[2J"), ("head", "TensorFlow\n2.9")):
        run = synthetic_run("fp32")
        run = run.replace(meta=dataclasses.replace(run.meta, framework=framework))
        sides.append(str(api.ingest(run, tmp_path / name)))
    refusal = one_line(["diff", *sides], 2)
    forced = runner.invoke(app, ["diff", *sides, "--force", "-f", "json", "-o", "-"])
    assert forced.exit_code == 0, forced.stderr
    warning = next(ln for ln in forced.stderr.splitlines() if "forced comparison" in ln)
    shown = "different framework (PyTorch 2.0 nightly\\x1b[2J vs TensorFlow 2.9)"
    assert shown in refusal and shown in warning, (refusal, warning)
    assert "\\x0a" not in warning and "\\x0d" not in warning
