"""Columns that hold one value on every row, built over buffers the tables of a run share.

A multi-million-row export fills many columns with one value: ``calls`` is 1 on every kernel,
copy and op row, ``iteration`` 0 until the analysis slices the run, and a run without shapes or
dtypes (or Tensor Core counters) has columns that are null on every row. Built one by one, each
is its own buffer of 4 or 8 bytes a row (~200 MiB on the 3.6 M-kernel, 5.3 M-op nsys export,
kept through the whole analysis). Arrow buffers are immutable, so every such column of a run can
be a view of one buffer instead: zeros (a validity bitmap of zeros is "all null", offsets of
zeros are empty strings) and ones. The zeros come from ``calloc``, whose pages the kernel maps
only when written, and they never are: they cost no resident memory at all.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from tcreport.schema import TableKind, schema_for


class Constants:
    """Shared all-zero, all-one and all-null columns of up to ``rows`` rows."""

    def __init__(self, rows: int) -> None:
        self.rows = max(rows, 0)
        # int64 per row, plus one: string offsets are rows + 1 int32s; a bitmap is smaller
        self._zeros = pa.py_buffer(np.zeros(self.rows + 1, np.int64))
        self._ones: pa.Buffer | None = None

    def _zero(self, n: int, width: int) -> pa.Buffer:
        if n > self.rows:
            raise ValueError(f"{n} rows, more than the {self.rows} these constants hold")
        return self._zeros.slice(0, max(n + 1, 1) * width)

    def zeros(self, n: int, type_: pa.DataType) -> pa.Array:
        """``n`` zeros (no nulls) of a fixed-width integer type."""
        return pa.Array.from_buffers(type_, n, [None, self._zero(n, type_.bit_width // 8)])

    def ones_int64(self, n: int) -> pa.Array:
        """``n`` int64 ones (no nulls); written once, at the first call, for ``rows`` rows."""
        if n > self.rows:
            raise ValueError(f"{n} rows, more than the {self.rows} these constants hold")
        if self._ones is None:
            self._ones = pa.py_buffer(np.ones(self.rows, np.int64))
        return pa.Array.from_buffers(pa.int64(), n, [None, self._ones.slice(0, n * 8)])

    def nulls(self, n: int, type_: pa.DataType) -> pa.Array:
        """``n`` nulls of ``type_``: a fixed-width type, a string, or a dictionary of those."""
        if pa.types.is_dictionary(type_):
            indices = self.nulls(n, type_.index_type)
            return pa.DictionaryArray.from_arrays(indices, pa.array([], type_.value_type))
        zero = self._zero(n, 8)
        if pa.types.is_string(type_):
            buffers = [zero, zero, pa.py_buffer(b"")]
        elif pa.types.is_boolean(type_) or pa.types.is_integer(type_):
            buffers = [zero, zero]
        else:
            return pa.nulls(n, type_)
        return pa.Array.from_buffers(type_, n, buffers, null_count=n)


def shared(table: pa.Table, kind: TableKind, consts: Constants) -> pa.Table:
    """``table`` with ``calls`` (1) and ``iteration`` (0) where it lacks them, its all-null
    columns and every optional column of ``kind`` it lacks as shared constants, ready for
    :func:`tcreport.schema.conform` (which keeps a column of the right type as it is)."""
    out: dict[str, pa.Array | pa.ChunkedArray] = {}
    n = table.num_rows
    for field in schema_for(kind):
        if field.name in table.column_names:
            col = table.column(field.name)
            if col.null_count == n and n and col.type == field.type:
                col = consts.nulls(n, field.type)
            out[field.name] = col
        elif field.name == "calls":
            out[field.name] = consts.ones_int64(n)
        elif field.name == "iteration":
            out[field.name] = consts.zeros(n, field.type)
        elif field.nullable:
            out[field.name] = consts.nulls(n, field.type)
    return pa.table(out)
