"""SQLite inputs are read as data, never run as code, and every query is bounded.

Read-only mode stops writes, not a view: a 266 KB export whose kernel table was renamed and
replaced by a view over a recursive CTE ran ``summary`` past 120 s and to 1.9 GB (issue 28 case
3). Each case here is a real export changed in the test; the answer is one line, at once.
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from trace_paths import REALTRACES, SAMPLES

from tcreport import api
from tcreport.errors import InputError
from tcreport.ingest.common import limits
from tcreport.ingest.common import sqlite as _sqlite
from tcreport.ingest.nsys import db as nsys_db

NSYS = SAMPLES / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"
VIEWER = REALTRACES / "dlprof" / "v1.8-pytorch-cnn" / "dlprof_dldb_7.sqlite"
#: Millions of rows from nothing: what a view may run when a reader selects from it.
_BOMB = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 9000000)"


def _variant(tmp_path: Path, src: Path, *sql: str) -> Path:
    out = tmp_path / f"synthetic_{src.name}"
    shutil.copy(src, out)
    con = sqlite3.connect(out)
    try:
        for statement in sql:
            con.execute(statement)
        con.commit()
    finally:
        con.close()
    return out


def _refused(path: Path, says: str) -> str:
    started = time.monotonic()
    with pytest.raises(InputError) as info:
        api.load(path)
    msg = str(info.value)
    assert says in msg and "\n" not in msg and info.value.exit_code == 2, msg
    assert time.monotonic() - started < 30  # nothing ran: the refusal comes before any scan
    return msg


def test_a_kernel_table_replaced_by_a_view_is_refused_before_it_runs(tmp_path: Path) -> None:
    path = _variant(
        tmp_path,
        NSYS,
        "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME TO k0",
        f"CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS {_BOMB} SELECT k0.* FROM r, k0",
    )
    msg = _refused(path, "CUPTI_ACTIVITY_KIND_KERNEL is a view, not a table")
    assert "reads only stored rows" in msg


@pytest.mark.parametrize(
    ("sql", "says"),
    [
        ("CREATE TRIGGER t AFTER INSERT ON StringIds BEGIN SELECT 1; END", "has a trigger (t)"),
        ("CREATE VIRTUAL TABLE side USING fts5(x)", "side is a virtual table"),
        (
            "ALTER TABLE StringIds ADD COLUMN g AS (length(hex(zeroblob(100000))))",
            "StringIds has a column computed on every read",
        ),
    ],
)
def test_code_in_an_export_is_refused(tmp_path: Path, sql: str, says: str) -> None:
    _refused(_variant(tmp_path, NSYS, sql), says)


def test_a_view_of_a_profiler_s_own_is_no_reason_to_refuse(tmp_path: Path) -> None:
    """nsys 2022 and DLProf ship views of their own; only the tables tcreport reads matter."""
    path = _variant(tmp_path, NSYS, f"CREATE VIEW EXTRAP_SOMETHING AS {_BOMB} SELECT i FROM r")
    assert api.load(path).kernels is not None


@pytest.mark.realtraces
def test_a_dlprof_viewer_table_replaced_by_a_view_is_refused(tmp_path: Path) -> None:
    if not VIEWER.exists():
        pytest.skip("real DLProf Viewer database not available")
    path = _variant(
        tmp_path,
        VIEWER,
        "ALTER TABLE read_only_ops RENAME TO o0",
        f"CREATE VIEW read_only_ops AS {_BOMB} SELECT o0.* FROM r, o0",
    )
    _refused(path, "read_only_ops is a view, not a table")


def _tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny_synthetic.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (i INTEGER)")
    con.commit()
    con.close()
    return path


def test_a_query_doing_far_more_work_than_the_file_holds_is_stopped(tmp_path: Path) -> None:
    """The progress handler: VM steps in proportion to the file's size, per query."""
    path = _tiny(tmp_path)
    started = time.monotonic()
    with pytest.raises(InputError) as info, _sqlite.connect(path) as con:
        _sqlite.query_arrow(con, f"{_BOMB} SELECT i FROM r", ["i"], path)
    assert "SQLite steps" in str(info.value) and "TCREPORT_MAX_QUERY_STEPS" in str(info.value)
    assert time.monotonic() - started < 30
    with _sqlite.connect(path) as con:  # the budget is per query: the next one runs
        assert list(con.execute("SELECT count(*) FROM t")) == [(0,)]


def test_a_query_past_the_time_bound_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _tiny(tmp_path)
    monkeypatch.setenv("TCREPORT_MAX_QUERY_STEPS", "0")  # off: the clock alone stops it
    monkeypatch.setenv("TCREPORT_MAX_QUERY_S", "1")
    with pytest.raises(InputError) as info, _sqlite.connect(path) as con:
        list(con.execute(f"{_BOMB.replace('9000000', '900000000')} SELECT sum(i) FROM r"))
    assert "ran past 1 s" in str(info.value) and "TCREPORT_MAX_QUERY_S" in str(info.value)


def test_the_adbc_path_is_bounded_between_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ADBC has no progress handler; its scans read stored rows only and check the clock."""
    adbc = nsys_db._open_adbc(NSYS)
    if adbc is None:
        pytest.skip("ADBC SQLite driver not installed")
    adbc.close()
    monkeypatch.setattr(limits, "max_query_seconds", lambda: 1e-9)
    stopped: list[str] = []
    timed = nsys_db._timed

    def spy(batches: Any, path: Path) -> Any:
        try:
            yield from timed(batches, path)
        except InputError as exc:
            stopped.append(str(exc))
            raise

    monkeypatch.setattr(nsys_db, "_timed", spy)
    with pytest.raises(InputError) as info:
        api.load(NSYS)
    assert "ran past" in str(info.value) and stopped and "ran past" in stopped[0]
