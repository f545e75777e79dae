"""Dictionary columns as integer codes: how analysis joins and groups millions of rows.

Every name column of the canonical tables is dictionary-encoded, so a question about names
("is this an eligible op type?", "which kernel family is this?", "rows whose name is the key
node") is asked once per distinct value and spread to the rows by their indices, and a join or
a grouping on names is a join or grouping on int codes. Casting a dictionary column to strings
instead builds one string per row: on a 3.6 M-kernel, 5.3 M-op trace that was most of the
analysis time and a GiB of memory.

Codes are int32, as the canonical dictionaries' indices are: a code per row of a 5-million-row
table is 20 MiB instead of 40, and where a column has no null it is Arrow's own index buffer,
not a copy. Callers that pack codes into a wider key widen them first (:func:`combine`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: Below this many values a dictionary is de-duplicated before use (a hand-built dictionary may
#: repeat a value); above it (op ids) the readers' and ``conform``'s distinct dictionaries are
#: trusted, since hashing millions of strings is what this module exists to avoid.
_DEDUPE_MAX = 1 << 20


@dataclass(frozen=True)
class Codes:
    """A dictionary column as one code per row (-1 = null) into ``values``."""

    codes: np.ndarray  # int32 (int64 for a dictionary with 64-bit indices); may be read-only
    values: pa.Array  # string (or the dictionary's value type), distinct below _DEDUPE_MAX

    def valid(self) -> np.ndarray:
        result: np.ndarray = self.codes >= 0
        return result

    def take(self, code_array: np.ndarray) -> list[str | None]:
        """Values of a (small) array of codes as Python objects; -1 gives None."""
        if not len(code_array):
            return []
        idx = pa.array(code_array, mask=code_array < 0)
        result: list[str | None] = self.values.take(idx).to_pylist()
        return result


def _single(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        if col.num_chunks == 1:
            return col.chunk(0)
        if col.num_chunks == 0:
            return pa.array([], col.type)
        return col.combine_chunks()  # unifies the chunks' dictionaries
    return col


def _indices(indices: pa.Array) -> np.ndarray:
    """Dictionary indices as numpy codes, nulls as -1: int32 (int64 for 64-bit indices), and a
    read-only view of Arrow's buffer when there is no null."""
    wide = pa.types.is_int64(indices.type) or pa.types.is_uint32(indices.type)
    dtype = np.int64 if wide or pa.types.is_uint64(indices.type) else np.int32
    if indices.null_count:
        indices = pc.fill_null(indices, -1)
    return np.asarray(indices.to_numpy(zero_copy_only=False), dtype)


#: :func:`_repeats` of the dictionaries seen last, by their buffers: the readers' op_id
#: dictionary (one value per op, shared by the ops, kernels and memory tables) is coded a dozen
#: times per analysis, and hashing its strings each time was most of the analysis of a
#: 190,000-op Kineto trace. Each entry holds its array, so the buffers its key names cannot be
#: freed (and their addresses reused) while it is cached.
#: Small dictionaries (names: a few hundred values) are hashed again, at no cost worth a slot.
_SEEN: dict[tuple[object, ...], tuple[pa.Array, tuple[np.ndarray, pa.Array] | None]] = {}
_SEEN_MAX = 4
_SEEN_MIN = 1 << 12
_SEEN_LOCK = threading.Lock()  # notebook users may analyse in threads


def _repeats(values: pa.Array) -> tuple[np.ndarray, pa.Array] | None:
    """None when ``values`` are distinct, else (each value's code, the distinct values)."""
    if len(values) < _SEEN_MIN:
        return _hash_repeats(values)
    key = (
        str(values.type),
        len(values),
        values.offset,
        tuple(None if b is None else (b.address, b.size) for b in values.buffers()),
    )
    with _SEEN_LOCK:
        seen = _SEEN.pop(key, None)  # re-inserted: the oldest entry is the least recently used
    found = _hash_repeats(values) if seen is None else seen[1]
    with _SEEN_LOCK:
        while len(_SEEN) >= _SEEN_MAX:
            del _SEEN[next(iter(_SEEN))]
        _SEEN[key] = (values, found)
    return found


def _hash_repeats(values: pa.Array) -> tuple[np.ndarray, pa.Array] | None:
    distinct = pc.dictionary_encode(values)  # a null value gets a null index: -1 in codes
    if len(distinct.dictionary) < len(values):
        return _indices(distinct.indices), distinct.dictionary
    return None


