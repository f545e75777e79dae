"""Hostile NVTX_EVENTS values that once made the nsys reader's answer depend on how the table was
chunked, or read rows that are not ranges as ranges."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from tcreport.ingest.nsys import db as _nsys_db
from tcreport.ingest.nsys import nvtx_scan as _nvtx_scan
from tcreport.ingest.nsys import reader as nsys_sqlite
from tcreport.ingest.nsys.nvtx_nesting import time_order
from tcreport.model import Run
from tcreport.schema import TableKind

pytestmark = pytest.mark.realtraces

_MIN = np.iinfo(np.int64).min


@pytest.fixture
def cnn_export(dlprof_cnn: Path) -> Path:
    return dlprof_cnn / "nsys_profile.sqlite"


def _same_run(a: Run, b: Run) -> None:
    for kind in TableKind:
        x, y = getattr(a, kind.value), getattr(b, kind.value)
        assert (x is None and y is None) or (x is not None and y is not None and x.equals(y)), kind
    assert a.meta == b.meta


def _mutated(src: Path, tmp_path: Path, *sql: str) -> Path:
    path = tmp_path / "hostile.sqlite"
    shutil.copyfile(src, path)
    path.chmod(0o644)
    con = sqlite3.connect(path)
    for s in sql:
        con.executescript(s)
    con.commit()
    con.close()
    return path


def test_time_order_of_an_end_at_int64_min_does_not_depend_on_the_sort_taken() -> None:
    """(thread, start, -end) order: -end overflows for an end of INT64_MIN, so the lexsort taken
    when rows are out of order put (MIN, MIN) before (MIN, 5), while the already-in-order check
    (which compares the ends themselves) keeps (MIN, 5) first: a child before its parent."""
    tcode = np.zeros(3, dtype=np.int64)
    in_order = time_order(tcode[:2], np.array([_MIN, _MIN]), np.array([5, _MIN]))
    assert in_order.tolist() == [0, 1]
    # the same two ranges after one that starts later, so that the lexsort runs
    shuffled = time_order(tcode, np.array([10, _MIN, _MIN]), np.array([20, 5, _MIN]))
    assert shuffled.tolist() == [1, 2, 0]


def test_end_at_int64_min_gives_the_same_tables_merged_or_sorted(
    cnn_export: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunk 1 holds a range (MIN, 5) and a 0-length range (MIN, MIN) in that order (in order, so
    not re-sorted); chunk 2 is out of time order inside itself only, so the seams pass and the
    merged outline keeps chunk 1's order, while the full sort reversed the two ranges."""
    path = _mutated(
        cnn_export,
        tmp_path,
        f"UPDATE NVTX_EVENTS SET start = {_MIN}, end = 5, text = 'outer' WHERE rowid = 1;"
        f"UPDATE NVTX_EVENTS SET start = {_MIN}, end = {_MIN}, text = 'inner' WHERE rowid = 2;"
        # rows 9, 10 and 11, 12 trade times: out of order inside the rowid range 8..14 only
        "CREATE TEMP TABLE s AS SELECT rowid r, start, end FROM NVTX_EVENTS"
        " WHERE rowid BETWEEN 9 AND 12;"
        "UPDATE NVTX_EVENTS SET start = (SELECT start FROM s WHERE r = NVTX_EVENTS.rowid + 2),"
        " end = (SELECT end FROM s WHERE r = NVTX_EVENTS.rowid + 2) WHERE rowid IN (9, 10);"
        "UPDATE NVTX_EVENTS SET start = (SELECT start FROM s WHERE r = NVTX_EVENTS.rowid - 2),"
        " end = (SELECT end FROM s WHERE r = NVTX_EVENTS.rowid - 2) WHERE rowid IN (11, 12);",
    )
    monkeypatch.setattr(_nsys_db, "CHUNK_ROWS", 7)
    merged = nsys_sqlite.read(path)
    monkeypatch.setattr(_nvtx_scan, "_MAX_CELLS", 0)
    _same_run(nsys_sqlite.read(path), merged)
    # since the reader holds NVTX ranges to schema.POSITIONS_NS, both are dropped before any sort
    assert merged.ranges is not None
    assert not {"outer", "inner"} & set(merged.ranges.column("name").to_pylist())


def test_event_types_past_255_are_not_read_as_ranges(cnn_export: Path, tmp_path: Path) -> None:
    """The event type travelled packed with the domain as ``type + 256 * domain``: an eventType
    of 315 (no such NVTX event) came back as a push/pop range (59) in domain 1, -197 as one in
    domain -1. Rows of an unknown type are ignored, like eventType 99."""
    unknown = _mutated(
        cnn_export, tmp_path, "UPDATE NVTX_EVENTS SET eventType = 99 WHERE rowid % 2 = 0"
    )
    expected = nsys_sqlite.read(unknown)
    for hostile in (315, 60 + 256, 75 + 256 * 3, -197):
        path = _mutated(
            cnn_export,
            tmp_path,
            f"UPDATE NVTX_EVENTS SET eventType = {hostile} WHERE rowid % 2 = 0",
        )
        _same_run(nsys_sqlite.read(path), expected)


