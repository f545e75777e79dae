"""``tcreport batch`` and ``query`` over distributed jobs: one run per job, a row per rank.

The archive holds two jobs (the real two ranks of a 128-rank job, and a synthetic 4-rank job
whose rank 1 is slow) beside three single real traces, flat in one folder and in subfolders.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from job_synthetic import write_job
from trace_paths import REALTRACES
from typer.testing import CliRunner

import tcreport.cli.batch_cmds  # noqa: F401  registers batch/query on the app
from tcreport.batch import runner as batch
from tcreport.cli.app import app

KINETO = REALTRACES / "kineto"
SINGLES = ("a100-tf32-alexnet", "h100-bf16-bert-small", "mi250-rocm-minitoy")
runner = CliRunner()


def _archive(root: Path, flat: bool) -> Path:
    """Two jobs and three single traces, in one folder (``flat``) or each job in its own."""
    if not KINETO.exists():
        pytest.skip("needs ../shared/realtraces")
    sampled = root if flat else root / "two-rank-sampled"
    sampled.mkdir(parents=True, exist_ok=True)
    for f in (KINETO / "two-rank-sampled").glob("*.json.gz"):
        shutil.copy(f, sampled / f.name)
    write_job(root if flat else root / "slow-job", 4, slow=(1,))
    for name in SINGLES:
        for f in (KINETO / name).glob("*.json.gz"):
            shutil.copy(f, root / f.name)
    return root


def _table(out: Path, name: str) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = (
        ds.dataset(out / "dataset" / name, format="parquet", partitioning="hive")
        .to_table()
        .to_pylist()
    )
    return rows


@pytest.mark.parametrize("flat", [True, False], ids=["flat", "folders"])
def test_two_jobs_and_three_traces_are_five_runs_with_rank_rows(tmp_path: Path, flat: bool) -> None:
    root = _archive(tmp_path / "in", flat)
    out = tmp_path / "out"
    result = batch.run_batch(root, out)
    assert result.processed == 5 and not result.failed
    runs = _table(out, "runs")
    assert len({r["run_id"] for r in runs}) == 5
    jobs = [r for r in runs if r["ranks"] is not None and r["rank"] is None]
    assert sorted((int(str(r["ranks"])), int(str(r["world_size"]))) for r in jobs) == [
        (2, 128),
        (4, 4),
    ]
    for job in jobs:
        rows = [r for r in runs if r["run_id"] == job["run_id"] and r["rank"] is not None]
        assert sorted(int(str(r["rank"])) for r in rows) == list(range(int(str(job["ranks"]))))
        assert job["gpu_kernel_ns"] == sum(int(str(r["gpu_kernel_ns"])) for r in rows)
        assert (out / str(job["report"])).is_file()
    singles = [r for r in runs if r["ranks"] is None]
    assert len(singles) == 3 and all(r["rank"] is None for r in singles)
    for table in ("ops", "kernels", "steps"):
        ranked = {(r["run_id"], r["rank"]) for r in _table(out, table) if r["rank"] is not None}
        assert len(ranked) == 6, table  # 2 + 4 ranks
    index = (out / "index.html").read_text(encoding="utf-8")
    assert index.count('<tr id="run-') == 5
    again = batch.run_batch(root, out)
    assert again.processed == 0 and again.skipped == 5


def test_query_groups_by_rank(tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    root = _archive(tmp_path / "in", flat=False)
    out = tmp_path / "out"
    assert runner.invoke(app, ["batch", str(root), "-o", str(out)]).exit_code == 0
    sql = (
        "SELECT r.source, s.rank, avg(s.wait_ns) AS wait_ns, CAST(sum(CAST(s.straggler AS INT)) AS INT) AS slow "
        "FROM steps s JOIN runs r ON r.run_id = s.run_id AND r.rank IS NULL "
        "WHERE s.rank IS NOT NULL GROUP BY ALL ORDER BY 1, 2"
    )
    result = runner.invoke(app, ["query", str(out), sql, "-f", "json"])
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)
    slow_job = [r for r in rows if r["source"] == "slow-job"]
    assert [r["rank"] for r in slow_job] == [0, 1, 2, 3]
    assert [r["slow"] for r in slow_job] == [0, 3, 0, 0]  # rank 1 in each of the 3 steps
    assert slow_job[1]["wait_ns"] == 0 and slow_job[0]["wait_ns"] == pytest.approx(20e6, rel=0.01)
    sql = "SELECT rank, count(*) AS n FROM kernels GROUP BY rank ORDER BY rank NULLS LAST"
    result = runner.invoke(app, ["query", str(out), sql, "-f", "json"])
    ranks = [r["rank"] for r in json.loads(result.stdout)]
    assert ranks == [0, 1, 2, 3, None]
