"""``tcreport query`` is offline SQL over four views and nothing more: every escape is refused.

The dataset is a batch of the two bundled samples (real traces). Each escape must fail with one
line on stderr, exit 2, and leave no file behind; a normal question still works.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fs_snapshot import snapshot
from trace_paths import batch_samples
from typer.testing import CliRunner

import tcreport.cli.batch_cmds  # noqa: F401  registers batch/query on the app
from tcreport.batch import runner as batch
from tcreport.cli.app import app

pytest.importorskip("duckdb")
runner = CliRunner()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sandbox")
    batch_samples(root / "in")
    batch.run_batch(root / "in", root / "out")
    (root / "secret.txt").write_text("root:x:0:0:secret\n")
    return root / "out"


def refused(dataset: Path, sql: str, needle: str) -> None:
    before = snapshot(dataset.parent)
    result = runner.invoke(app, ["query", str(dataset), sql])
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tcreport: error: query "), result.stderr
    assert needle in lines[0], lines[0]
    assert "secret" not in result.stdout
    assert snapshot(dataset.parent) == before  # nothing written or changed under the tree


def test_a_normal_select_works(dataset: Path) -> None:
    result = runner.invoke(
        # one per run (the nsys sample is a 2-rank job: its ranks have rows of their own)
        app,
        [
            "query",
            str(dataset),
            "SELECT count(*) AS n FROM runs WHERE rank IS NULL",
            "--format",
            "csv",
        ],
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "n\n2\n"
    kernels = runner.invoke(
        app,
        [
            "query",
            str(dataset),
            "SELECT r.gpu, count(*) AS k FROM kernels k JOIN runs r USING (run_id) "
            "WHERE k.month IS NOT NULL GROUP BY ALL ORDER BY 1",
            "--format",
            "csv",
        ],
    )
    assert kernels.exit_code == 0, kernels.stderr
    assert "NVIDIA-A100-PG509-200" in kernels.stdout


@pytest.mark.parametrize(
    ("sql", "needle"),
    [
        ("SELECT * FROM read_text('{secret}')", "Permission"),
        ("SELECT * FROM read_csv('{secret}')", "Permission"),
        ("SELECT * FROM read_blob('{secret}')", "Permission"),
        ("SELECT * FROM '{secret}'", "secret.txt"),
        ("SELECT * FROM glob('{root}/*')", "Permission"),
        ("SELECT * FROM read_parquet('{dataset}/dataset/runs/*/*/*.parquet')", "Permission"),
        ("SELECT * FROM 'https://evil.example/x.parquet'", "Permission"),
        ("SELECT * FROM read_csv('https://evil.example/x.csv')", "Permission"),
        ("COPY runs TO '{dataset}/dataset/runs/gpu=x/month=2020-01/forged.parquet'", "COPY"),
        ("COPY (SELECT 1) TO '{root}/out.csv'", "COPY"),
        ("SELECT 1; COPY runs TO '{root}/out.csv'", "COPY"),
        ("EXPORT DATABASE '{root}/exported'", "EXPORT"),
        ("ATTACH '{root}/new.duckdb' AS x", "ATTACH"),
        ("INSTALL httpfs", "INSTALL statements are not allowed"),  # DuckDB types it LOAD
        ("force install httpfs", "INSTALL statements are not allowed"),
        ("LOAD httpfs", "LOAD statements are not allowed"),
        ("SET enable_external_access = true", "SET"),
        ("CREATE TABLE t AS SELECT 1", "CREATE"),
        ("PRAGMA enable_profiling", "PRAGMA"),
        ("EXPLAIN ANALYZE COPY (SELECT 1) TO '{root}/out.csv'", "EXPLAIN COPY"),
    ],
)
def test_escapes_are_refused_in_one_line(dataset: Path, sql: str, needle: str) -> None:
    root = dataset.parent
    text = sql.format(secret=root / "secret.txt", root=root, dataset=dataset)
    refused(dataset, text, needle)


def test_a_corrupt_dataset_file_is_one_line(tmp_path: Path, dataset: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(dataset, out)
    victim = next((out / "dataset" / "runs").glob("*/*/*.parquet"))
    victim.write_bytes(b"PAR1 this is not parquet PAR1")
    result = runner.invoke(app, ["query", str(out), "SELECT count(*) FROM runs"])
    assert result.exit_code == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tcreport: error: query failed"), result.stderr


def test_duckdb_is_bounded_in_memory_and_never_spills_into_the_working_folder(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB's defaults were 80 % of RAM and spilling to ``./.tmp`` wherever the user stands."""
    from tcreport.batch import query

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TCREPORT_QUERY_MEMORY_MB", "512")
    sql = "SELECT current_setting('memory_limit') AS m, current_setting('temp_directory') AS t"
    row = query.run(dataset, sql).to_pylist()[0]
    assert row["t"] == "" and row["m"] in ("512.0 MiB", "488.2 MiB")  # MB, shown in MiB
    big = "SELECT count(*) FROM (SELECT range % 7 AS k FROM range(3000000) ORDER BY random())"
    assert query.run(dataset, big).num_rows == 1
    assert list(tmp_path.iterdir()) == []
    monkeypatch.delenv("TCREPORT_QUERY_MEMORY_MB")
    assert 64 <= query.memory_mb() <= 4096
