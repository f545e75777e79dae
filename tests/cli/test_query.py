"""``tcreport query``: DuckDB over the batch dataset, offline; table, CSV or JSON out."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from trace_paths import REALTRACES
from typer.testing import CliRunner

import tcreport.cli.batch_cmds  # noqa: F401  registers batch/query on the app
from tcreport.batch import query
from tcreport.batch import runner as batch
from tcreport.cli.app import app

pytest.importorskip("duckdb")
runner = CliRunner()
TC_BY_GPU = (
    "SELECT gpu_model, count(*) AS runs, round(avg(tc_share), 3) AS tc_share FROM runs "
    "WHERE status = 'ok' AND gpu_model IS NOT NULL GROUP BY gpu_model ORDER BY gpu_model"
)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not REALTRACES.exists():
        pytest.skip("real traces not available")
    root = tmp_path_factory.mktemp("query")
    shutil.copytree(REALTRACES, root / "in")
    batch.run_batch(root / "in", root / "out", jobs=2)
    return root / "out"


@pytest.mark.realtraces
def test_tc_share_per_gpu_model(dataset: Path) -> None:
    table = query.run(dataset, TC_BY_GPU)
    rows = {r["gpu_model"]: r for r in table.to_pylist()}
    assert rows["NVIDIA GeForce RTX 2070 SUPER"]["tc_share"] == 0.0
    assert rows["NVIDIA H100 80GB HBM3"]["tc_share"] > 0.5
    assert {"Tesla V100-DGXS-32GB", "NVIDIA A100-PG509-200"} <= set(rows)


@pytest.mark.realtraces
def test_cli_formats(dataset: Path) -> None:
    table = runner.invoke(app, ["query", str(dataset), TC_BY_GPU])
    assert table.exit_code == 0, table.stderr
    assert "NVIDIA H100 80GB HBM3" in table.stdout
    as_csv = runner.invoke(app, ["query", str(dataset), TC_BY_GPU, "--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert rows[0].keys() == {"gpu_model", "runs", "tc_share"}
    as_json = runner.invoke(app, ["query", str(dataset), TC_BY_GPU, "--format", "json"])
    assert {r["gpu_model"] for r in json.loads(as_json.stdout)} == {r["gpu_model"] for r in rows}


@pytest.mark.realtraces
def test_partition_columns_and_joins(dataset: Path) -> None:
    sql = (
        "SELECT r.gpu, r.month, count(*) AS kernels, sum(k.gpu_ns) AS ns FROM kernels k "
        "JOIN runs r USING (run_id) WHERE k.gpu = 'NVIDIA-H100-80GB-HBM3' GROUP BY ALL"
    )
    rows = query.run(dataset, sql).to_pylist()
    assert len(rows) == 1 and rows[0]["kernels"] > 0
    assert len(rows[0]["month"]) == 7  # YYYY-MM, read as text


@pytest.mark.realtraces
def test_bad_sql_is_one_line_exit_2(dataset: Path) -> None:
    result = runner.invoke(app, ["query", str(dataset), "SELECT nope FROM runs"])
    assert result.exit_code == 2
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("tcreport: error: query failed:")


def test_no_dataset_is_an_input_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["query", str(tmp_path), "SELECT 1"])
    assert result.exit_code == 2
    assert "no tcreport batch dataset" in result.stderr


def test_empty_tables_still_have_views(tmp_path: Path) -> None:
    from synthetic import synthetic_run

    from tcreport import api

    (tmp_path / "in").mkdir()
    api.ingest(synthetic_run("fp32").replace(ops=None, kernels=None), tmp_path / "in" / "r")
    batch.run_batch(tmp_path / "in", tmp_path / "out")
    assert query.run(tmp_path / "out", "SELECT count(*) AS n FROM kernels").to_pylist() == [
        {"n": 0}
    ]
