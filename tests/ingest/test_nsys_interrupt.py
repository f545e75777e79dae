"""Ctrl-C while reading an nsys export stops the read; it is never retried through sqlite3."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tcreport.ingest.common import sqlite as common_sqlite
from tcreport.ingest.nsys import db as nsys_db


def _count(batches: Iterator[pa.RecordBatch]) -> int:
    return sum(b.num_rows for b in batches)


def _db(path: Path) -> nsys_db.NsysDb:
    con = sqlite3.connect(f"file:{path.as_posix()}?mode=ro", uri=True)
    return nsys_db.NsysDb(path, con)


@pytest.fixture
def no_sqlite_fallback(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    used: list[Path] = []

    def connect(path: Path) -> Any:
        used.append(path)
        raise AssertionError("fell back to sqlite3 after an interrupt")

    monkeypatch.setattr(common_sqlite, "connect", connect)  # the module nsys_db calls
    return used


def test_an_adbc_cancel_caused_by_ctrl_c_is_a_keyboard_interrupt(
    nsys_h100: Path, monkeypatch: pytest.MonkeyPatch, no_sqlite_fallback: list[Path]
) -> None:
    adbc_manager = pytest.importorskip("adbc_driver_manager")
    pytest.importorskip("adbc_driver_sqlite")

    def cancelled(con: Any, scan: Any, stop: threading.Event) -> Iterator[pa.RecordBatch]:
        # what ADBC's SQLite driver raises when SIGINT arrives during execute()
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as ki:
            raise adbc_manager.NotSupportedError("NOT_IMPLEMENTED") from ki
        yield  # pragma: no cover

    monkeypatch.setattr(nsys_db, "_adbc_batches", cancelled)
    db = _db(nsys_h100)
    db.workers = 1
    scan = nsys_db.Scan("SELECT id FROM StringIds", ("id",), _count)
    with pytest.raises(KeyboardInterrupt):
        db.scan([scan])
    assert no_sqlite_fallback == []


def test_an_adbc_data_error_still_falls_back_to_sqlite3(
    nsys_h100: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("adbc_driver_sqlite")

    def invalid(con: Any, scan: Any, stop: threading.Event) -> Iterator[pa.RecordBatch]:
        raise pa.ArrowInvalid("invalid UTF-8")  # a Latin-1 string, as in a 2022 Windows export
        yield  # pragma: no cover

    monkeypatch.setattr(nsys_db, "_adbc_batches", invalid)
    db = _db(nsys_h100)
    db.workers = 1
    scan = nsys_db.Scan("SELECT id FROM StringIds", ("id",), _count)
    assert db.scan([scan])[0] > 0


def test_an_interrupted_parallel_scan_stops_its_threads_and_queued_ranges(
    nsys_h100: Path, no_sqlite_fallback: list[Path]
) -> None:
    started: list[int] = []

    def fold(batches: Iterator[pa.RecordBatch]) -> int:
        started.append(1)
        if len(started) == 1:
            raise KeyboardInterrupt  # as the main thread would get it
        return _count(batches)

    db = _db(nsys_h100)
    db.workers = 2
    scans = [nsys_db.Scan("SELECT id FROM StringIds", ("id",), fold) for _ in range(50)]
    with pytest.raises(KeyboardInterrupt):
        db.scan(scans)
    assert len(started) < 50  # queued ranges were cancelled, not run to the end
