"""The canonical tables: conform() casts and fills, validate() refuses anything else."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tcreport import schema
from tcreport.errors import SchemaError
from tcreport.model import Gpu, IterationInfo, ReportedFigures, RunMeta, SourceFinding, SourceFormat


def test_conform_fills_optional_columns_and_dictionary_encodes_names() -> None:
    t = schema.conform(
        {"name": ["a", "b", "a"], "duration_ns": [1, 2, 3], "calls": [1, 1, 1]},
        schema.TableKind.KERNELS,
    )
    assert t.schema.field("name").type == pa.dictionary(pa.int32(), pa.string())
    assert t.column("uses_tc").null_count == 3
    assert t.schema.field("duration_ns").metadata == {b"unit": b"ns"}
    assert schema.table_version(t) == schema.SCHEMA_VERSION
    schema.validate(t, schema.TableKind.KERNELS)


def test_conform_refuses_missing_required_column() -> None:
    with pytest.raises(SchemaError, match="duration_ns"):
        schema.conform({"name": ["a"], "calls": [1]}, schema.TableKind.KERNELS)


def test_conform_refuses_nulls_in_required_column() -> None:
    with pytest.raises(SchemaError, match="null"):
        schema.conform(
            {"name": ["a", None], "duration_ns": [1, 2], "calls": [1, 1]}, schema.TableKind.KERNELS
        )


def test_conform_refuses_uncastable_values() -> None:
    with pytest.raises(SchemaError, match="duration_ns"):
        schema.conform(
            {"name": ["a"], "duration_ns": ["soon"], "calls": [1]}, schema.TableKind.KERNELS
        )


def test_validate_rejects_non_canonical_table() -> None:
    with pytest.raises(SchemaError):
        schema.validate(pa.table({"name": ["a"]}), schema.TableKind.KERNELS)


@pytest.mark.parametrize("kind", list(schema.TableKind))
def test_empty_tables_are_canonical(kind: schema.TableKind) -> None:
    schema.validate(schema.empty(kind), kind)


def test_run_meta_json_round_trip() -> None:
    meta = RunMeta(
        format=SourceFormat.DLPROF_CSV,
        path="x",
        profiler="DLProf v1.8.0",
        gpus=(Gpu(0, "GPU", "7.5", 40),),
        iterations=IterationInfo(total=3, start=1, stop=2, aggregated=2, mean_ns=1.5),
        reported=ReportedFigures(wall_ns=10, gpu_kernel_ns=5),
        source_findings=(SourceFinding("amp_detector", "p", "r"),),
        files=("a.csv",),
    )
    assert RunMeta.from_json(meta.to_json()) == meta


def test_compact_keeps_values_and_drops_unused_dictionary_entries() -> None:
    shared = pa.array(["op_1", "op_2", "op_3", "op_4"])
    col = pa.DictionaryArray.from_arrays(pa.array([3, None, 1, 3], pa.int32()), shared)
    whole = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 3], pa.int32()), shared)
    table = pa.table({"op_id": col, "all": whole, "n": [1, 2, 3, 4]})
    out = schema.compact(table)
    assert out.to_pylist() == table.to_pylist()
    assert out.schema == table.schema
    assert out.column("op_id").chunk(0).dictionary.to_pylist() == ["op_2", "op_4"]
    assert out.column("op_id").chunk(0).indices.to_pylist() == [1, None, 0, 1]
    kept, before = out.column("all").chunk(0), table.column("all").chunk(0)  # all used: untouched
    assert kept.indices.buffers()[1].address == before.indices.buffers()[1].address


def test_compact_all_null_and_empty_columns() -> None:
    d = pa.DictionaryArray.from_arrays(pa.nulls(3, pa.int32()), pa.array(["a", "b"]))
    out = schema.compact(pa.table({"x": d}))
    assert out.column("x").to_pylist() == [None, None, None]
    assert len(out.column("x").chunk(0).dictionary) == 0
    empty = schema.empty(schema.TableKind.KERNELS)
    assert schema.compact(empty).equals(empty)
