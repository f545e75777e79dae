"""The canonical Arrow tables every reader produces and everything after ingest consumes.

A DLProf CSV from 2020 and an Nsight Systems export from 2026 meet here: same columns, same units
(int64 nanoseconds, named in field metadata), names dictionary-encoded so that a trace with millions
of launches of a few hundred kernels stays small. Readers build plain columns and call
:func:`conform`, which casts, dictionary-encodes, fills absent optional columns with nulls and stamps
the schema version; :func:`validate` is the cheap check that a table really is canonical.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.errors import SchemaError

SCHEMA_VERSION = "2"  # 2: ops.concrete_inputs (FLOPs of convolutions, causal attention) and
#                       memory.launch_ns (copies join their step by launch, as kernels do)
_META_VERSION = b"tcreport.schema_version"
_META_TABLE = b"tcreport.table"

NAME = pa.dictionary(pa.int32(), pa.string())
NS = {b"unit": b"ns"}
BYTES = {b"unit": b"bytes"}
#: Where a timed GPU row may start, in ns on its trace clock: the step breakdown and the timeline
#: subtract positions in int64, which holds any difference inside [-2**60, 2**62) plus one
#: interval (< 2**50 ns, 13 days). An epoch clock stays inside until the year 2116; a start
#: outside is damage (an INT64 sentinel), and readers drop such rows with a note.
POSITIONS_NS = (-(2**60), 2**62)
#: No single GPU activity, op or range lasts 2**50 ns (13 days): one that does is damage (an end
#: written as INT64_MAX), and summing it would wrap int64 totals negative. Readers drop it.
MAX_INTERVAL_NS = 2**50


class TableKind(StrEnum):
    KERNELS = "kernels"
    MEMORY = "memory"
    OPS = "ops"
    ITERATIONS = "iterations"
    RANGES = "ranges"
    COLLECTIVES = "collectives"


class MemoryKind(StrEnum):
    """Closed set of memory operations; readers map their profiler's labels onto it."""

    HTOD = "memcpy HtoD"
    DTOH = "memcpy DtoH"
    DTOD = "memcpy DtoD"
    HTOH = "memcpy HtoH"
    PEER = "memcpy PtoP"
    MEMCPY_OTHER = "memcpy"
    MEMSET = "memset"


def _f(
    name: str, typ: pa.DataType, nullable: bool = True, meta: dict[bytes, bytes] | None = None
) -> pa.Field:
    return pa.field(name, typ, nullable=nullable, metadata=meta)


_LAUNCH_GEOMETRY = [
    _f(n, pa.int32()) for n in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")
]

#: One row per kernel launch when the input has launches (``calls`` = 1, ``start_ns`` set), else one
#: row per aggregated kernel (``start_ns`` null, ``duration_ns`` the total over ``calls``).
KERNELS = pa.schema(
    [
        _f("name", NAME, nullable=False),  # short name as the profiler shows it
        _f("long_name", NAME),  # demangled signature when the input has it
        _f("device_id", pa.int32()),
        _f("process_id", pa.int64()),
        _f("stream_id", pa.int64()),
        _f("correlation_id", pa.int64()),
        _f("start_ns", pa.int64(), meta=NS),  # GPU start
        _f("duration_ns", pa.int64(), nullable=False, meta=NS),
        _f("calls", pa.int64(), nullable=False),
        _f("launch_ns", pa.int64(), meta=NS),  # CPU time of the launching API call
        _f("iteration", pa.int32()),
        _f("op_id", NAME),  # joins ops.op_id
        *_LAUNCH_GEOMETRY,
        _f(
            "profiler_uses_tc", pa.bool_()
        ),  # the input's own verdict (DLProf "Uses TC"), kept as is
        _f("counter_uses_tc", pa.bool_()),  # measured: Nsight Compute tensor-pipe counters > 0
        _f("uses_tc", pa.bool_()),  # tcreport's verdict: filled by analysis, null = unknown
        _f("tc_rule", NAME),  # which rule decided uses_tc
    ]
)

MEMORY = pa.schema(
    [
        _f("kind", NAME, nullable=False),  # a MemoryKind value
        _f("name", NAME),
        _f("device_id", pa.int32()),
        _f("process_id", pa.int64()),
        _f("stream_id", pa.int64()),
        _f("correlation_id", pa.int64()),
        _f("start_ns", pa.int64(), meta=NS),
        _f("duration_ns", pa.int64(), nullable=False, meta=NS),
        _f("calls", pa.int64(), nullable=False),
        _f("bytes", pa.int64(), meta=BYTES),
        _f("iteration", pa.int32()),
        _f("op_id", NAME),
        _f("launch_ns", pa.int64(), meta=NS),  # CPU time of the launching API call
    ]
)