def codes(col: pa.ChunkedArray | pa.Array) -> Codes:
    """Integer codes of a column: a dictionary column's indices, any other column encoded."""
    arr = _single(col)
    if not pa.types.is_dictionary(arr.type):
        if len(arr) and arr.null_count == len(arr):  # an unrecorded column: nothing to hash
            return Codes(np.full(len(arr), -1, np.int32), pa.array([], arr.type))
        arr = pc.dictionary_encode(arr)
    indices = arr.indices
    values = arr.dictionary
    idx = _indices(indices)
    if len(values) <= _DEDUPE_MAX:
        repeats = _repeats(values)
        if repeats is not None:
            remap, distinct = repeats
            return Codes(np.where(idx >= 0, remap[np.maximum(idx, 0)], -1), distinct)
    if values.null_count:  # a null inside the dictionary is a null row
        null_value = np.asarray(pc.is_null(values).to_numpy(zero_copy_only=False), dtype=bool)
        idx = np.where((idx >= 0) & ~null_value[np.maximum(idx, 0)], idx, -1)
    return Codes(idx, values)


def index_column(col: pa.ChunkedArray | pa.Array) -> tuple[pa.Array, pa.Array]:
    """A column as (``values``, one int32 index per row into them, null where the row is): what
    :func:`codes` gives, as Arrow arrays to group on. Where the column already is that (one
    chunk of a dictionary with int32 indices, no null and no repeat in the dictionary) these are
    its own buffers; a null row needs no -1 copy."""
    arr = col.chunk(0) if isinstance(col, pa.ChunkedArray) and col.num_chunks == 1 else col
    if (
        isinstance(arr, pa.DictionaryArray)
        and pa.types.is_int32(arr.type.index_type)
        and arr.dictionary.null_count == 0
        and (
            len(arr.dictionary) > _DEDUPE_MAX
            or len(pc.unique(arr.dictionary)) == len(arr.dictionary)
        )
    ):
        return arr.dictionary, arr.indices
    c = codes(col)
    return c.values, pa.array(c.codes.astype(np.int32, copy=False), mask=c.codes < 0)


def per_value(
    col: pa.ChunkedArray | pa.Array, fn: Callable[[pa.Array], pa.Array]
) -> pa.ChunkedArray:
    """``fn`` (a vector function of the values) applied to each distinct value once and spread to
    the rows: null rows give null. Works on plain columns too (then ``fn`` sees every row)."""
    if isinstance(col, pa.Array):
        col = pa.chunked_array([col])
    out: list[pa.Array] = []
    for chunk in col.chunks:
        if pa.types.is_dictionary(chunk.type):
            lookup = fn(chunk.dictionary)
            out.append(lookup.take(chunk.indices))
        else:
            out.append(fn(chunk))
    if not out:
        return pa.chunked_array([], fn(pa.array([], pa.string())).type)
    return pa.chunked_array(out, out[0].type)


def equals(col: pa.ChunkedArray | pa.Array, value: str) -> pa.ChunkedArray:
    """Rows whose value is ``value`` (null rows: False)."""
    return pc.fill_null(per_value(col, lambda d: pc.equal(d, value)), False)


def matches(
    col: pa.ChunkedArray | pa.Array, pattern: str, ignore_case: bool = False
) -> pa.ChunkedArray:
    """Rows whose value matches the regular expression (null rows: False)."""
    return pc.fill_null(
        per_value(
            col,
            lambda d: pc.match_substring_regex(d, pattern, ignore_case=ignore_case),
        ),
        False,
    )


#: Rows per slice in :func:`value_counts`, when there are at most _FEW_VALUES values.
_COUNT_SLICE = 1 << 20
_FEW_VALUES = 1 << 17


def value_counts(c: Codes) -> np.ndarray:
    """Rows per value of ``c.values`` (null rows not counted). A slice at a time when the values
    are few: ``bincount`` copies its input to intp, and masking out the nulls first is two more
    copies, each as long as the column."""
    size = len(c.values)
    if c.codes.size <= _COUNT_SLICE or size > _FEW_VALUES:
        counts: np.ndarray = np.bincount(c.codes[c.codes >= 0], minlength=size)
        return counts
    total = np.zeros(size, np.int64)
    for a in range(0, c.codes.size, _COUNT_SLICE):
        part = c.codes[a : a + _COUNT_SLICE]
        total += np.bincount(part[part >= 0], minlength=size)
    return total


def _used(c: Codes) -> np.ndarray:
    """The codes that occur, ascending: counted (no sort, no copy of the rows) unless there are
    more values than rows (a filtered table keeps the whole dictionary)."""
    if len(c.values) > c.codes.size:
        used: np.ndarray = np.unique(c.codes[c.codes >= 0])
        return used
    return np.flatnonzero(value_counts(c))


