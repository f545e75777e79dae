"""Bulk reads from an Nsight Systems export, in parallel and in bounded memory.

A production export holds tens of millions of rows; getting them out of SQLite is most of the cost
of reading it, and SQLite itself is single-threaded per connection. So a big table is cut into
rowid ranges, each range is scanned on its own connection in a thread pool (the ADBC driver and
Arrow release the GIL, so two cores read twice as fast), and each range's record batches are folded
into compact arrays as they arrive instead of being kept as one wide table.

ADBC is tried first; it infers column types from the first batch and rejects invalid UTF-8, so any
failure of a range (a type that changes mid-table, a Latin-1 string in a 2022 Windows export, a
damaged page) reruns that range through ``sqlite3``, whose lenient decoding and error mapping are
the reference. Both paths hand the fold the same batches, so the tables they build are identical.

Ctrl-C is never a reason to rerun: a SIGINT during a statement is a KeyboardInterrupt once the
driver call returns, and an ADBC error caused by an interrupt, or with status ``CANCELLED`` (what
ADBC's DB-API layer makes of a SIGINT: a cancel, which the SQLite driver answers with
``NOT_IMPLEMENTED``), is re-raised as KeyboardInterrupt too.
When the main thread is interrupted while worker threads scan, the threads see a stop flag at
their next batch and queued ranges are cancelled, so the read stops within a batch, not a table.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import pyarrow as pa

from tcreport.errors import InputError
from tcreport.ingest.common import limits
from tcreport.ingest.common import sqlite as _sqlite
from tcreport.ingest.common.memory import release_free_memory

T = TypeVar("T")

#: Rows per record batch: large enough that per-batch Python is noise, small enough to stay in cache.
BATCH_ROWS = 65536
#: Rows per rowid range: a few ranges per worker balance the pool and bound each fold's memory.
#: 1 M rather than 2 M: the ADBC time is the same, but the folds' temporaries are smaller, and
#: zeroing fresh pages for them (numpy madvises huge pages) is most of a cold fold's cost: on the
#: x300 / x1000 exports the scan's system time is 0.74-1.00 s / 1.65-2.33 s against 1.24-1.36 s /
#: 2.93-3.33 s. Below 1 M the user time grows as fast (benchmarks/README.md, branch adbcperf).
CHUNK_ROWS = 1_000_000
#: An export smaller than this is scanned in the calling thread: its scans take milliseconds, and
#: a pool's threads (each scan on its own ADBC connection) cost more than they overlap. On the
#: bundled 2.4 MB sample, with the step thread below ``analysis.result.SMALL_RUN`` also off, a
#: ``summary --json`` took ~7-10 ms less CPU (benchmarks/README.md, session 13).
SMALL_EXPORT = 16 << 20


@dataclass(frozen=True)
class Scan(Generic[T]):
    """One query and the fold that turns its batches (columns named ``names``) into a result."""

    sql: str
    names: tuple[str, ...]
    fold: Callable[[Iterator[pa.RecordBatch]], T]


class NsysDb:
    """One export: a ``sqlite3`` connection for metadata, and :meth:`scan` for bulk rows.

    ``tables`` holds the stored tables only; ``needs`` names the ones whose being a view is
    refused outright (any other view reads as absent), see :func:`_sqlite.refuse_unsafe`. Both
    paths read bounded: ``sqlite3`` under the connection's progress handler, ADBC (no such
    hook) only over stored tables, checked against the time bound between batches.
    """

    def __init__(self, path: Path, con: sqlite3.Connection, needs: Sequence[str] = ()) -> None:
        self.path = path
        self.con = con
        _sqlite.refuse_unsafe(con, path, needs)
        self.tables = _sqlite.table_names(con, path)
        self._cols: dict[str, list[str]] = {}
        self._types: dict[str, dict[str, str]] = {}
        self.workers = 1 if _size(path) < SMALL_EXPORT else max(1, min(4, _cpus()))
        self._stop = threading.Event()

    def columns(self, table: str) -> list[str]:
        if table not in self.tables:
            return []
        if table not in self._cols:
            info = self.rows(f'PRAGMA table_info("{table}")')
            self._cols[table] = [str(r[1]) for r in info]
            self._types[table] = {str(r[1]): str(r[2] or "").upper() for r in info}
        return self._cols[table]

    def holds_text(self, table: str, column: str) -> bool:
        """Whether SQLite stores every value of ``column`` as text (a declared type with TEXT
        affinity: CHAR, CLOB or TEXT in it and no INT, as nsys declares its text columns). In a column
        declared otherwise, ``42`` stays a number, and ADBC would type each chunk's column from
        its first batch: 42 would read as ``'42'`` in one chunk and ``'4.200000e+01'`` in
        another, so such a column is read through ``CAST(... AS TEXT)``."""
        declared = (
            self._types.get(table, {}).get(column, "") if column in self.columns(table) else ""
        )
        # SQLite's affinity rules, in their order: INT anywhere wins (CHARINT is an integer)
        return "INT" not in declared and any(w in declared for w in ("CHAR", "CLOB", "TEXT"))

    def rows(self, sql: str, params: tuple[str, ...] = ()) -> list[tuple[object, ...]]:
        try:
            return list(self.con.execute(sql, params))
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            raise _sqlite.unreadable(self.con, exc, self.path) from exc

    def scalar_row(self, sql: str) -> tuple[object, ...]:
        rows = self.rows(sql)
        return rows[0] if rows else (None,)

    def chunks(self, table: str, where: str = "") -> list[str]:
        """``WHERE`` clauses that cut ``table`` into rowid ranges of about :data:`CHUNK_ROWS`.

        MIN and MAX of the rowid are two b-tree seeks, so this costs nothing; rowids may have gaps,
        which only makes some ranges smaller. Scanning the ranges in order gives the rows in the
        same order as one full scan.
        """
        cond = f" AND ({where})" if where else ""
        try:
            (lo,) = self.con.execute(f"SELECT MIN(rowid) FROM {table}").fetchone()
            (hi,) = self.con.execute(f"SELECT MAX(rowid) FROM {table}").fetchone()
        except (sqlite3.DatabaseError, UnicodeDecodeError):
            lo = hi = None  # no rowid (a view): one scan; real damage surfaces in the scan itself
        if not isinstance(lo, int) or not isinstance(hi, int):
            return [f"WHERE {where}" if where else ""]
        n = max(1, min(64, -(-(hi - lo + 1) // CHUNK_ROWS)))
        step = -(-(hi - lo + 1) // n)
        return [
            f"WHERE rowid BETWEEN {a} AND {min(hi, a + step - 1)}{cond}"
            for a in range(lo, hi + 1, step)
        ]

    def scan(self, scans: Sequence[Scan[Any]]) -> list[Any]:
        """Run every scan, ``workers`` at a time, and return their folds' results in order."""
        if self.workers == 1 or len(scans) == 1:
            return [self._run(s) for s in scans]
        pool = ThreadPoolExecutor(self.workers)
        try:
            futures = [pool.submit(self._run, s) for s in scans]
            results = [f.result() for f in futures]
        except BaseException:
            self._stop.set()  # running scans stop at their next batch; queued ones never start
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        release_free_memory()
        return results

    def _run(self, scan: Scan[T]) -> T:
        adbc = _open_adbc(self.path)
        if adbc is not None:
            batches = _timed(_adbc_batches(adbc, scan, self._stop), self.path)
            try:
                return scan.fold(batches)
            except (pa.ArrowInvalid, OSError, adbc_errors()) as exc:
                if self._stop.is_set() or _interrupted(exc):
                    raise KeyboardInterrupt from exc
                # else ADBC cannot read this data (a type that changes mid-table, invalid UTF-8):
                # rerun through sqlite3, which reads it leniently and maps real damage
            finally:
                batches.close()
                adbc.close()
        with _sqlite.connect(self.path) as con:  # maps sqlite3 errors to InputError
            try:
                return scan.fold(_sqlite_batches(con, scan, self._stop))
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise InputError(f"unexpected value in an export column: {exc}", self.path) from exc


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is, or was caused by, a Ctrl-C (ADBC's cancel of the running statement)."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, KeyboardInterrupt) or str(getattr(e, "status_code", "")).endswith(
            "CANCELLED"
        ):
            return True
        e = e.__cause__ or e.__context__
    return False


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # gone or unreadable: the scans say which, with the file's name


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def _timed(
    batches: Generator[pa.RecordBatch, None, None], path: Path
) -> Generator[pa.RecordBatch, None, None]:
    """``batches`` under the query time bound, read between batches: ADBC has no progress
    handler, but its queries read stored rows only (``refuse_unsafe``), so each batch is bounded."""
    limit = limits.max_query_seconds()
    deadline = time.monotonic() + limit
    try:
        for batch in batches:
            if limit and time.monotonic() > deadline:
                raise InputError(
                    f"a query ran past {limit:g} s; TCREPORT_MAX_QUERY_S raises the limit", path
                )
            yield batch
    finally:
        batches.close()


