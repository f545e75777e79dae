"""``tcreport query OUT "SQL"``: DuckDB over a ``tcreport batch`` dataset, offline and sandboxed.

A query reads the four views and nothing else: no other file, no URL, no ATTACH, no COPY, no
extension, no writes (see :func:`connect`), so a shared OUT or a pasted query cannot read the
user's files, forge a dataset file or reach the network.

Views ``runs``, ``ops``, ``kernels`` and ``findings`` read the Parquet files with hive partitioning,
so ``WHERE gpu = '...'`` or ``month = '2024-05'`` opens only those folders. Partition values are read
as text (``gpu``: the GPU model made filesystem-safe; ``runs.gpu_model`` holds the real name). DuckDB
is an optional extra (``[query]``) imported only here, so the rest of tcreport never needs it.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from tcreport.batch.work import TABLES
from tcreport.errors import InputError, UsageError


class QueryError(UsageError):
    """The SQL did not run (syntax, unknown column, ...): DuckDB's message, one line."""


def _duckdb() -> Any:
    try:
        import duckdb
    except ModuleNotFoundError as exc:
        raise UsageError(
            "tcreport query needs DuckDB: pip install 'tcreport[query]' (duckdb)"
        ) from exc
    return duckdb


#: Statement kinds a question may use: reading the views, and explaining how. Everything else
#: (COPY, ATTACH, INSTALL/LOAD, SET, CREATE, INSERT, PRAGMA, CALL, EXPORT) is refused before it runs.
_READING = ("SELECT", "EXPLAIN")


def _sources(root: Path, name: str, schema: pa.Schema) -> pa.Table | Any:
    """The table's Parquet files as one Arrow dataset (hive ``gpu``/``month`` read as text).

    DuckDB scans it through Arrow, which pushes ``WHERE gpu = ...`` down to the partition folders;
    DuckDB itself then needs no file-system access at all, so it can be switched off.
    """
    import pyarrow.dataset as ds

    part = pa.schema([("gpu", pa.string()), ("month", pa.string())])
    full = pa.schema([*schema, *part])
    files = sorted(p.as_posix() for p in (root / name).glob("*/*/*.parquet"))
    if not files:
        return full.empty_table()
    return ds.dataset(
        files,
        schema=full,
        format="parquet",
        partitioning=ds.partitioning(part, flavor="hive"),
        partition_base_dir=(root / name).as_posix(),
    )


def memory_mb() -> int:
    """DuckDB's memory limit: ``TCREPORT_QUERY_MEMORY_MB``, else a quarter of the machine's
    memory, at most 4 GiB (a dataset's tables hold one row per run, op or kernel name)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 20
    except (ValueError, OSError, AttributeError):  # not POSIX: assume a small machine
        total = 4096
    raw = os.environ.get("TCREPORT_QUERY_MEMORY_MB", "").strip()
    return max(64, int(raw)) if raw.isdigit() else min(4096, max(64, total // 4))


def connect(out: Path) -> Any:
    """An in-memory DuckDB connection with the dataset's four views, and nothing else.

    The views are Arrow datasets registered before the sandbox closes: then external access is
    switched off (no file, URL, ATTACH, COPY or extension), extensions never autoload or
    autoinstall, and the configuration is locked so a query cannot switch any of it back on.
    """
    duckdb = _duckdb()
    root = out / "dataset"
    if not (root / "runs").is_dir():
        raise InputError("no tcreport batch dataset here (expected dataset/runs/)", out)
    con = duckdb.connect(
        ":memory:",
        config={
            # a bounded share of memory and no spilling: DuckDB's default (80 % of RAM, spilling
            # to ./.tmp in whatever folder the user stands in) is no default for a shared machine
            "memory_limit": f"{memory_mb()}MB",
            "temp_directory": "",
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            "allow_community_extensions": False,
            "allow_persistent_secrets": False,
            "python_enable_replacements": False,  # no scanning of Python variables by name
        },
    )
    try:
        for name, schema in TABLES.items():
            con.register(f"_{name}_source", _sources(root, name, schema))
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM _{name}_source")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    except (duckdb.Error, OSError, pa.ArrowException) as exc:
        con.close()
        raise InputError(f"dataset unreadable: {_first_line(exc)}", root) from exc
    return con


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _check_reading(duckdb: Any, sql: str) -> None:
    """Refuse anything but SELECT/EXPLAIN (one or more statements) before DuckDB runs any of it."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryError(f"query failed: {_first_line(exc)}") from exc
    if not statements:
        raise QueryError("query failed: no SQL statement given")
    for st in statements:
        kind = st.type.name if st.type.name != "EXPLAIN" else _explained(duckdb, st.query)
        if kind == "LOAD":  # DuckDB files INSTALL (and FORCE INSTALL) under LOAD: say which
            kind = "INSTALL" if _INSTALL.match(st.query) else kind
        if kind not in _READING:
            raise QueryError(
                f"query refused: {kind} statements are not allowed; "
                "tcreport query only reads the views runs, ops, kernels, findings, steps"
            )