def as_strings(col: pa.ChunkedArray | pa.Array) -> list[str]:
    """Distinct non-null values of a column, as Python strings (small: one per distinct value)."""
    c = codes(col)
    return [v for v in c.take(_used(c)) if v is not None]


def count_distinct(col: pa.ChunkedArray | pa.Array) -> int:
    return int(_used(codes(col)).size)


def _dense(a: np.ndarray) -> np.ndarray:
    """Codes 0..n-1 (int32) of ``a``'s distinct values, in order of first appearance (hashed)."""
    return _indices(pc.dictionary_encode(pa.array(a, pa.int64())).indices)


def combine(*cols: np.ndarray) -> np.ndarray:
    """One dense code per distinct tuple of values, numbered in order of first appearance:
    pairs are packed into one int64 and hashed, never compared as tuples.

    Values need not be codes: raw ids (a device, a stream) are packed as offsets from their
    column's lowest value, and a pair whose ranges do not fit in int64 together (a hostile
    stream id of 2**63 - 1) is packed from each column's dense codes instead. The codes are
    int32 (there are fewer distinct tuples than rows); the packing is done in one int64 array,
    in place, whatever the columns' own integer types."""
    key = np.asarray(cols[0])
    for col in cols[1:]:
        c = np.asarray(col)
        k_low, c_low = int(key.min(initial=0)), int(c.min(initial=0))
        k_width = int(key.max(initial=0)) - k_low + 1
        c_width = int(c.max(initial=0)) - c_low + 1
        if k_width * c_width >= 1 << 63:
            key, c = _dense(key), _dense(c)
            k_low = c_low = 0
            c_width = int(c.max(initial=0)) + 1
        packed = np.subtract(key, k_low, dtype=np.int64)  # (key - k_low) * c_width + c - c_low
        packed *= c_width
        packed -= c_low  # first: every partial sum stays in [0, k_width * c_width)
        packed += c
        key = _dense(packed)
        del packed  # before the next column's: one int64 array at a time
    if len(cols) == 1:
        key = _dense(key)
    return key


def first_rows(key: np.ndarray) -> np.ndarray:
    """Row of the first occurrence of each code of :func:`combine` (codes appear in order)."""
    if not len(key):
        return np.zeros(0, dtype=np.int64)
    seen = np.empty(len(key), key.dtype)  # the highest code before each row
    seen[0] = -1
    np.maximum.accumulate(key[:-1], out=seen[1:])
    return np.flatnonzero(key > seen)


@dataclass(frozen=True)
class Joint:
    """The ops' and the kernels' ``op_id`` columns as codes into one key space of ``size`` keys."""

    ops: np.ndarray  # per op row, -1: null
    other: np.ndarray  # per kernel (or memory) row, -1: null; an id no op has gets a key of its own
    size: int


def _same(a: pa.Array, b: pa.Array) -> bool:
    if a is b:
        return True
    if len(a) != len(b) or a.offset != b.offset or a.type != b.type:
        return False
    ab, bb = a.buffers(), b.buffers()
    if all(
        (x is None and y is None) or (x is not None and y is not None and x.address == y.address)
        for x, y in zip(ab, bb, strict=True)
    ):
        return True
    return bool(a.equals(b))


def joint(ops_col: pa.ChunkedArray | pa.Array, other_col: pa.ChunkedArray | pa.Array) -> Joint:
    """Codes for joining ``other.op_id`` to ``ops.op_id``.

    When both columns share one dictionary (the Nsight Systems and Kineto readers give the
    kernels, memory and ops tables the same one) the indices are the join: nothing is hashed.
    Otherwise both sides' values are encoded together, once, so a repeated value still joins.
    """
    o = codes(ops_col)
    k = codes(other_col)
    if _same(o.values, k.values):
        return Joint(o.codes, k.codes, len(o.values))
    both = pc.dictionary_encode(pa.concat_arrays([o.values, k.values.cast(o.values.type)]))
    unified = _indices(both.indices)
    to_o, to_k = unified[: len(o.values)], unified[len(o.values) :]
    ocodes = np.where(o.codes >= 0, to_o[np.maximum(o.codes, 0)], -1) if len(to_o) else o.codes
    kcodes = np.where(k.codes >= 0, to_k[np.maximum(k.codes, 0)], -1) if len(to_k) else k.codes
    return Joint(ocodes, kcodes, len(both.dictionary))
