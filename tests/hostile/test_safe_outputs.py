"""The user's files are sacred: every data-loss case of issue 14, each proving the file is intact.

Inputs are copies of the bundled samples (real traces) in a scratch folder; each test snapshots
what it must not touch (bytes, mode, link target) and compares after the command ran.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from cli_checks import fails_cleanly
from fs_snapshot import snapshot
from trace_paths import SAMPLES
from typer.testing import CliRunner

import tcreport.cli.batch_cmds  # noqa: F401  registers batch on the app
from tcreport.cli import app

runner = CliRunner()
KINETO = SAMPLES / "kineto-a100-tf32-alexnet" / "benchmark_result_2869224_1695835535_trace.json.gz"
NSYS = SAMPLES / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder: a training script, the trace it made, and an unrelated folder of files."""
    (tmp_path / "train.py").write_text("print('training')\n")
    shutil.copy(KINETO, tmp_path / "run.json.gz")
    important = tmp_path / "important"
    important.mkdir()
    (important / "thesis.tex").write_text("years of work\n")
    (important / "sub").mkdir()
    (important / "sub" / "data.csv").write_text("a,b\n1,2\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_ingest_force_never_deletes_a_folder_tcreport_did_not_write(work: Path) -> None:
    before = snapshot(work)
    fails_cleanly(["ingest", "run.json.gz", "-o", "important", "--force"], 4, "not written by")
    line = fails_cleanly(["ingest", "run.json.gz", "-o", "important"], 4, "not written by")
    assert "--force" not in line  # never suggested for a folder it would not replace
    assert snapshot(work) == before


def test_ingest_force_into_the_working_directory_is_refused(work: Path) -> None:
    # A folder that passes for an old ingest folder (only a manifest-named file) but whose
    # "manifest" is the input itself: the input check still refuses it.
    (work / "looks-ingested").mkdir()
    shutil.copy(work / "run.json.gz", work / "looks-ingested" / "tcreport-run.json")
    before = snapshot(work)
    fails_cleanly(["ingest", "run.json.gz", "-o", ".", "--force"], 4, "refusing to replace")
    fails_cleanly(["ingest", str(work / "run.json.gz"), "-o", "..", "--force"], 4, "refusing")
    trace = "looks-ingested/tcreport-run.json"
    fails_cleanly(["ingest", trace, "-o", "looks-ingested", "--force"], 4, "contains the input")
    assert snapshot(work) == before


def test_ingest_force_replaces_only_its_own_folder_and_only_its_files(work: Path) -> None:
    assert runner.invoke(app, ["ingest", "run.json.gz", "-o", "ing"]).exit_code == 0
    assert (work / "ing" / ".tcreport-output").is_file()
    again = runner.invoke(app, ["ingest", "run.json.gz", "-o", "ing", "--force"])
    assert again.exit_code == 0, again.stderr
    assert not [p for p in work.iterdir() if p.name.startswith(".ing")], "left a temporary folder"
    (work / "ing" / "my-notes.txt").write_text("mine")
    before = snapshot(work)
    fails_cleanly(["ingest", "run.json.gz", "-o", "ing", "--force"], 4, "my-notes.txt")
    assert snapshot(work) == before


def test_ingest_force_keeps_the_folder_mode(work: Path) -> None:
    assert runner.invoke(app, ["ingest", "run.json.gz", "-o", "ing"]).exit_code == 0
    (work / "ing").chmod(0o700)
    assert runner.invoke(app, ["ingest", "run.json.gz", "-o", "ing", "--force"]).exit_code == 0
    assert stat.S_IMODE((work / "ing").stat().st_mode) == 0o700


def test_profile_never_writes_over_its_script(work: Path) -> None:
    script = work / "report.html"  # the script's name is what profile would write
    script.write_text("print('train')\n")
    before = snapshot(work)
    fails_cleanly(["profile", "report.html", "--output-dir", "."], 4, "is the input")
    os.symlink(work / "important" / "thesis.tex", work / "important" / "summary.json")
    before = snapshot(work)
    fails_cleanly(["profile", "train.py", "--output-dir", "important"], 4, "symbolic link")
    assert snapshot(work) == before


def test_ingest_force_never_follows_a_symlink(work: Path) -> None:
    assert runner.invoke(app, ["ingest", "run.json.gz", "-o", "ing"]).exit_code == 0
    os.symlink(work / "ing", work / "link")
    os.symlink(work / "important", work / "ing2")
    before = snapshot(work)
    fails_cleanly(["ingest", "run.json.gz", "-o", "link", "--force"], 4, "symbolic link")
    fails_cleanly(["ingest", "run.json.gz", "-o", "ing2", "--force"], 4, "symbolic link")
    assert snapshot(work) == before


def test_ingest_folder_holding_a_link_is_not_emptied(work: Path) -> None:
    assert runner.invoke(app, ["ingest", "run.json.gz", "-o", "ing"]).exit_code == 0
    (work / "ing" / "kernels.parquet").unlink()
    os.symlink(work / "important" / "thesis.tex", work / "ing" / "kernels.parquet")
    before = snapshot(work)
    fails_cleanly(["ingest", "run.json.gz", "-o", "ing", "--force"], 4, "kernels.parquet")
    assert snapshot(work) == before


def test_report_never_writes_over_its_input(work: Path) -> None:
    os.symlink(work / "run.json.gz", work / "alias.html")
    os.link(work / "run.json.gz", work / "hard.html")
    before = snapshot(work)
    fails_cleanly(["report", "run.json.gz", "-o", "run.json.gz"], 4, "is the input")
    fails_cleanly(["report", "run.json.gz", "-o", "important/../run.json.gz"], 4, "is the input")
    fails_cleanly(["report", "run.json.gz", "-o", "alias.html", "--follow-link"], 4, "input")
    fails_cleanly(["report", "run.json.gz", "-o", "hard.html"], 4, "is the input")
    fails_cleanly(["report", "run.json.gz", "--markdown", "-o", "run.json.gz"], 4, "input")
    fails_cleanly(["diff", "run.json.gz", "run.json.gz", "-o", "run.json.gz"], 4, "input")
    assert snapshot(work) == before


def test_no_output_lands_inside_an_input_folder(dlprof_cnn: Path, tmp_path: Path) -> None:
    """Nothing is written inside an input folder, new file or not, for any command: the next
    ``report`` or ``batch`` of that folder would read it as input (issue 28 item 6)."""
    folder = tmp_path / "dlprof"
    shutil.copytree(dlprof_cnn, folder)
    before = snapshot(folder)
    target = folder / "dlprof_kernel.csv"
    assert target.exists()
    fails_cleanly(["report", str(folder), "-o", str(target)], 4, "input folder")
    fails_cleanly(["ingest", str(folder), "-o", str(folder / "sub" / ".."), "--force"], 4, "input")
    inside = str(folder / "new")
    for args in (
        ["report", str(folder), "-o", inside + ".html"],
        ["report", str(folder), "--markdown", "-o", inside + ".md"],
        ["summary", str(folder), "--json", "-o", inside + ".json"],
        ["export", str(folder), "--perfetto", inside + ".trace.json"],
        ["diff", str(folder), str(folder), "-f", "json", "-o", inside + ".json"],
        ["ingest", str(folder), "-o", inside],
        ["batch", str(folder), "-o", inside],
    ):
        fails_cleanly(args, 4, "inside the input folder")
    assert snapshot(folder) == before


def test_replacing_keeps_the_mode_and_refuses_read_only(work: Path) -> None:
    private = work / "private.html"
    private.write_text("old")
    private.chmod(0o600)
    assert runner.invoke(app, ["report", "run.json.gz", "-o", "private.html"]).exit_code == 0
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert "<html" in private.read_text()
    locked = work / "locked.html"
    locked.write_text("keep me")
    locked.chmod(0o444)
    fails_cleanly(["report", "run.json.gz", "-o", "locked.html"], 4, "read-only")
    assert locked.read_text() == "keep me" and stat.S_IMODE(locked.stat().st_mode) == 0o444
    ok = runner.invoke(app, ["report", "run.json.gz", "-o", "locked.html", "--replace-read-only"])
    assert ok.exit_code == 0, ok.stderr
    assert "<html" in locked.read_text() and stat.S_IMODE(locked.stat().st_mode) == 0o444


def test_a_symlinked_output_is_refused_unless_asked(work: Path) -> None:
    elsewhere = work / "important" / "page.html"
    elsewhere.write_text("their page")
    elsewhere.chmod(0o640)
    os.symlink(elsewhere, work / "link.html")
    before = snapshot(work)
    fails_cleanly(["report", "run.json.gz", "-o", "link.html"], 4, "symbolic link")
    fails_cleanly(["diff", "run.json.gz", "run.json.gz", "-o", "link.html"], 4, "symbolic link")
    assert snapshot(work) == before
    ok = runner.invoke(app, ["report", "run.json.gz", "-o", "link.html", "--follow-link"])
    assert ok.exit_code == 0, ok.stderr
    assert os.readlink(work / "link.html") == str(elsewhere)  # the link stays a link
    assert "<html" in elsewhere.read_text() and stat.S_IMODE(elsewhere.stat().st_mode) == 0o640


#: Every command that writes one file, with the arguments that make it write ``OUT``.
ONE_FILE_WRITERS = {
    "report": ["report", "run.json.gz", "-o", "OUT"],
    "summary --json": ["summary", "run.json.gz", "--json", "-o", "OUT"],
    "export": ["export", "run.json.gz", "--perfetto", "OUT"],
    "diff": ["diff", "run.json.gz", "run.json.gz", "-o", "OUT"],
}


@pytest.mark.parametrize("command", sorted(ONE_FILE_WRITERS))
def test_every_output_offers_the_options_its_refusals_name(work: Path, command: str) -> None:
    """A refusal says which option overrides it ('pass --follow-link'): every command that can
    refuse has that option, and it works."""
    args = ONE_FILE_WRITERS[command]
    elsewhere = work / "important" / "target.out"
    elsewhere.write_text("theirs")
    os.symlink(elsewhere, work / "link.out")
    locked = work / "locked.out"
    locked.write_text("keep me")
    locked.chmod(0o444)
    before = snapshot(work)
    link_args = [a if a != "OUT" else "link.out" for a in args]
    locked_args = [a if a != "OUT" else "locked.out" for a in args]
    fails_cleanly(link_args, 4, "pass --follow-link")
    fails_cleanly(locked_args, 4, "pass --replace-read-only")
    assert snapshot(work) == before
    ok = runner.invoke(app, [*link_args, "--follow-link"])
    assert ok.exit_code == 0, ok.stderr
    assert os.readlink(work / "link.out") == str(elsewhere)
    assert elsewhere.read_text() != "theirs"
    ok = runner.invoke(app, [*locked_args, "--replace-read-only"])
    assert ok.exit_code == 0, ok.stderr
    assert locked.read_text() != "keep me" and stat.S_IMODE(locked.stat().st_mode) == 0o444


@pytest.mark.parametrize("name", ["run#2.sqlite", "run?x=1.sqlite", "run%41.sqlite", "a b.sqlite"])
def test_odd_characters_in_a_sqlite_path_read_the_file_and_create_nothing(
    tmp_path: Path, name: str
) -> None:
    folder = tmp_path / "u"
    folder.mkdir()
    shutil.copy(NSYS, folder / name)
    before = snapshot(folder)
    result = runner.invoke(app, ["summary", str(folder / name), "--json"])
    assert result.exit_code == 0, result.stderr
    assert '"nsys-sqlite"' in result.stdout
    assert snapshot(folder) == before  # no "u/run", no journal, no -wal/-shm


def test_batch_refuses_a_foreign_out_and_one_containing_its_input(work: Path) -> None:
    traces = work / "traces"
    traces.mkdir()
    shutil.copy(KINETO, traces / "a.pt.trace.json.gz")
    before = snapshot(work)
    fails_cleanly(["batch", "traces", "-o", "important"], 4, "not a 'tcreport batch' output")
    fails_cleanly(["batch", "traces", "-o", "."], 4, "contains the input")
    fails_cleanly(["batch", "traces", "-o", "traces"], 4, "is the input")
    assert snapshot(work) == before
    assert runner.invoke(app, ["batch", "traces", "-o", "out"]).exit_code == 0
    assert (work / "out" / ".tcreport-output").is_file()
    assert runner.invoke(app, ["batch", "traces", "-o", "out"]).exit_code == 0