def _adbc_batches(
    con: _Adbc, scan: Scan[Any], stop: threading.Event
) -> Generator[pa.RecordBatch, None, None]:
    stmt = con.manager.AdbcStatement(con.con)
    reader: pa.RecordBatchReader | None = None
    try:
        stmt.set_options(**{"adbc.sqlite.query.batch_rows": str(BATCH_ROWS)})
        stmt.set_sql_query(scan.sql)
        stream, _ = stmt.execute_query()
        reader = pa.RecordBatchReader.from_stream(stream)
        for batch in reader:
            if stop.is_set():
                raise KeyboardInterrupt
            if any(pa.types.is_string(t) for t in batch.schema.types):
                batch.validate(full=True)  # nsys stores some blobs as TEXT: not always UTF-8
            yield batch.rename_columns(list(scan.names))
    finally:
        if reader is not None:
            reader.close()
        stmt.close()


def _sqlite_batches(
    con: sqlite3.Connection, scan: Scan[Any], stop: threading.Event
) -> Iterator[pa.RecordBatch]:
    cur = con.execute(scan.sql)
    while rows := cur.fetchmany(BATCH_ROWS):
        if stop.is_set():
            raise KeyboardInterrupt
        cols = [pa.array(c) for c in zip(*rows, strict=True)]
        yield pa.record_batch(cols, names=list(scan.names))


