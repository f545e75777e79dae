"""``Table.group_by(keys).aggregate(...)`` without importing ``pyarrow.dataset``.

pyarrow runs a group-by as an Acero plan, through ``pyarrow.acero``, which imports
``pyarrow.dataset`` for its scan nodes, and with it the Parquet, ORC and cloud filesystem modules:
~16 ms of CPU that a small trace's ``summary`` paid for its first group-by and never used
(``check`` in CI and ``batch`` start a process per trace). The plan a group-by builds is two
nodes, a table source and an aggregate; :func:`aggregate_by` builds the same plan from Acero's own
compiled module, names the outputs as ``TableGroupBy.aggregate`` does (``dur_sum``,
``count_all``), and falls back to pyarrow's method where that module is missing.
tests/analysis/test_group_by.py holds the two to the same tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

try:
    from pyarrow._acero import AggregateNodeOptions, Declaration, TableSourceNodeOptions
except ImportError:  # pragma: no cover - a pyarrow without Acero, or with another layout
    Declaration = None


def aggregate_by(
    table: pa.Table,
    keys: str | Sequence[str],
    aggregations: Sequence[tuple[Any, ...]],
    *,
    use_threads: bool = True,
) -> pa.Table:
    """``table.group_by(keys, use_threads=...).aggregate(aggregations)``, the same table."""
    key_list = [keys] if isinstance(keys, str) else list(keys)
    if Declaration is None or not key_list:
        return table.group_by(keys, use_threads=use_threads).aggregate(list(aggregations))
    specs = []
    for aggregation in aggregations:
        target, func, options = aggregation if len(aggregation) == 3 else (*aggregation, None)
        targets = list(target) if isinstance(target, list | tuple) else [target]
        func = func if func.startswith("hash_") else f"hash_{func}"
        specs.append((targets, func, options, "_".join([*targets, func.removeprefix("hash_")])))
    plan = Declaration.from_sequence(
        [
            Declaration("table_source", TableSourceNodeOptions(table)),
            Declaration("aggregate", AggregateNodeOptions(specs, keys=key_list)),
        ]
    )
    result: pa.Table = plan.to_table(use_threads=use_threads)
    return result
