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
