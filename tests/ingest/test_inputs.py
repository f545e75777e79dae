"""What PATH may be: a folder holding one trace, a folder of several, an ``.nsys-rep`` report."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tcreport import api, ingest
from tcreport.cli import app
from tcreport.model import SourceFormat

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_traces"
KINETO_DIR = SAMPLES / "kineto-a100-tf32-alexnet"
NSYS_DIR = SAMPLES / "nsys-h100x2-bf16"
NSYS_FILE = NSYS_DIR / "mfu_2gpu_after.sqlite"
FAKES = Path(__file__).parents[1] / "fixtures" / "fake_profilers"

runner = CliRunner()


@pytest.mark.parametrize(
    ("folder", "fmt"),
    [(KINETO_DIR, SourceFormat.KINETO_JSON), (NSYS_DIR, SourceFormat.NSYS_SQLITE)],
)
def test_a_sample_folder_reads_its_one_trace(folder: Path, fmt: SourceFormat) -> None:
    assert ingest.resolve(folder)[0] is fmt
    res = runner.invoke(app, ["summary", str(folder), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    trace = next(p for p in folder.iterdir() if p.name != "README.md")
    direct = json.loads(runner.invoke(app, ["summary", str(trace), "--json"]).stdout)
    # the nsys sample is one export of a 2-process torchrun launch: a job either way
    for key in ("tensor_core", "time", "job"):
        assert doc.get(key) == direct.get(key), key


def test_a_folder_of_several_traces_names_them_and_asks_for_one(tmp_path: Path) -> None:
    for folder in (KINETO_DIR, NSYS_DIR):
        for f in folder.iterdir():
            shutil.copyfile(f, tmp_path / f.name)
    res = runner.invoke(app, ["summary", str(tmp_path)])
    assert res.exit_code == 2
    line = res.stderr.strip()
    assert "\n" not in line and "holds 2 traces" in line
    assert "mfu_2gpu_after.sqlite (nsys-sqlite)" in line and "(kineto-json)" in line
    assert "tcreport batch" in line


def test_a_folder_of_folders_lists_the_traces_one_level_down() -> None:
    """``report sample_traces`` said "no supported trace" (issue 28 case 11): the traces one
    level down are named, with their subfolder, and one is asked for."""
    for args in (["summary", str(SAMPLES)], ["report", str(SAMPLES), "-o", "-"]):
        res = runner.invoke(app, args)
        line = res.stderr.strip()
        assert res.exit_code == 2 and "\n" not in line, line
        # the A100 and H100 samples and the torch.compile one (the H200 folders are deeper)
        assert "holds 3 traces in its subfolders" in line
        assert "h200-torch-compile-tf32/inductor_mlp.pt.trace.json.gz (kineto-json)" in line
        assert "nsys-h100x2-bf16/mfu_2gpu_after.sqlite (nsys-sqlite)" in line
        assert "kineto-a100-tf32-alexnet/benchmark_result_" in line and "give one of them" in line


def test_dlprof_result_folders_one_level_down_are_listed_synthetic(tmp_path: Path) -> None:
    """A folder of DLProf result folders (each a run: its CSV reports) names each folder."""
    for run in ("run-a", "run.v2"):
        (tmp_path / run).mkdir()
        (tmp_path / run / "dlprof_summary.csv").write_text(
            "Summary Report\nKey,Value\nDLProf Version,1.8.0\n", encoding="utf-8"
        )
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("not a trace")
    res = runner.invoke(app, ["summary", str(tmp_path)])
    line = res.stderr.strip()
    assert res.exit_code == 2 and "holds 2 traces in its subfolders" in line, line
    assert "run-a (dlprof-csv), run.v2 (dlprof-csv)" in line and "notes" not in line


def test_a_folder_with_nothing_one_level_down_points_at_batch(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    shutil.copyfile(NSYS_FILE, tmp_path / "a" / "b" / NSYS_FILE.name)  # two levels down
    res = runner.invoke(app, ["summary", str(tmp_path)])
    assert res.exit_code == 2 and "no supported trace" in res.stderr and "batch" in res.stderr


def _report(tmp_path: Path) -> Path:
    rep = tmp_path / "run 1.nsys-rep"
    rep.write_bytes(b"stand-in report bytes, not SQLite\n")
    return rep


def test_nsys_rep_without_nsys_gives_the_export_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    rep = _report(tmp_path)
    res = runner.invoke(app, ["summary", str(rep)])
    assert res.exit_code == 2
    line = res.stderr.strip()
    assert "\n" not in line
    assert f"nsys export --type sqlite --output {tmp_path / 'run 1.sqlite'} {rep}" in line


def _fake_nsys_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    log = tmp_path / "argv.log"
    monkeypatch.setenv("PATH", os.pathsep.join([str(FAKES), str(Path(sys.executable).parent)]))
    monkeypatch.setenv("FAKE_PROFILER_LOG", str(log))
    monkeypatch.setenv("FAKE_NSYS_SQLITE", str(NSYS_FILE))
    return log


def test_nsys_rep_is_exported_with_nsys_and_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _fake_nsys_on_path(monkeypatch, tmp_path)
    rep = _report(tmp_path)
    res = runner.invoke(app, ["summary", str(rep), "--json"])
    assert res.exit_code == 0, res.output
    assert f"exporting {rep} to SQLite" in res.stderr
    doc = json.loads(res.stdout)
    # a report is read whole (its processes are not split into ranks: that needs its export)
    direct = json.loads(api.render_json(api.analyze(api.load(NSYS_FILE))))
    assert doc["tensor_core"] == direct["tensor_core"] and doc["source"]["format"] == "nsys-sqlite"
    argv = json.loads(log.read_text().splitlines()[-1])["argv"]
    assert argv[:2] == ["export", "--type=sqlite"] and argv[-1] == str(rep)
    exported = Path(next(a for a in argv if a.startswith("--output="))[len("--output=") :])
    assert not exported.exists() and not exported.parent.exists()  # the temporary place is gone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["argv.log", "run 1.nsys-rep"]


def test_nsys_rep_export_failure_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_nsys_on_path(monkeypatch, tmp_path)
    monkeypatch.setenv("FAKE_NSYS_EXPORT_FAIL", "1")
    res = runner.invoke(app, ["summary", str(_report(tmp_path))])
    assert res.exit_code == 2
    assert "nsys export failed with exit code 1: fake nsys: export: unsupported" in res.stderr


def test_a_folder_holding_one_nsys_rep_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_nsys_on_path(monkeypatch, tmp_path)
    folder = tmp_path / "profile"
    folder.mkdir()
    _report(folder)
    res = runner.invoke(app, ["summary", str(folder), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["source"]["format"] == "nsys-sqlite"


@pytest.mark.realtraces
def test_a_dlprof_result_folder_is_still_one_run_from_its_csv_reports() -> None:
    from trace_paths import DLPROF_CNN

    if not DLPROF_CNN.exists():
        pytest.skip(f"real trace not available: {DLPROF_CNN}")
    # CSV reports, the Viewer database and the nsys export side by side: the CSVs win, as before
    assert ingest.resolve(DLPROF_CNN) == (SourceFormat.DLPROF_CSV, DLPROF_CNN)
    assert ingest.detect(DLPROF_CNN) is SourceFormat.DLPROF_CSV
    assert ingest.load(DLPROF_CNN).meta.format is SourceFormat.DLPROF_CSV
