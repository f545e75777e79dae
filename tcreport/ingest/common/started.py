"""When a profile was recorded, as the trace itself says: the run's date in a batch archive.

A file's mtime is when it was copied or cloned, not when it was recorded, so every reader that can
find a start time in the trace reports it (``RunMeta.started_at``), and batch falls back to the
mtime only when none does, saying so. Clocks in traces are not always epoch clocks (Kineto's event
times can be since boot), so a value is used only when it is a plausible date.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from tcreport.errors import InputError
from tcreport.ingest.common import sqlite as _sqlite
from tcreport.model import Run

#: 2005-01-01 .. 2100-01-01 in ns since the epoch: anything outside is a clock that is not one.
_EARLIEST_NS = 1_104_537_600 * 10**9
_LATEST_NS = 4_102_444_800 * 10**9

NSYS_SESSION = "Nsight Systems session start"


def plausible(ns: object) -> bool:
    return type(ns) is int and _EARLIEST_NS <= ns < _LATEST_NS


def iso(ns: int) -> str:
    """``2026-05-26T09:18:46Z``: to the second, which is all a run's date needs."""
    return datetime.fromtimestamp(ns // 10**9, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def nsys_session_start(con: sqlite3.Connection) -> int | None:
    """``TARGET_INFO_SESSION_START_TIME.utcEpochNs`` (every export since 2021) on an open
    connection, or None when the table or the column is absent."""
    try:
        if "TARGET_INFO_SESSION_START_TIME" not in _sqlite.table_names(con, Path()):
            return None  # absent, or a view (which could run any query): no date from it
        cols = {r[1] for r in con.execute("PRAGMA table_info(TARGET_INFO_SESSION_START_TIME)")}
        if "utcEpochNs" not in cols:
            return None
        (ns,) = con.execute("SELECT MIN(utcEpochNs) FROM TARGET_INFO_SESSION_START_TIME").fetchone()
    except (sqlite3.Error, InputError):
        return None
    return int(ns) if plausible(ns) else None


def nsys_export_beside(folder: Path) -> int | None:
    """The session start of an Nsight Systems export in ``folder``: DLProf keeps the export it
    analysed (``nsys_profile.sqlite``) beside its reports, and its CSV/JSON reports and Viewer
    database carry no date of their own."""
    try:
        candidates = sorted(p for p in folder.glob("*.sqlite") if p.is_file())
    except OSError:
        return None
    for p in candidates:
        if not _sqlite.is_sqlite(p):
            continue
        try:
            with _sqlite.connect(p) as con:
                ns = nsys_session_start(con)
        except InputError:
            continue
        if ns is not None:
            return ns
    return None


def dated_by_export_beside(run: Run, folder: Path) -> Run:
    """``run`` with the session start of the Nsight Systems export DLProf left in ``folder``."""
    ns = nsys_export_beside(folder)
    if ns is None:
        return run
    meta = dataclasses.replace(
        run.meta, started_at=iso(ns), started_at_source=f"{NSYS_SESSION} (DLProf's export)"
    )
    return run.replace(meta=meta)
