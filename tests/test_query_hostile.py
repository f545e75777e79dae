"""Issue 14, second round: ``tcreport query`` against a hostile tester.

Values print exactly when piped and inert on a terminal; ``EXPLAIN ANALYZE`` cannot run a
statement the sandbox refuses; a runaway query stops on Ctrl-C or ``--timeout``. The dataset is an
empty synthetic one (the views exist, no runs): the SQL itself makes the hostile values.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from typer.testing import CliRunner

import tcreport.cli.batch_cmds  # noqa: F401  registers batch/query on the app
from tcreport.batch import query as query_mod
from tcreport.cli.app import app
from tcreport.render.escape import terminal

pytest.importorskip("duckdb")
runner = CliRunner()
RED = "select chr(27) || '[31mred' || chr(155) || '2J' as v"


@pytest.fixture
def out(tmp_path: Path) -> Path:
    (tmp_path / "out" / "dataset" / "runs").mkdir(parents=True)
    return tmp_path / "out"


def test_synthetic_csv_piped_keeps_control_codes_exactly(out: Path) -> None:
    result = runner.invoke(app, ["query", str(out), RED, "-f", "csv"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "v\n\x1b[31mred\x9b2J\n"


def test_synthetic_csv_on_a_terminal_shows_control_codes_escaped() -> None:
    table = pa.table({"v\x1b": ["\x1b[31mred\x9b2J"], "n": [1]})
    text = query_mod.to_csv(table, escape=terminal)
    assert text == "v\\x1b,n\n\\x1b[31mred\\x9b2J,1\n"


def test_synthetic_json_never_carries_a_raw_control_code(out: Path) -> None:
    result = runner.invoke(app, ["query", str(out), RED + ", chr(8238) as b", "-f", "json"])
    assert result.exit_code == 0, result.stderr
    assert not any(ord(c) < 0x20 and c != "\n" or 0x7F <= ord(c) <= 0x9F for c in result.stdout)
    assert "\u202e" not in result.stdout
    assert json.loads(result.stdout) == [{"v": "\x1b[31mred\x9b2J", "b": "\u202e"}]


@pytest.mark.parametrize(
    "sql",
    [
        "explain analyze create or replace view runs as select 'FORGED' as run_id",
        "explain analyse drop view runs",
        "explain (analyze, format json) create table t as select 1",
        "explain analyze create macro m() as 1",
        "explain analyze create secret s (type s3)",
        "explain analyze set variable x = 1",
        "explain analyze checkpoint",
        "explain explain analyze create table t as select 1",
        "checkpoint",
        "force checkpoint",
        "vacuum",
        "analyze",
    ],
)
def test_synthetic_explain_analyze_cannot_run_a_refused_statement(out: Path, sql: str) -> None:
    forged = f"{sql}; select count(*) as n from runs"
    result = runner.invoke(app, ["query", str(out), forged, "-f", "csv"])
    assert result.exit_code == 2, (result.stdout, result.stderr)
    line = result.stderr.strip()
    assert "\n" not in line and line.startswith("tcreport: error: query "), line
    assert "FORGED" not in result.stdout


def test_synthetic_explain_analyze_of_a_select_still_works(out: Path) -> None:
    result = runner.invoke(app, ["query", str(out), "explain analyze select count(*) from runs"])
    assert result.exit_code == 0, result.stderr
