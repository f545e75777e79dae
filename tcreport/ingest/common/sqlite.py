"""Shared SQLite access for the DLProf Viewer database and Nsight Systems exports.

Both are SQLite files written by NVIDIA tools whose strings are not always valid UTF-8 (a 2022
Windows export holds a Latin-1 user name), so text is decoded leniently. Bulk columns go straight
into Arrow: through the ADBC SQLite driver when installed (several times faster on multi-GB
exports), else through ``sqlite3`` in large batches.

A database is code as much as data: read-only mode stops writes, not a view that runs a recursive
query for minutes (a 266 KB file made the reader hold 1.9 GB), a virtual table, a generated column
computed on every read or a trigger. So a reader names the tables it reads and :func:`refuse_unsafe`
refuses the database when any of them is a view or a virtual table, has a column computed on read,
or has a trigger; only stored rows are ever read, which bounds every query by the file's size.
Behind that, every ``sqlite3`` query runs under a progress handler (:class:`_Guarded`) that stops
it past :func:`limits.max_query_seconds` or past a number of SQLite VM steps proportional to the
file (:func:`limits.max_query_steps`; the real exports need under one step per byte), with a
one-line error that names the bound and its override.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa

from tcreport.errors import InputError
from tcreport.ingest.common import limits

SQLITE_MAGIC = b"SQLite format 3\x00"


def is_sqlite(path: Path) -> bool:
    if not path.is_file():
        return False
    try:
        with path.open("rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def _lenient(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def read_only_uri(path: Path) -> str:
    """A ``file:`` URI that opens ``path`` read-only, whatever characters its name holds.

    Unencoded, ``#`` starts a fragment and ``?`` a query (``u/run#2.sqlite`` opened, and created,
    ``u/run``) and ``%`` an escape, so the path is percent-encoded. ``mode=ro`` never creates or
    writes; ``immutable=1`` also skips the locks and journal look-ups a read-only open still does,
    so a trace on a read-only share or one being copied is never touched (profiler exports are not
    written to while tcreport reads them).
    """
    from urllib.parse import quote

    return f"file:{quote(path.resolve().as_posix(), safe='/')}?mode=ro&immutable=1"


#: How often (in SQLite VM steps) the progress handler looks at the clock and the step count.
_EVERY = 10_000


class _Guarded(sqlite3.Connection):
    """A connection whose every ``execute`` starts a fresh time and work budget for that query
    (its fetches included); past either, SQLite interrupts it and :attr:`tripped` says why."""

    tripped: str | None = None
    _steps = 0
    _max_steps = 0
    _deadline = 0.0
    _max_s = 0.0

    def guard(self, max_steps: int, max_s: float) -> None:
        self._max_steps, self._max_s = max_steps, max_s
        self.set_progress_handler(self._progress, _EVERY)

    def execute(self, sql: str, parameters: object = (), /) -> sqlite3.Cursor:
        self._steps, self._deadline = 0, time.monotonic() + self._max_s
        return super().execute(sql, parameters)  # type: ignore[arg-type]

    def _progress(self) -> int:
        self._steps += _EVERY
        if self._max_steps and self._steps > self._max_steps:
            self.tripped = (
                f"a query did more than {self._max_steps:,} SQLite steps, far more than a file "
                "of this size needs (a hostile database?); TCREPORT_MAX_QUERY_STEPS raises it"
            )
            return 1
        if self._max_s and time.monotonic() > self._deadline:
            self.tripped = (
                f"a query ran past {self._max_s:g} s; TCREPORT_MAX_QUERY_S raises the limit"
            )
            return 1
        return 0


def unreadable(con: sqlite3.Connection, exc: BaseException, path: Path) -> InputError:
    """The error for a failed query: the bound it ran into, else corruption. A query the guard
    did not stop but that was interrupted was stopped by a Ctrl-C: the KeyboardInterrupt raised
    in the progress handler, which sqlite3 reports as ``OperationalError('interrupted')``. It is
    raised again as the KeyboardInterrupt it was (not "corrupt or unreadable", exit 2; a caller
    that took a bad file for "no value" carried on as if never asked to stop)."""
    tripped = getattr(con, "tripped", None)
    if tripped:
        return InputError(tripped, path)
    if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_INTERRUPT:
        raise KeyboardInterrupt from exc
    return InputError(f"corrupt or unreadable SQLite database: {exc}", path)


@contextmanager
def connect(path: Path) -> Iterator[sqlite3.Connection]:
    """Open read-only (never create or modify the user's file), every query bounded (see the
    module docstring); map corruption to InputError."""
    uri = read_only_uri(path)
    try:
        con = sqlite3.connect(uri, uri=True, factory=_Guarded)
        size = os.path.getsize(path)
    except (sqlite3.Error, OSError) as exc:
        raise InputError(f"cannot open SQLite database: {exc}", path) from exc
    assert isinstance(con, _Guarded)
    con.guard(limits.max_query_steps(size), limits.max_query_seconds())
    con.text_factory = _lenient
    try:
        yield con
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
        raise unreadable(con, exc, path) from exc
    finally:
        con.close()


def _master(con: sqlite3.Connection, path: Path) -> list[tuple[str, str, str, str]]:
    """``(type, name, tbl_name, sql)`` of every schema object."""
    try:
        return [
            (str(t), str(n), str(tb), str(sql or ""))
            for t, n, tb, sql in con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")
        ]
    except (sqlite3.DatabaseError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"corrupt or not a SQLite database: {exc}", path) from exc


def _virtual(sql: str) -> bool:
    return sql.lstrip().upper().startswith("CREATE VIRTUAL")


def table_names(con: sqlite3.Connection, path: Path) -> set[str]:
    """The stored tables: never a view or a virtual table, whose reading runs code."""
    return {n for t, n, _, sql in _master(con, path) if t == "table" and not _virtual(sql)}


def refuse_unsafe(con: sqlite3.Connection, path: Path, reads: Iterable[str]) -> None:
    """:class:`InputError` when a table the reader needs (``reads``) is a view, or when the
    database holds a trigger, a virtual table or a column computed on every read (no profiler
    writes any of those); see the module docstring. Other views are never read (they are not in
    :func:`table_names`), so a profiler's own views (DLProf's, nsys 2022's) are no reason."""
    wanted = {r.lower() for r in reads}  # SQLite's names ignore case: nvtx_events is read too
    for kind, name, table, sql in _master(con, path):
        if kind == "view" and name.lower() in wanted:
            why = f"{name} is a view, not a table"
        elif kind == "table" and _virtual(sql):
            why = f"{name[:60]} is a virtual table"
        elif kind == "trigger":
            why = f"{table[:60]} has a trigger ({name[:60]})"
        elif kind == "table" and _computed(con, name):
            why = f"{name[:60]} has a column computed on every read (a generated column)"
        else:
            continue
        raise InputError(
            f"{why}; tcreport reads only stored rows (no profiler writes this, and it can run "
            "any query)",
            path,
        )


def _computed(con: sqlite3.Connection, table: str) -> bool:
    """Whether ``table`` has a VIRTUAL generated column (``table_xinfo`` hidden = 2)."""
    quoted = table.replace('"', '""')
    return any(r[6] == 2 for r in con.execute(f'PRAGMA table_xinfo("{quoted}")'))


def columns(con: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]


def query_arrow(con: sqlite3.Connection, sql: str, names: list[str], path: Path) -> pa.Table:
    """Run ``sql`` and return its rows as an Arrow table with ``names`` as columns.

    Types are inferred by Arrow from the first values; readers cast via ``schema.conform``.
    """
    try:
        cur = con.execute(sql)
        cols: list[list[object]] = [[] for _ in names]
        while True:
            rows = cur.fetchmany(65536)
            if not rows:
                break
            for i, col in enumerate(zip(*rows, strict=True)):
                cols[i].extend(col)
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
        raise unreadable(con, exc, path) from exc
    arrays = {}
    for n, c in zip(names, cols, strict=True):
        try:
            arrays[n] = pa.array(c)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:  # e.g. a float among huge integers
            raise InputError(f"column {n!r} holds values of mixed types: {exc}", path) from exc
    return pa.table(arrays)