def int64(batch: pa.RecordBatch, name: str) -> pa.Array:
    """A column as int64: all-null batches come back typed ``null`` (sqlite3) or int64 (ADBC)."""
    col = batch.column(name)
    if col.type == pa.int64():
        return col
    if pa.types.is_integer(col.type) or pa.types.is_null(col.type):
        return col.cast(pa.int64())
    raise pa.ArrowInvalid(f"{name}: {col.type} where an integer was expected")


def string(batch: pa.RecordBatch, name: str) -> pa.Array:
    col = batch.column(name)
    return col if col.type == pa.string() else col.cast(pa.string())


def adbc_errors() -> type[Exception]:
    try:
        import adbc_driver_manager
    except ImportError:  # pragma: no cover - only reached when ADBC vanished mid-read
        return sqlite3.Error
    err: type[Exception] = adbc_driver_manager.Error
    return err


class _Adbc:
    """One read-only ADBC connection, through the driver manager's low-level API.

    Not the DB-API module (``adbc_driver_sqlite.dbapi``): importing it imports ``pyarrow.dataset``
    and with it pandas, about 0.3 s that a small report paid for a statement and its Arrow stream,
    which is all a scan uses. A Ctrl-C during a statement is then Python's own KeyboardInterrupt,
    raised when the driver call returns (the SQLite driver cannot cancel a running statement, so
    the DB-API's cancel-on-SIGINT stopped it no sooner).
    """

    def __init__(self, path: Path) -> None:
        import adbc_driver_manager as manager
        import adbc_driver_sqlite

        self.manager: Any = manager
        self.db: Any = adbc_driver_sqlite.connect(_sqlite.read_only_uri(path))
        try:
            self.con: Any = manager.AdbcConnection(self.db)
        except BaseException:
            self.db.close()
            raise

    def close(self) -> None:
        try:
            self.con.close()
        finally:
            self.db.close()


def has_adbc() -> bool:
    """Whether both ADBC packages import (else every scan goes through ``sqlite3``)."""
    try:
        import adbc_driver_manager  # noqa: F401  # both packages, or the sqlite3 path
        import adbc_driver_sqlite  # noqa: F401
    except ImportError:
        return False
    return True


def _open_adbc(path: Path) -> _Adbc | None:
    if not has_adbc():
        return None
    try:
        return _Adbc(path)
    except adbc_errors():
        return None


def adbc_row(path: Path, sql: str, *, unsafe: str) -> tuple[object, ...] | None:
    """The one row an aggregate ``sql`` returns, read through ADBC (SQLite runs in C, never
    holding the GIL: safe beside a busy main thread); None when ADBC is not installed. No progress
    handler bounds the query, so it must read stored rows only, a bounded number of times:
    ``unsafe`` (a count of what ``sql`` reads that is not a stored table: a view, a virtual
    table, a generated column) is run first on the same connection, so it checks the very file
    the count reads, not the one found at that path when the job was detected (a file replaced
    since by one holding an endless view kept a thread busy for ever); InputError where it is
    not 0."""
    con = _open_adbc(path)
    if con is None:
        return None
    try:
        if _one_row(con, unsafe) != (0,):
            raise InputError("a table the count reads is not a stored table", path)
        return _one_row(con, sql)
    finally:
        con.close()


def _one_row(con: _Adbc, sql: str) -> tuple[object, ...]:
    stmt = con.manager.AdbcStatement(con.con)
    try:
        stmt.set_sql_query(sql)
        stream, _ = stmt.execute_query()
        with pa.RecordBatchReader.from_stream(stream) as reader:
            rows = reader.read_all().to_pylist()
    finally:
        stmt.close()
    if len(rows) != 1:
        raise pa.ArrowInvalid(f"an aggregate gave {len(rows)} rows")
    return tuple(rows[0].values())
