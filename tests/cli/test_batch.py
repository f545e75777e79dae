"""``tcreport batch``: real traces plus a corrupt one -> dataset, index and reports; re-runs skip."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from trace_paths import REALTRACES, have_tf_reader, real_or_bundled
from typer.testing import CliRunner

import tcreport.cli.batch_cmds  # noqa: F401  registers batch/query on the app
from tcreport.batch import identity
from tcreport.batch import runner as batch
from tcreport.cli.app import app

runner = CliRunner()
#: Every run in ../shared/realtraces: a DLProf folder is one run (its .sqlite files are inside it),
#: and so are the per-rank traces of one distributed job.
REAL_RUNS = {
    "dlprof/v1.8-pytorch-cnn",
    "kineto/a100-ddp-nccl-3step/nccl_data.json.gz",
    "kineto/a100-tf32-alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "kineto/h100-bf16-bert-small/gaunernst_bert-small-uncased__1016001.redacted.json.gz",
    "kineto/mi250-rocm-minitoy/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "kineto/two-rank-sampled",  # the two ranks of one job: one run (issue 23)
    "kineto/v100-legacy-resnet50/worker0.1623143089861.pt.trace.json.gz",
    "nsys/h100x2-bf16-fastvideo/mfu_2gpu_after.sqlite",
    "nsys/v2022.1-windows-synthetic/con_kernel.sqlite",
    "tf_profiler",
}
HOSTILE_NAME = "<img src=x onerror=alert(1)>.json.gz"


def _real_runs() -> set[str]:
    """The runs the archive holds here: a TensorFlow profile only with the [tf] extra."""
    return REAL_RUNS if have_tf_reader() else REAL_RUNS - {"tf_profiler"}


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not REALTRACES.exists():
        pytest.skip("real traces not available")
    root = tmp_path_factory.mktemp("archive") / "in"
    shutil.copytree(REALTRACES, root)
    if not have_tf_reader():  # without the [tf] extra a TensorFlow profile cannot be read
        shutil.rmtree(root / "tf_profiler")
    (root / "broken.sqlite").write_bytes(b"SQLite format 3\x00" + b"\x00\xff" * 300)
    return root


@pytest.fixture(scope="module")
def first_run(archive: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, int]:
    out = tmp_path_factory.mktemp("batch") / "out"
    result = runner.invoke(app, ["batch", str(archive), "-o", str(out), "--jobs", "2"])
    return out, result.stderr, result.exit_code


def _runs(out: Path) -> list[dict[str, object]]:
    table = ds.dataset(out / "dataset" / "runs", format="parquet", partitioning="hive").to_table()
    rows: list[dict[str, object]] = table.to_pylist()
    return rows


@pytest.mark.realtraces
def test_every_real_trace_is_in_the_dataset_and_index(first_run: tuple[Path, str, int]) -> None:
    out, stderr, code = first_run
    runs = {r["source"]: r for r in _runs(out)}
    assert set(runs) == _real_runs() | {"broken.sqlite"}
    index = (out / "index.html").read_text(encoding="utf-8")
    for source in _real_runs():
        r = runs[source]
        assert r["status"] == "ok", r
        # reports are named after the trace (its file or folder name), not the content hash
        stem = source.rsplit("/", 1)[-1].split(".")[0]
        assert str(r["report"]).startswith(f"reports/{stem}"), r["report"]
        assert (out / str(r["report"])).is_file()
        assert f'href="{r["report"]}"' in index
        assert source in index
    dlprof = runs["dlprof/v1.8-pytorch-cnn"]
    assert dlprof["gpu_kernel_ns"] == 589147 and dlprof["format"] == "dlprof-csv"
    assert dlprof["gpu_model"] == "NVIDIA GeForce RTX 2070 SUPER"
    assert "Content-Security-Policy" in index
    # the runs table leads; no GPU model of the archive has three dated runs, so no chart
    assert index.index('<section id="runs">') < index.index('<section id="trend"')
    assert '<svg class="trend"' not in index


@pytest.mark.realtraces
def test_index_shows_the_finding_each_report_says_to_fix_first(
    first_run: tuple[Path, str, int],
) -> None:
    """The index's column is the report's "Fix first" line (rules.fix_first), not the first finding
    by rank: on the MI250 trace and the Windows export the two differ (the first ranked finding is
    a measurement note or a low-severity one, and the report says no finding is worth fixing
    first), which the index used to contradict."""
    out, _, _ = first_run
    index = (out / "index.html").read_text(encoding="utf-8")
    differ = 0
    for r in _runs(out):
        if r["status"] != "ok" or r["rank"] is not None:  # a job's rank rows share its page
            continue
        row = re.search(rf'<tr id="run-{r["run_id"]}">.*?</tr>', index, re.DOTALL)
        assert row is not None
        report = (out / str(r["report"])).read_text(encoding="utf-8")
        line = re.search(r'<p class="fix-first" id="fix-first">(.*?)</p>', report)
        assert line is not None
        if r["fix_first_id"] is None:
            assert "no actionable finding" in line.group(1)
            # the words its report's line begins with (intended: the cell was blank)
            assert '<td>no actionable finding</td><td><a href="reports/' in row.group(0)
        else:
            assert f">{r['fix_first_title']}</a>" in line.group(1)
            assert f"<td>{r['fix_first_id']}: {r['fix_first_title']}</td>" in row.group(0)
        differ += r["fix_first_id"] != r["top_finding_id"]
    assert differ >= 2  # the MI250 trace and the Windows export, at least


@pytest.mark.realtraces
def test_corrupt_trace_is_listed_with_its_error_and_exit_is_nonzero(
    first_run: tuple[Path, str, int],
) -> None:
    out, stderr, code = first_run
    assert code == 1
    assert "1 failed" in stderr and "broken.sqlite" in stderr
    broken = next(r for r in _runs(out) if r["source"] == "broken.sqlite")
    assert broken["status"] == "error" and broken["error"]
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "failed: " in index and str(broken["error"])[:30] in index


@pytest.mark.realtraces
def test_dataset_is_hive_partitioned_by_gpu_and_month(first_run: tuple[Path, str, int]) -> None:
    out, _, _ = first_run
    for table in ("runs", "ops", "kernels", "findings"):
        files = list((out / "dataset" / table).glob("gpu=*/month=*/*.parquet"))
        assert files, table
    assert (out / "dataset" / "kernels" / "gpu=NVIDIA-H100-80GB-HBM3").is_dir()
    assert not (out / batch.STAGING).exists() or not any((out / batch.STAGING).iterdir())


@pytest.mark.realtraces
def test_second_run_retries_only_the_failed_run(
    first_run: tuple[Path, str, int], archive: Path
) -> None:
    """Done runs are skipped; a failed one is tried again (a newer tcreport or a missing extra
    installed since may read it), which rewrites only its own files."""
    out, _, _ = first_run
    broken = next(r["run_id"] for r in _runs(out) if r["source"] == "broken.sqlite")
    files = [p for p in (out / "dataset").rglob("*.parquet") if p.stem != broken]
    before = {p: p.stat().st_mtime_ns for p in files}
    result = batch.run_batch(archive, out, jobs=2)
    assert result.processed == 1
    assert result.skipped == len(_real_runs())
    assert [s for s, _ in result.failed] == ["broken.sqlite"]  # still listed, still failing
    assert {p: p.stat().st_mtime_ns for p in files} == before


def test_discovery_treats_a_detected_folder_as_one_run(tmp_path: Path) -> None:
    from synthetic import synthetic_run

    from tcreport import api

    (tmp_path / "a").mkdir()
    api.ingest(synthetic_run("fp32"), tmp_path / "a" / "run1")
    (tmp_path / "a" / "notes.txt").write_text("not a trace")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "trace.pt.trace.json").write_text("{not json")
    found = batch.discover(tmp_path)
    assert [(f.path.relative_to(tmp_path).as_posix(), f.format) for f in found] == [
        ("a/run1", "tcreport-parquet"),
        ("b/trace.pt.trace.json", None),
    ]
    assert found[1].error


def test_content_hash_of_a_folder_ignores_its_location(tmp_path: Path) -> None:
    (tmp_path / "x" / "sub").mkdir(parents=True)
    (tmp_path / "x" / "a.csv").write_text("1")
    (tmp_path / "x" / "sub" / "b.csv").write_text("2")
    shutil.copytree(tmp_path / "x", tmp_path / "y")
    assert identity.content_hash(tmp_path / "x") == identity.content_hash(tmp_path / "y")
    (tmp_path / "y" / "sub" / "b.csv").write_text("3")
    assert identity.content_hash(tmp_path / "x") != identity.content_hash(tmp_path / "y")


def test_hostile_file_name_is_escaped_in_the_index(tmp_path: Path) -> None:
    src = real_or_bundled("kineto/a100-tf32-alexnet")
    if not src.exists():
        pytest.skip("real traces not available")
    inp = tmp_path / "in"
    inp.mkdir()
    shutil.copy(next(src.glob("*.json.gz")), inp / HOSTILE_NAME)
    result = batch.run_batch(inp, tmp_path / "out")
    assert result.processed == 1 and not result.failed
    index = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert "<img" not in index and "&lt;img src=x" in index


def test_dask_executor_writes_the_same_dataset(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    src = REALTRACES / "kineto"
    if not src.exists():
        pytest.skip("real traces not available")
    inp = tmp_path / "in"
    shutil.copytree(src, inp)
    (inp / "broken.sqlite").write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    local = batch.run_batch(inp, tmp_path / "local", jobs=1)
    with distributed.LocalCluster(
        n_workers=1, processes=False, threads_per_worker=2, dashboard_address=None
    ) as cluster:
        remote = batch.run_batch(
            inp,
            tmp_path / "dask",
            executor=batch.Executor.DASK,
            scheduler=cluster.scheduler_address,
        )
    kineto_runs = sum(r.startswith("kineto/") for r in REAL_RUNS)
    assert remote.processed == local.processed == kineto_runs + 1  # the broken file is processed
    assert len(remote.failed) == 1

    def key(out: Path) -> list[tuple[object, ...]]:
        rows = _runs(out)
        return sorted((r["run_id"], r["status"], r["gpu_kernel_ns"], r["tc_share"]) for r in rows)

    assert key(tmp_path / "dask") == key(tmp_path / "local")
    files = {p.relative_to(tmp_path / "local") for p in (tmp_path / "local").rglob("*.parquet")}
    assert files == {
        p.relative_to(tmp_path / "dask") for p in (tmp_path / "dask").rglob("*.parquet")
    }
