"""Issue 14, second round: ``tcreport query`` against a hostile tester.

Values print exactly when piped and inert on a terminal; ``EXPLAIN ANALYZE`` cannot run a
statement the sandbox refuses; a runaway query stops on Ctrl-C or ``--timeout``. The dataset is an
empty synthetic one (the views exist, no runs): the SQL itself makes the hostile values.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
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
ROOT = Path(__file__).resolve().parents[2]
FOREVER = "with recursive r(i) as (select 1 union all select i+1 from r) select count(*) from r"
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


def _threads(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("Threads:")))


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_synthetic_ctrl_c_stops_a_runaway_query(out: Path) -> None:
    """SIGINT mid-query: exit 130 within seconds, not when the (endless) query would end."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "tcreport", "query", str(out), FOREVER, "--timeout", "120"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 60
        while _threads(proc.pid) < 3 and time.monotonic() < deadline:  # DuckDB's workers: running
            time.sleep(0.1)
        time.sleep(1.0)
        assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=15)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err.decode().strip() == "tcreport: interrupted"


def test_synthetic_timeout_stops_a_runaway_query(out: Path) -> None:
    result = runner.invoke(app, ["query", str(out), FOREVER, "--timeout", "0.5"])
    assert result.exit_code == 2, result.stderr
    assert result.stderr.strip() == "tcreport: error: query stopped: it ran past --timeout 0.5s"


def test_synthetic_timeout_must_be_positive(out: Path) -> None:
    result = runner.invoke(app, ["query", str(out), "select 1", "--timeout", "0"])
    assert result.exit_code == 2 and "--timeout" in result.stderr


def test_synthetic_csv_on_a_real_terminal_sends_no_control_code(out: Path) -> None:
    """Through a pseudo-terminal, as a person at a shell sees it: ESC and CSI arrive escaped."""
    pty = pytest.importorskip("pty")
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "tcreport", "query", str(out), RED, "-f", "csv"]
    try:
        proc = subprocess.run(cmd, stdout=slave, stderr=subprocess.PIPE, env=env, timeout=120)
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the terminal's other end is closed and drained
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(master)
    shown = b"".join(chunks).decode()
    assert proc.returncode == 0, proc.stderr
    assert "\\x1b[31mred\\x9b2J" in shown and "\x1b" not in shown and "\x9b" not in shown
