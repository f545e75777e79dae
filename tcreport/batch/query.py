"""``tcreport query OUT "SQL"``: DuckDB over a ``tcreport batch`` dataset, offline.

Views ``runs``, ``ops``, ``kernels`` and ``findings`` read the Parquet files with hive partitioning,
so ``WHERE gpu = '...'`` or ``month = '2024-05'`` opens only those folders. Partition values are read
as text (``gpu``: the GPU model made filesystem-safe; ``runs.gpu_model`` holds the real name). DuckDB
is an optional extra (``[query]``) imported only here, so the rest of tcreport never needs it.
"""

from __future__ import annotations

import csv
import io
import json
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


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def connect(out: Path) -> Any:
    """An in-memory DuckDB connection with the dataset's four views."""
    duckdb = _duckdb()
    root = out / "dataset"
    if not (root / "runs").is_dir():
        raise InputError("no tcreport batch dataset here (expected dataset/runs/)", out)
    con = duckdb.connect(":memory:")
    for name, schema in TABLES.items():
        files = root / name
        if any(files.glob("*/*/*.parquet")):
            glob = (files / "*" / "*" / "*.parquet").as_posix()
            con.execute(
                f"CREATE VIEW {name} AS SELECT * FROM read_parquet({_quote(glob)}, "
                "hive_partitioning = true, union_by_name = true, "
                "hive_types = {'gpu': VARCHAR, 'month': VARCHAR})"
            )
        else:
            empty = schema.empty_table().append_column("gpu", pa.array([], pa.string()))
            empty = empty.append_column("month", pa.array([], pa.string()))
            con.register(f"_{name}_empty", empty)
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM _{name}_empty")
    return con


def run(out: Path, sql: str) -> pa.Table:
    """Run ``sql`` against the dataset under ``out``; the result as an Arrow table."""
    con = connect(out)
    duckdb = _duckdb()
    try:
        rel = con.sql(sql)
        fetch = getattr(rel, "to_arrow_table", None) or rel.fetch_arrow_table  # duckdb < 1.4
        table: pa.Table = fetch()
    except (duckdb.Error, AttributeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise QueryError(f"query failed: {first}") from exc
    finally:
        con.close()
    return table


def _plain(value: object) -> object:
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    return str(value)


def to_csv(table: pa.Table) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(table.column_names)
    for row in table.to_pylist():  # a query result a person asked to read: small
        w.writerow(["" if v is None else _plain(v) for v in row.values()])
    return buf.getvalue()


def to_json(table: pa.Table) -> str:
    rows = [{k: _plain(v) for k, v in r.items()} for r in table.to_pylist()]
    return json.dumps(rows, indent=2, ensure_ascii=False) + "\n"
