"""Shared SQLite access for the DLProf Viewer database and Nsight Systems exports.

Both are SQLite files written by NVIDIA tools whose strings are not always valid UTF-8 (a 2022
Windows export holds a Latin-1 user name), so text is decoded leniently. Bulk columns go straight
into Arrow: through the ADBC SQLite driver when installed (several times faster on multi-GB
exports), else through ``sqlite3`` in large batches.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa

from tcreport.errors import InputError

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


@contextmanager
def connect(path: Path) -> Iterator[sqlite3.Connection]:
    """Open read-only (never create or modify the user's file); map corruption to InputError."""
    uri = read_only_uri(path)
    try:
        con = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise InputError(f"cannot open SQLite database: {exc}", path) from exc
    con.text_factory = _lenient
    try:
        yield con
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
        raise InputError(f"corrupt or unreadable SQLite database: {exc}", path) from exc
    finally:
        con.close()


def table_names(con: sqlite3.Connection, path: Path) -> set[str]:
    try:
        return {
            r[0]
            for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')")
        }
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
        raise InputError(f"corrupt or not a SQLite database: {exc}", path) from exc


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
        raise InputError(f"corrupt or unreadable SQLite database: {exc}", path) from exc
    arrays = {}
    for n, c in zip(names, cols, strict=True):
        try:
            arrays[n] = pa.array(c)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:  # e.g. a float among huge integers
            raise InputError(f"column {n!r} holds values of mixed types: {exc}", path) from exc
    return pa.table(arrays)
