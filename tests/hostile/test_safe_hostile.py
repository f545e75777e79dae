"""Issue 14, second round: what a hostile tester broke, each proved fixed on synthetic temp files.

Outputs onto FIFOs and device nodes, a FIFO inside an input folder, a user's site folder that
looks like an old batch OUT, a reader's sidecar file, and long but valid output names.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_checks import fails_cleanly
from trace_paths import NO_TF, REALTRACES, SAMPLES, have_tf_reader, need
from typer.testing import CliRunner

import tcreport.cli.batch_cmds  # noqa: F401  registers batch on the app
from tcreport import _fs
from tcreport.cli import app

runner = CliRunner()
XPLANE = REALTRACES / "tf_profiler" / "gpu-multiworker-xplane" / "34.83.195.179_6003.xplane.pb"
KINETO = SAMPLES / "kineto-a100-tf32-alexnet" / "benchmark_result_2869224_1695835535_trace.json.gz"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copy(KINETO, tmp_path / "run.json.gz")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_synthetic_output_onto_fifo_is_refused_and_fifo_stays(work: Path) -> None:
    os.mkfifo(work / "fifo.html")
    fails_cleanly(["report", "run.json.gz", "-o", "fifo.html"], 4, "not a regular file")
    assert (work / "fifo.html").is_fifo()


def test_synthetic_output_onto_socket_and_dev_null_is_refused(work: Path) -> None:
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(work / "s.html"))
        fails_cleanly(["report", "run.json.gz", "-o", "s.html"], 4, "not a regular file")
        assert (work / "s.html").is_socket()
    finally:
        sock.close()
    fails_cleanly(["report", "run.json.gz", "-o", "/dev/null"], 4, "not a regular file")
    assert Path("/dev/null").is_char_device()


def test_synthetic_link_to_fifo_with_follow_link_is_refused(work: Path) -> None:
    os.mkfifo(work / "fifo.html")
    (work / "link.html").symlink_to("fifo.html")
    fails_cleanly(
        ["report", "run.json.gz", "-o", "link.html", "--follow-link"], 4, "not a regular file"
    )
    assert (work / "fifo.html").is_fifo() and (work / "link.html").is_symlink()


def test_synthetic_fifo_in_input_folder_does_not_hang_report(tmp_path: Path) -> None:
    """Sniffing a FIFO would block forever (nothing writes to it): a subprocess, so a regression
    times out instead of hanging the suite."""
    folder = tmp_path / "in"
    shutil.copytree(SAMPLES / "kineto-a100-tf32-alexnet", folder)
    os.mkfifo(folder / "tcreport.html")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    cmd = [sys.executable, "-m", "tcreport", "report", str(folder), "-o"]
    proc = subprocess.run(
        [*cmd, str(folder / "tcreport.html")], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 4 and "input folder" in proc.stderr, proc.stderr
    assert (folder / "tcreport.html").is_fifo()


def test_synthetic_longest_valid_output_name_is_written(work: Path) -> None:
    name = "r" * (255 - len(".html")) + ".html"
    result = runner.invoke(app, ["report", "run.json.gz", "-o", name])
    assert result.exit_code == 0, result.stderr
    assert (work / name).read_bytes().startswith(b"<!DOCTYPE html>")
    assert [p.name for p in work.iterdir() if p.name.startswith(".")] == []


def test_synthetic_site_folder_with_dataset_is_not_taken_for_a_batch_out(work: Path) -> None:
    """A web site folder (dataset/ of CSVs and an index.html) is a user's, not an old batch OUT."""
    traces = work / "traces"
    traces.mkdir()
    shutil.copy(KINETO, traces / "a.pt.trace.json.gz")
    site = work / "site"
    (site / "dataset").mkdir(parents=True)
    (site / "dataset" / "survey.csv").write_text("q,a\n1,yes\n")
    (site / "index.html").write_text("<h1>my site</h1>\n")
    fails_cleanly(["batch", "traces", "-o", "site"], 4, "not a 'tcreport batch' output")
    assert (site / "index.html").read_text() == "<h1>my site</h1>\n"
    assert sorted(p.name for p in site.iterdir()) == ["dataset", "index.html"]
    # Even hive-looking Parquet files are not enough: their schema must be tcreport's.
    (site / "dataset" / "survey.csv").unlink()
    part = site / "dataset" / "runs" / "gpu=x" / "month=2024-01"
    part.mkdir(parents=True)
    pq.write_table(pa.table({"q": [1]}), part / "a.parquet")
    fails_cleanly(["batch", "traces", "-o", "site"], 4, "not a 'tcreport batch' output")
    assert not (site / ".tcreport-output").exists()