#: ``INSTALL x`` / ``FORCE INSTALL x``, which DuckDB's parser types as a LOAD statement.
_INSTALL = re.compile(r"\s*(?:force\s+)?install\b", re.IGNORECASE)
#: ``EXPLAIN``, then ``ANALYZE`` and/or an option list, before the statement explained.
_EXPLAIN = re.compile(r"\s*explain\b\s*(?:analy[sz]e\b\s*)?(?:\([^()]*\)\s*)?", re.IGNORECASE)


def _explained(duckdb: Any, query: str) -> str:
    """The kind of statement an ``EXPLAIN`` explains: ``EXPLAIN ANALYZE`` runs it, so only a
    SELECT may be explained; anything not parsed as exactly one SELECT counts as refused."""
    m = _EXPLAIN.match(query)
    if m is None:
        return "EXPLAIN"
    try:
        inner = duckdb.extract_statements(query[m.end() :])
    except duckdb.Error:
        return "EXPLAIN"
    if len(inner) != 1 or inner[0].type.name != "SELECT":
        return f"EXPLAIN {inner[0].type.name if len(inner) == 1 else 'EXPLAIN'}"
    return "SELECT"


@contextlib.contextmanager
def _interruptible(con: Any, timeout: float | None) -> Iterator[list[str]]:
    """Ctrl-C and ``timeout`` stop the running query: DuckDB holds the GIL-free C++ loop, so
    Python's own KeyboardInterrupt would wait for it to end; ``con.interrupt()`` stops it now.
    Yields a list that names what stopped it ("signal" or "timeout")."""
    why: list[str] = []

    def stop(reason: str) -> None:
        why.append(reason)
        con.interrupt()

    timer = threading.Timer(timeout, stop, ("timeout",)) if timeout else None
    main = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGINT, lambda *_: stop("signal")) if main else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        yield why
    finally:
        if timer is not None:
            timer.cancel()
        if main:
            signal.signal(signal.SIGINT, old)


def run(out: Path, sql: str, timeout: float | None = None) -> pa.Table:
    """Run ``sql`` against the dataset under ``out``; the result as an Arrow table.

    Ctrl-C raises :class:`KeyboardInterrupt` (the CLI exits 130) within moments, however long the
    query; past ``timeout`` seconds it is stopped with a :class:`QueryError`.
    """
    duckdb = _duckdb()
    if timeout is not None and not timeout > 0:
        raise UsageError(f"--timeout must be a positive number of seconds, not {timeout}")
    _check_reading(duckdb, sql)
    con = connect(out)
    try:
        with _interruptible(con, timeout) as why:
            try:
                rel = con.sql(sql)
                if rel is None:
                    raise QueryError("query failed: the statement returned no rows")
                fetch = getattr(rel, "to_arrow_table", None) or rel.fetch_arrow_table
                table: pa.Table = fetch()  # fetch_arrow_table: duckdb < 1.4
            except duckdb.InterruptException:
                if why and why[0] == "timeout":
                    raise QueryError(f"query stopped: it ran past --timeout {timeout:g}s") from None
                raise KeyboardInterrupt from None
    except duckdb.PermissionException as exc:
        raise QueryError(
            f"query refused: {_first_line(exc)} (tcreport query reads only the dataset's views)"
        ) from exc
    except (duckdb.Error, AttributeError, OSError, pa.ArrowException) as exc:
        raise QueryError(f"query failed: {_first_line(exc)}") from exc
    finally:
        con.close()
    return table


def _plain(value: object) -> object:
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    return str(value)


def to_csv(table: pa.Table, escape: Callable[[str], str] | None = None) -> str:
    """The result as CSV, values exactly as stored; ``escape`` (for a terminal) applied to text."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    esc = escape or (lambda s: s)
    w.writerow([esc(n) for n in table.column_names])
    for row in table.to_pylist():  # a query result a person asked to read: small
        values = ("" if v is None else _plain(v) for v in row.values())
        w.writerow([esc(v) if isinstance(v, str) else v for v in values])
    return buf.getvalue()


#: Characters JSON may carry raw but a terminal would act on (DEL, C1 controls such as CSI U+009B,
#: bidi overrides, line separators): written as ``\uXXXX``, which parses back to the same value.
_JSON_INERT = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def to_json(table: pa.Table) -> str:
    """The result as JSON; every control character escaped (``json`` escapes C0 itself)."""
    rows = [{k: _plain(v) for k, v in r.items()} for r in table.to_pylist()]
    text = json.dumps(rows, indent=2, ensure_ascii=False)
    return _JSON_INERT.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text) + "\n"