#: One row per op instance when the input has instances (``start_ns`` set), else one row per op
#: aggregated over the profiler's iteration range, with ``calls``.
OPS = pa.schema(
    [
        _f("op_id", NAME, nullable=False),  # stable key within a run; kernels.op_id points here
        _f("name", NAME, nullable=False),  # full name / scope path as the profiler wrote it
        _f("type", NAME),  # op type: conv2d, linear, aten::mm, MatMul, ...
        _f("scope", NAME),  # module / layer path the op ran in, when known
        _f("direction", NAME),  # fprop / bprop
        _f("dtype", NAME),  # main data type, e.g. float32
        _f("input_shapes", pa.string()),
        _f("output_shapes", pa.string()),
        # the scalar arguments the profiler recorded, as JSON text (Kineto ``Concrete Inputs``,
        # e.g. ``["","","","[2, 2]","[3, 3]","[1, 1]","False","[0, 0]","1"]``): a convolution's
        # stride/padding/dilation/groups, an attention's is_causal
        _f("concrete_inputs", pa.string()),
        _f("device_id", pa.int32()),
        _f("process_id", pa.int64()),
        _f("thread_id", pa.int64()),
        _f("start_ns", pa.int64(), meta=NS),
        _f("iteration", pa.int32()),
        _f(
            "calls", pa.int64()
        ),  # null when the input does not count calls (DLProf TC report alone)
        _f("cpu_ns", pa.int64(), meta=NS),  # range / CPU time of the op
        _f("gpu_ns", pa.int64(), meta=NS),  # compute-kernel GPU time attributed to the op
        _f("gpu_total_ns", pa.int64(), meta=NS),  # as the profiler reports it, memory ops included
        _f("kernel_calls", pa.int64()),
        _f("profiler_tc_eligible", pa.bool_()),
        _f("profiler_uses_tc", pa.bool_()),
        _f("tc_eligible", pa.bool_()),  # filled by analysis
        _f("uses_tc", pa.bool_()),  # filled by analysis
    ]
)

ITERATIONS = pa.schema(
    [
        _f("iteration", pa.int32(), nullable=False),
        _f("start_ns", pa.int64(), nullable=False, meta=NS),
        _f("end_ns", pa.int64(), nullable=False, meta=NS),
    ]
)

#: Annotation ranges that are not ops: NVTX user ranges, ``ProfilerStep#N``, ``train_step``. The
#: iteration analysis looks for key nodes here as well as in ops.
RANGES = pa.schema(
    [
        _f("name", NAME, nullable=False),
        _f("domain", NAME),
        _f("process_id", pa.int64()),
        _f("thread_id", pa.int64()),
        _f("start_ns", pa.int64(), nullable=False, meta=NS),
        _f("end_ns", pa.int64(), nullable=False, meta=NS),
        _f("depth", pa.int32()),  # nesting level on its thread, 0 = outermost
    ]
)

#: One row per collective kernel launch whose message the profiler recorded (PyTorch's NCCL kernel
#: args ``Collective name``, ``In/Out msg nelems``, ``dtype``, ``Group size``): what the
#: collective bandwidth is computed from. A trace without such args has no table (``None``).
COLLECTIVES = pa.schema(
    [
        _f("collective", NAME, nullable=False),  # as the profiler names it: "allreduce", ...
        _f("device_id", pa.int32()),
        _f("process_id", pa.int64()),
        _f("stream_id", pa.int64()),
        _f("correlation_id", pa.int64()),
        _f("start_ns", pa.int64(), meta=NS),
        _f("duration_ns", pa.int64(), nullable=False, meta=NS),
        _f("iteration", pa.int32()),
        _f("dtype", NAME),  # element type as the profiler names it: "Float", "BFloat16", ...
        _f("in_nelems", pa.int64()),  # elements sent by this rank
        _f("out_nelems", pa.int64()),  # elements received by this rank
        _f("group_size", pa.int32()),  # ranks in the process group
        _f("process_group", NAME),
    ]
)

SCHEMAS: Mapping[TableKind, pa.Schema] = {
    TableKind.KERNELS: KERNELS,
    TableKind.MEMORY: MEMORY,
    TableKind.OPS: OPS,
    TableKind.ITERATIONS: ITERATIONS,
    TableKind.RANGES: RANGES,
    TableKind.COLLECTIVES: COLLECTIVES,
}


def schema_for(kind: TableKind) -> pa.Schema:
    """The canonical schema stamped with its table name and the schema version."""
    return SCHEMAS[kind].with_metadata(
        {_META_VERSION: SCHEMA_VERSION.encode(), _META_TABLE: kind.value.encode()}
    )


def _cast_column(
    col: pa.ChunkedArray | pa.Array, field: pa.Field, kind: TableKind
) -> pa.ChunkedArray:
    if isinstance(col, pa.Array):
        col = pa.chunked_array([col], type=col.type)
    target = field.type
    if col.type == target:
        return col
    try:
        if pa.types.is_dictionary(target):
            if pa.types.is_dictionary(col.type) or not pa.types.is_string(col.type):
                col = col.cast(pa.string())
            return pc.dictionary_encode(col).cast(target)
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        return col.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise SchemaError(
            f"{kind.value}.{field.name}: cannot convert {col.type} to {target}: {exc}"
        ) from exc