def test_synthetic_unmarked_legacy_batch_out_is_still_accepted(work: Path) -> None:
    traces = work / "traces"
    traces.mkdir()
    shutil.copy(KINETO, traces / "a.pt.trace.json.gz")
    assert runner.invoke(app, ["batch", "traces", "-o", "out"]).exit_code == 0
    (work / "out" / ".tcreport-output").unlink()  # as written before the marker existed
    result = runner.invoke(app, ["batch", "traces", "-o", "out"])
    assert result.exit_code == 0, result.stderr
    assert (work / "out" / ".tcreport-output").is_file()


def test_synthetic_output_onto_the_xplane_sidecar_is_refused(tmp_path: Path) -> None:
    """The xplane reader reads ``tcreport-capture.json`` beside the profile: never written over."""
    if not have_tf_reader():
        pytest.skip(NO_TF)
    shutil.copy(need(XPLANE), tmp_path / "w.xplane.pb")
    sidecar = tmp_path / "tcreport-capture.json"
    sidecar.write_text('{"notes": ["synthetic sidecar"], "tensorflow": "2.15"}\n')
    before = sidecar.read_bytes()
    fails_cleanly(["report", str(tmp_path / "w.xplane.pb"), "-o", str(sidecar)], 4, "was read with")
    assert sidecar.read_bytes() == before


def test_synthetic_file_added_during_ingest_force_is_kept_visibly(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's file dropped into OUT after the check, before the swap: kept, and said so."""
    assert runner.invoke(app, ["ingest", "run.json.gz", "-o", "out"]).exit_code == 0
    swap = _fs.replace_folder

    def user_adds_then_swap(tmp: Path, target: Path, entries: list[str]) -> Path | None:
        (target / "my-notes.txt").write_text("do not lose\n")
        return swap(tmp, target, entries)

    monkeypatch.setattr(_fs, "replace_folder", user_adds_then_swap)
    result = runner.invoke(app, ["ingest", "run.json.gz", "-o", "out", "--force"])
    assert result.exit_code == 0, result.stderr
    warning = [ln for ln in result.stderr.splitlines() if "warning" in ln]
    assert len(warning) == 1 and "kept in" in warning[0], result.stderr
    kept = [p for p in work.iterdir() if p.name.startswith("out.kept-")]
    assert len(kept) == 1 and (kept[0] / "my-notes.txt").read_text() == "do not lose\n"
    assert str(kept[0]) in warning[0]
    assert [p.name for p in work.iterdir() if p.name.startswith(".")] == []
    assert (work / "out" / "tcreport-run.json").is_file()


def test_synthetic_lock_makes_a_second_replace_wait(tmp_path: Path) -> None:
    target = tmp_path / "out"
    entered = threading.Event()

    def second() -> None:
        with _fs.locked(target):
            entered.set()

    with _fs.locked(target):
        thread = threading.Thread(target=second)
        thread.start()
        assert not entered.wait(0.5)  # flock conflicts between two open files, threads too
    thread.join(30)
    assert entered.is_set()
    assert list(tmp_path.iterdir()) == []  # the lock file goes with the last holder


def test_synthetic_racing_ingests_leave_no_hidden_folder(work: Path) -> None:
    assert runner.invoke(app, ["ingest", "run.json.gz", "-o", "out"]).exit_code == 0
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    cmd = [sys.executable, "-m", "tcreport", "ingest", "run.json.gz", "-o", "out", "--force"]
    procs = [
        subprocess.Popen(cmd, cwd=work, env=env, stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], errors
    assert sorted(p.name for p in work.iterdir()) == ["out", "run.json.gz"]
    assert not any(p.name.startswith(".") for p in (work / "out").iterdir() if p.name != _fs.MARKER)
