"""``batch`` over an archive with a bad run in it: the run is recorded as failed with its reason
and the environment that failed, the others are done, the index is written, the exit code is 1;
the next plain batch retries only the failed run. Plus report names and the progress bar."""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from rich.console import Console
from synthetic import synthetic_run
from trace_paths import REALTRACES
from typer.testing import CliRunner

import tcreport.cli.batch_cmds as batch_cmds
from tcreport import __version__, api
from tcreport.batch import naming, work
from tcreport.batch import runner as batch
from tcreport.cli.app import app

runner = CliRunner()
XPLANE = REALTRACES / "tf_profiler"


def _runs(out: Path) -> dict[str, dict[str, object]]:
    table = ds.dataset(out / "dataset" / "runs", format="parquet", partitioning="hive").to_table()
    return {str(r["source"]): r for r in table.to_pylist()}


def _archive_synthetic(root: Path) -> Path:
    """Three ingest folders; ``poisoned`` has a manifest whose framework is a number."""
    root.mkdir()
    for name, precision in (("fp32-run", "fp32"), ("bf16-run", "bf16"), ("poisoned", "fp16")):
        api.ingest(synthetic_run(precision, op_prefix=name), root / name)
    _framework(root / "poisoned", 3)
    return root


def _framework(folder: Path, value: object) -> None:
    path = folder / "tcreport-run.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest["meta"]["framework"] = value
    path.write_text(json.dumps(manifest), encoding="utf-8")


def _batch(root: Path, out: Path, *extra: str) -> tuple[int, str]:
    result = runner.invoke(app, ["batch", str(root), "-o", str(out), *extra])
    return result.exit_code, result.stderr


def test_a_poisoned_run_fails_alone_and_a_plain_rerun_retries_only_it(tmp_path: Path) -> None:
    root = _archive_synthetic(tmp_path / "archive")
    out = tmp_path / "out"
    code, err = _batch(root, out)
    assert code == 1, err
    runs = _runs(out)
    assert {s: r["status"] for s, r in runs.items()} == {
        "fp32-run": "ok",
        "bf16-run": "ok",
        "poisoned": "error",
    }
    bad = runs["poisoned"]
    assert bad["error"] == "tcreport-run.json: meta.framework is 3; expected text or null"
    assert bad["tcreport_version"] == __version__ and bad["missing_extra"] is None
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "poisoned" in index and "meta.framework is 3" in index
    assert "failed: poisoned: tcreport-run.json: meta.framework is 3" in err
    assert "2 processed" not in err and "3 processed, 0 already in the dataset, 1 failed" in err

    _framework(root / "poisoned", "PyTorch 2.3")  # the cause fixed: new content, new run id
    done = {p: p.stat().st_mtime_ns for p in (out / "dataset").rglob("*.parquet")}
    code, err = _batch(root, out)
    assert code == 0, err
    assert "1 processed, 2 already in the dataset, 0 failed" in err
    runs = _runs(out)
    assert {s: r["status"] for s, r in runs.items()} == dict.fromkeys(runs, "ok")
    assert len(runs) == 3  # the failed row of the fixed run is gone, not left beside it
    kept = {p: t for p, t in done.items() if p.exists()}
    assert kept and all(p.stat().st_mtime_ns == t for p, t in kept.items())  # done runs untouched