def conform(
    data: pa.Table | Mapping[str, Any],
    kind: TableKind,
) -> pa.Table:
    """Make a reader's columns canonical.

    Accepts a table or a mapping of column name to array/list. Unknown columns are dropped, absent
    optional columns become nulls, types are cast (strings dictionary-encoded). A missing
    non-nullable column is a reader bug and raises :class:`SchemaError`.
    """
    table = data if isinstance(data, pa.Table) else _table_from_mapping(data)
    schema = schema_for(kind)
    n = table.num_rows
    columns: list[pa.ChunkedArray] = []
    for field in schema:
        if field.name in table.column_names:
            col = _cast_column(table.column(field.name), field, kind)
            if not field.nullable and col.null_count:
                raise SchemaError(
                    f"{kind.value}.{field.name}: {col.null_count} null values in a required column"
                )
        else:
            if not field.nullable:
                raise SchemaError(f"{kind.value}: required column {field.name!r} is missing")
            col = pa.chunked_array([pa.nulls(n, type=field.type)], type=field.type)
        columns.append(col)
    return pa.Table.from_arrays(columns, schema=schema)


def _table_from_mapping(data: Mapping[str, Any]) -> pa.Table:
    arrays: dict[str, pa.Array | pa.ChunkedArray] = {}
    for name, values in data.items():
        if isinstance(values, pa.Array | pa.ChunkedArray):
            arrays[name] = values
        else:
            arrays[name] = pa.array(values)
    return pa.table(arrays)


def empty(kind: TableKind) -> pa.Table:
    return schema_for(kind).empty_table()


def validate(table: pa.Table, kind: TableKind) -> None:
    """Raise :class:`SchemaError` unless ``table`` is exactly canonical for ``kind``."""
    expected = schema_for(kind)
    if not table.schema.equals(expected, check_metadata=False):
        raise SchemaError(
            f"{kind.value}: schema differs from canonical v{SCHEMA_VERSION}: "
            + _schema_difference(table.schema, expected)
        )
    version = (table.schema.metadata or {}).get(_META_VERSION)
    if version is not None and version.decode() != SCHEMA_VERSION:
        raise SchemaError(
            f"{kind.value}: schema version {version.decode()}, this tcreport reads {SCHEMA_VERSION}"
        )
    for field in expected:
        if not field.nullable and table.column(field.name).null_count:
            raise SchemaError(f"{kind.value}.{field.name}: nulls in a required column")


def _schema_difference(got: pa.Schema, expected: pa.Schema, limit: int = 4) -> str:
    """The first few differences, on one line (the error line names them; a dump of both
    schemas ran to 30 lines)."""
    have = {f.name: f for f in got}
    want = {f.name: f for f in expected}
    parts = [f"missing {n!r}" for n in want if n not in have]
    parts += [f"unexpected {n!r}" for n in have if n not in want]
    for name, field in want.items():
        other = have.get(name)
        if other is None:
            continue
        if other.type != field.type:
            parts.append(f"{name!r} is {other.type}, expected {field.type}")
        elif other.nullable != field.nullable:
            parts.append(f"{name!r} nullable={other.nullable}, expected {field.nullable}")
    if not parts and got.names != expected.names:
        parts.append("columns in another order")
    more = f" (+{len(parts) - limit} more)" if len(parts) > limit else ""
    return "; ".join(parts[:limit]) + more if parts else "field metadata differs"


def compact(table: pa.Table) -> pa.Table:
    """The table with every dictionary holding only the values its rows use.

    Readers may give several tables one dictionary (the ops' ``op_id`` values, shared by the
    kernels and memory tables so analysis joins on indices); written to Parquet as it is, each
    file would carry every op id. Integer work only: a count per dictionary entry, a remap.
    """
    columns = []
    for col in table.columns:
        if pa.types.is_dictionary(col.type):
            col = pa.chunked_array([_compact_chunk(c) for c in col.chunks], type=col.type)
        columns.append(col)
    return pa.Table.from_arrays(columns, schema=table.schema)


def _compact_chunk(chunk: pa.DictionaryArray) -> pa.DictionaryArray:
    size = len(chunk.dictionary)
    idx = np.asarray(pc.fill_null(chunk.indices, 0).to_numpy(zero_copy_only=False), np.int64)
    valid = np.asarray(pc.is_valid(chunk.indices).to_numpy(zero_copy_only=False), bool)
    used = np.bincount(idx[valid], minlength=size) > 0
    if used.all():
        return chunk
    remap = (np.cumsum(used) - 1).astype(chunk.type.index_type.to_pandas_dtype())
    indices = pa.array(remap[idx], type=chunk.type.index_type, mask=~valid)
    return pa.DictionaryArray.from_arrays(indices, chunk.dictionary.filter(pa.array(used)))


def table_version(table: pa.Table) -> str | None:
    raw = (table.schema.metadata or {}).get(_META_VERSION)
    return raw.decode() if raw is not None else None
