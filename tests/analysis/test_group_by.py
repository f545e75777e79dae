"""tcreport._group_by.aggregate_by against pyarrow's own ``Table.group_by(...).aggregate(...)``.

The helper builds pyarrow's group-by plan itself (to leave ``pyarrow.dataset`` unimported), so
for every shape of aggregation the analysis uses -- one key or several, dictionary keys with
nulls, sums, min/max, counts, count_distinct, first, any, count_all, an option -- the table it
returns must be pyarrow's: same columns, names, types and rows.
"""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from tcreport._group_by import aggregate_by


def _table() -> pa.Table:
    names = pa.array(["b", "a", None, "b", "c", "a", "a", None]).dictionary_encode()
    return pa.table(
        {
            "name": names,
            "pid": pa.array([1, 2, 1, 1, 2, 2, 1, None], pa.int64()),
            "dur": pa.array([5, 3, 7, None, 1, 2, 9, 4], pa.int64()),
            "tc": pa.array([True, False, None, True, False, True, True, False]),
            "rule": pa.array([0, 1, 2, 0, 1, 1, 1, 2], pa.int32()),
        }
    )


AGGREGATIONS: list[tuple[object, list[tuple[object, ...]]]] = [
    ("name", [("dur", "sum")]),
    ("name", [("dur", "sum"), ("dur", "count"), ("dur", "min"), ("dur", "max")]),
    (["name", "pid"], [("dur", "sum"), ("tc", "any"), ("rule", "first")]),
    ("pid", [("name", "count_distinct"), ("dur", "hash_sum")]),
    (["name", "pid", "rule"], [([], "count_all")]),
    ("name", [("dur", "count", pc.CountOptions(mode="all"))]),
    ("rule", []),
]


@pytest.mark.parametrize(("keys", "aggregations"), AGGREGATIONS)
def test_the_same_table_as_pyarrows_group_by(
    keys: object, aggregations: list[tuple[object, ...]]
) -> None:
    t = _table()
    theirs = t.group_by(keys, use_threads=False).aggregate(aggregations)
    ours = aggregate_by(t, keys, aggregations, use_threads=False)  # type: ignore[arg-type]
    assert ours.schema == theirs.schema
    assert ours.equals(theirs)


def test_threaded_plans_give_the_same_groups() -> None:
    """``use_threads=True`` may order groups differently run to run: compared sorted."""
    t = pa.concat_tables([_table()] * 50)
    t = t.set_column(0, "name", t.column("name").cast(pa.string()))  # sortable
    keys, aggs = ["name", "pid"], [("dur", "sum"), ("dur", "count")]
    order = [("name", "ascending"), ("pid", "ascending")]
    theirs = t.group_by(keys).aggregate(aggs).sort_by(order)
    ours = aggregate_by(t, keys, aggs).sort_by(order)
    assert ours.equals(theirs)


def test_no_keys_is_pyarrows_whole_table_aggregate() -> None:
    t = _table()
    assert aggregate_by(t, [], [("dur", "sum")]).equals(t.group_by([]).aggregate([("dur", "sum")]))


def test_a_group_by_leaves_pyarrow_dataset_unimported() -> None:
    code = (
        "import sys, pyarrow as pa\n"
        "from tcreport._group_by import aggregate_by\n"
        "t = pa.table({'k': [1, 1, 2], 'v': [1, 2, 3]})\n"
        "assert aggregate_by(t, 'k', [('v', 'sum')]).num_rows == 2\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pyarrow.dataset', 'pyarrow._dataset', 'pyarrow.acero'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