@pytest.mark.parametrize(
    "change",
    [
        "start = NULL",
        f"start = {_MIN}",
        f"start = {-(2**61)}",
        f"start = {2**62}",
        "end = start + 1125899906842624",  # 2**50 ns: 13 days
        "end = 9223372036854775807",
    ],
)
def test_nvtx_ranges_out_of_the_schema_bounds_are_dropped_with_a_note(
    change: str, cnn_export: Path, tmp_path: Path
) -> None:
    """A NULL start was read as 0 and an INT64_MIN one kept: a DLProf op of ~2**63 ns that
    swallowed the 8 ops before it on its thread (33 ops became 25), claimed start_ns 0, and wrapped
    its cpu_ns negative. NVTX ranges now meet the bounds kernels do (schema.POSITIONS_NS,
    MAX_INTERVAL_NS), which the dropped-rows note already claimed for them."""
    relaxed = (  # the export declares start NOT NULL
        "CREATE TABLE t AS SELECT * FROM NVTX_EVENTS ORDER BY rowid; DROP TABLE NVTX_EVENTS;"
        " ALTER TABLE t RENAME TO NVTX_EVENTS;"
    )
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    without = nsys_sqlite.read(
        _mutated(cnn_export, tmp_path / "a", relaxed, "DELETE FROM NVTX_EVENTS WHERE rowid = 20")
    )
    path = _mutated(
        cnn_export, tmp_path / "b", relaxed, f"UPDATE NVTX_EVENTS SET {change} WHERE rowid = 20"
    )
    run = nsys_sqlite.read(path)
    for kind in (TableKind.KERNELS, TableKind.OPS, TableKind.RANGES):
        assert getattr(run, kind.value).equals(getattr(without, kind.value)), kind
    assert any("1 NVTX range rows" in n for n in run.meta.notes)


def test_crossing_ops_give_the_same_tables_whatever_the_chunks(
    cnn_export: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a new thread: op X [1000, 2000) in domain 0, op Y [1500, 3000) in domain 1 (inside X,
    outlasting it), op Z [2500, 2600) in domain 0. In one chunk Y is dropped inside X but its end
    hides Z: the ops are X alone. With CHUNK_ROWS=7, X and Y share the rowid range 162..168 and Z
    (rowid 169) starts the next: Y is dropped in its chunk, Z's chunk never sees Y's end, and Z
    becomes an op of its own."""
    g, t = 281487442182999, 3_000_000_000
    path = _mutated(
        cnn_export,
        tmp_path,
        "INSERT INTO NVTX_EVENTS(start, end, eventType, text, globalTid, domainId) VALUES "
        f"({t + 1000}, {t + 2000}, 59, 'aten::add, seq = 1', {g}, 0), "
        f"({t + 1500}, {t + 3000}, 59, 'aten::mul, seq = 2', {g}, 1), "
        f"({t + 2500}, {t + 2600}, 59, 'aten::relu, seq = 3', {g}, 0)",
    )
    whole = nsys_sqlite.read(path)
    monkeypatch.setattr(_nsys_db, "CHUNK_ROWS", 7)
    _same_run(nsys_sqlite.read(path), whole)


def test_numeric_texts_in_an_untyped_text_column_read_the_same_whatever_the_chunks(
    cnn_export: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A text column declared without a type keeps 42 and 1.5 as numbers (nsys declares it TEXT,
    which stores them as text). ADBC types each chunk's text column from its first batch: a chunk
    that starts with 1.5 reads 42 as 42.0 and casts it to '4.200000e+01', one that starts with 42
    reads '42'; the sqlite3 fallback does the same. The DLProf op names made from them differ."""
    path = _mutated(
        cnn_export,
        tmp_path,
        'CREATE TABLE t (start INTEGER, "end" INTEGER, eventType INTEGER, rangeId INTEGER,'
        " category INTEGER, color INTEGER, text, globalTid INTEGER, endGlobalTid INTEGER,"
        " textId INTEGER, domainId INTEGER, uint64Value, int64Value, doubleValue, uint32Value,"
        " int32Value, floatValue, jsonTextId, jsonText);"
        " INSERT INTO t SELECT * FROM NVTX_EVENTS ORDER BY rowid; DROP TABLE NVTX_EVENTS;"
        " ALTER TABLE t RENAME TO NVTX_EVENTS;"
        "UPDATE NVTX_EVENTS SET text = 42 WHERE rowid % 4 = 0;"
        "UPDATE NVTX_EVENTS SET text = 1.5 WHERE rowid % 4 = 1;",
    )
    whole = nsys_sqlite.read(path)
    monkeypatch.setattr(_nsys_db, "CHUNK_ROWS", 7)
    _same_run(nsys_sqlite.read(path), whole)