def test_a_bug_in_one_run_s_work_is_recorded_and_the_index_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 28 case 2: an OverflowError in ``work._rows`` (an int64 column given a value past
    it) escaped the batch: no row for the run, no index, every re-run the same crash."""
    root = _archive_synthetic(tmp_path / "archive")
    _framework(root / "poisoned", "PyTorch")
    detail = work._detail_tables

    def overflow(run_id: str, view: object) -> dict[str, pa.Table]:
        if "poisoned" in str(getattr(view, "source_path", "")):
            pa.array([2**64], pa.int64())  # what a wrapped sum did
        return detail(run_id, view)  # type: ignore[arg-type]

    monkeypatch.setattr(work, "_detail_tables", overflow)
    out = tmp_path / "out"
    code, err = _batch(root, out)
    assert code == 1, err
    bad = _runs(out)["poisoned"]
    assert bad["status"] == "error"
    assert str(bad["error"]).startswith("internal error: OverflowError")
    assert (out / "index.html").is_file()
    assert {r["status"] for s, r in _runs(out).items() if s != "poisoned"} == {"ok"}
    monkeypatch.setattr(work, "_detail_tables", detail)  # a tcreport with the bug fixed
    code, err = _batch(root, out)
    assert code == 0 and "1 processed, 2 already in the dataset" in err, err


@pytest.mark.realtraces
def test_an_xplane_run_that_needed_an_extra_is_retried_once_it_is_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 28 case 8: after ``pip install '.[tf]'`` a re-run still reported "needs xprof"."""
    pytest.importorskip("xprof")
    if not XPLANE.exists():
        pytest.skip("real TensorFlow profile not available")
    root = tmp_path / "archive"
    root.mkdir()
    api.ingest(synthetic_run("fp32"), root / "ingested")
    shutil.copytree(XPLANE, root / "tf")  # a copy: batch follows no folder link out of DIR
    monkeypatch.setitem(sys.modules, "xprof.convert.raw_to_tool_data", None)  # not installed
    out = tmp_path / "out"
    code, err = _batch(root, out)
    assert code == 1, err
    tf = _runs(out)["tf"]
    # xprof alone reads it (the [xplane] extra; [tf] includes it for the TensorFlow capture)
    assert tf["status"] == "error" and tf["missing_extra"] == "xplane"
    assert "pip install 'tcreport[xplane]'" in str(tf["error"])
    monkeypatch.delitem(sys.modules, "xprof.convert.raw_to_tool_data")  # installed now
    code, err = _batch(root, out)
    assert code == 0 and "1 processed, 1 already in the dataset, 0 failed" in err, err
    assert _runs(out)["tf"]["missing_extra"] is None


def test_a_dataset_written_before_missing_extra_existed_still_reads(tmp_path: Path) -> None:
    root = _archive_synthetic(tmp_path / "archive")
    out = tmp_path / "out"
    _batch(root, out)
    for f in (out / "dataset" / "runs").rglob("*.parquet"):  # as an older tcreport wrote them
        pq.write_table(pq.read_table(f).drop_columns(["missing_extra"]), f)
    runs = batch.existing_runs(out)
    assert runs.num_rows == 3 and runs.column("missing_extra").null_count == 3
    code, err = _batch(root, out)
    assert code == 1 and "0 processed" not in err  # the failed run retried, the rest skipped


@pytest.mark.parametrize(
    ("source", "name"),
    [
        ("dlprof/v1.8-pytorch-cnn", "v1.8-pytorch-cnn"),  # was cut to "v1"
        ("runs/resnet.v2.final", "resnet.v2.final"),
        ("a/worker0.1623143089861.pt.trace.json.gz", "worker0.1623143089861"),
        ("nsys/mfu_2gpu_after.sqlite", "mfu_2gpu_after"),
        ("tf/host.xplane.pb", "host"),
        ("x/trace.json", "trace"),
        ("x/report.nsys-rep", "report"),
        ("x/.sqlite", "sqlite"),  # nothing but a suffix: kept, made safe
        ("odd/na me<1>", "na-me-1"),
    ],
)
def test_report_names_keep_the_trace_s_name_whole(source: str, name: str) -> None:
    assert naming.report_name(source, "0123456789abcdef", {}) == name


def test_report_names_are_disambiguated_only_on_collision() -> None:
    taken: dict[str, str] = {}
    assert naming.report_name("a/v1.8-cnn", "1111aaaa2222bbbb", taken) == "v1.8-cnn"
    assert naming.report_name("b/v1.8-cnn", "3333cccc4444dddd", taken) == "v1.8-cnn-3333cccc"
    assert naming.report_name("a/v1.8-cnn", "1111aaaa2222bbbb", taken) == "v1.8-cnn"  # its own


def test_progress_on_a_terminal_shows_done_failed_and_time_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _archive_synthetic(tmp_path / "archive")
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=120, highlight=False)
    monkeypatch.setattr(batch_cmds, "err_console", lambda: terminal)
    code, _ = _batch(root, tmp_path / "out")
    assert code == 1
    shown = screen.getvalue()
    assert "Processing" in shown and "3/3" in shown and "1 failed" in shown and "ETA" in shown


def test_no_progress_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    root = _archive_synthetic(tmp_path / "archive")
    code, err = _batch(root, tmp_path / "out")
    assert code == 1
    lines = err.strip().splitlines()
    assert all(ln.startswith("tcreport: ") for ln in lines), err
    assert "Processing" not in err and "ETA" not in err and "\x1b" not in err
