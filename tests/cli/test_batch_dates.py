"""Batch dates come from the trace, charts stay within one GPU model, reports are named after the
trace, and an empty folder is a warning with a non-zero exit."""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from trace_paths import REALTRACES, batch_samples
from typer.testing import CliRunner

from tcreport import api
from tcreport.batch import naming
from tcreport.cli import app

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_traces"
KINETO = SAMPLES / "kineto-a100-tf32-alexnet" / "benchmark_result_2869224_1695835535_trace.json.gz"
NSYS = SAMPLES / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"
SYNTHETIC_KINETO = ROOT / "tests" / "fixtures" / "kineto_edge_cases_synthetic.json"
runner = CliRunner()


@pytest.mark.parametrize(
    ("path", "started", "source"),
    [
        (KINETO, "2023-09-27T17:25:42Z", "PyTorch profiler event timestamps"),
        (NSYS, "2026-05-26T09:18:46Z", "Nsight Systems session start"),
    ],
    ids=["kineto", "nsys"],
)
def test_readers_give_the_traces_own_start_time(path: Path, started: str, source: str) -> None:
    meta = api.load(path).meta
    assert (meta.started_at, meta.started_at_source) == (started, source)


#: realtraces path -> (started_at, what said so); the nsys figures are the exports' own
#: TARGET_INFO_SESSION_START_TIME.utcTime, the Kineto ones baseTimeNanoseconds / the first ts.
REAL_STARTS = {
    "kineto/h100-bf16-bert-small/gaunernst_bert-small-uncased__1016001.redacted.json.gz": (
        "2025-07-01T23:00:36Z",
        "PyTorch profiler baseTimeNanoseconds",
    ),
    "kineto/v100-legacy-resnet50/worker0.1623143089861.pt.trace.json.gz": (
        "2021-06-08T08:57:03Z",
        "PyTorch profiler event timestamps",
    ),
    "nsys/v2022.1-windows-synthetic/con_kernel.sqlite": (
        "2022-05-02T17:57:15Z",
        "Nsight Systems session start",
    ),
    "dlprof/v1.8-pytorch-cnn": (
        "2023-01-26T00:07:37Z",
        "Nsight Systems session start (DLProf's export)",
    ),
    "dlprof/v1.8-pytorch-cnn/dlprof_dldb_7.sqlite": (
        "2023-01-26T00:07:37Z",
        "Nsight Systems session start (DLProf's export)",
    ),
}


@pytest.mark.realtraces
@pytest.mark.parametrize("rel", sorted(REAL_STARTS))
def test_real_traces_give_their_start_time(rel: str) -> None:
    path = REALTRACES / rel
    if not path.exists():
        pytest.skip(f"real trace not available: {path}")
    meta = api.load(path).meta
    assert (meta.started_at, meta.started_at_source) == REAL_STARTS[rel]


def _runs(out: Path) -> dict[str, dict[str, object]]:
    table = ds.dataset(out / "dataset" / "runs", format="parquet", partitioning="hive").to_table()
    return {r["source"]: r for r in table.to_pylist()}


def test_batch_dates_runs_by_the_trace_not_the_file(tmp_path: Path) -> None:
    root = tmp_path / "in"
    root.mkdir()
    shutil.copyfile(KINETO, root / KINETO.name)
    shutil.copyfile(NSYS, root / NSYS.name)
    os.utime(root / KINETO.name, (2_000_000_000, 2_000_000_000))  # an mtime in 2033: ignored
    out = tmp_path / "out"
    assert runner.invoke(app, ["batch", str(root), "-o", str(out)]).exit_code == 0
    runs = _runs(out)
    k = runs[KINETO.name]
    assert str(k["date"]).startswith("2023-09-27") and k["month"] == "2023-09"
    assert k["date_source"] == "PyTorch profiler event timestamps"
    assert runs[NSYS.name]["month"] == "2026-05"


def test_mtime_is_a_labelled_fallback(tmp_path: Path) -> None:
    # synthetic: the edge-case trace has small relative timestamps and no baseTimeNanoseconds
    root = tmp_path / "in"
    root.mkdir()
    trace = root / "synthetic.json.gz"
    trace.write_bytes(gzip.compress(SYNTHETIC_KINETO.read_bytes()))
    os.utime(trace, (1_700_000_000, 1_700_000_000))  # 2023-11-14
    assert api.load(trace).meta.started_at is None
    out = tmp_path / "out"
    assert runner.invoke(app, ["batch", str(root), "-o", str(out)]).exit_code == 0
    r = _runs(out)["synthetic.json.gz"]
    assert r["month"] == "2023-11" and str(r["date_source"]).startswith("file mtime")
    index = (out / "index.html").read_text(encoding="utf-8")
    assert 'title="file modification time: the trace records no start time">*<' in index


def test_index_draws_no_chart_of_a_lone_run(tmp_path: Path) -> None:
    """The two samples are one A100 run and one run on an unnamed GPU: a chart per model used to
    hold one dot each; a trend needs three dated runs of one GPU model (test_batch_index.py)."""
    out = tmp_path / "out"
    samples = batch_samples(tmp_path / "in")
    assert runner.invoke(app, ["batch", str(samples), "-o", str(out)]).exit_code == 0
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "<svg" not in index and "No trend to draw yet." in index
    assert index.index('<section id="runs">') < index.index('<section id="trend"')


def test_report_files_are_named_after_the_trace_and_unique(tmp_path: Path) -> None:
    root = tmp_path / "in"
    for sub in ("a", "b"):
        (root / sub).mkdir(parents=True)
    shutil.copyfile(NSYS, root / "a" / "run <1>.sqlite")
    shutil.copyfile(KINETO, root / "b" / "run <1>.json.gz")  # same name, other trace
    out = tmp_path / "out"
    assert runner.invoke(app, ["batch", str(root), "-o", str(out)]).exit_code == 0
    runs = _runs(out)
    a, b = runs["a/run <1>.sqlite"], runs["b/run <1>.json.gz"]
    assert a["report"] == "reports/run-1.html"
    assert b["report"] == f"reports/run-1-{str(b['run_id'])[:8]}.html"
    assert sorted(p.name for p in (out / "reports").iterdir()) == sorted(
        [Path(str(a["report"])).name, Path(str(b["report"])).name]
    )
    # a later batch keeps names unique against what the dataset already holds
    assert naming.report_name("x/run <1>.sqlite", "f" * 16, {"run-1": "e" * 16}) == "run-1-ffffffff"
    assert naming.report_name("x/run <1>.sqlite", "e" * 16, {"run-1": "e" * 16}) == "run-1"


def test_empty_folder_warns_exits_nonzero_and_writes_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "README.md").write_text("not a trace\n")
    out = tmp_path / "out"
    res = runner.invoke(app, ["batch", str(empty), "-o", str(out)])
    assert res.exit_code == 2
    assert res.stderr.startswith("tcreport: warning: ") and "no traces found" in res.stderr
    assert not out.exists()
