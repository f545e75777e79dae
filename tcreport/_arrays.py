"""Arrow columns as int64 numpy arrays: the one conversion the readers and the analysis share.

Nulls become ``fill`` (-1 by default: "no row", "no code"); a column that is one chunk without
nulls comes back as a read-only view of Arrow's buffer, with no copy.
"""

from __future__ import annotations

from typing import Generic, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def int64s(col: pa.Array | pa.ChunkedArray, fill: int = -1) -> np.ndarray:
    """The column as int64, nulls as ``fill`` (always a new array)."""
    return np.asarray(pc.fill_null(col, fill).to_numpy(zero_copy_only=False), dtype=np.int64)


def int64_view(col: pa.Array | pa.ChunkedArray, fill: int = -1) -> np.ndarray:
    """The column as int64: a read-only view when it is one chunk without nulls, else a copy."""
    if isinstance(col, pa.ChunkedArray) and col.num_chunks == 1:
        col = col.chunk(0)
    if isinstance(col, pa.Array) and col.null_count == 0:
        return np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.int64)
    return int64s(col, fill)


#: Rows per ``bincount`` call in :func:`exact_sums`, when there are at most _FEW_SUMS sums.
_SUM_SLICE = 1 << 20
_FEW_SUMS = 1 << 17


def _slice_sums(index: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    if weights.size == 0 or int(weights.max()) < (1 << 53) // weights.size:
        return np.bincount(index, weights=weights, minlength=size).astype(np.int64)
    lo = np.bincount(index, weights=weights & 0xFFFFFFFF, minlength=size).astype(np.int64)
    hi = np.bincount(index, weights=weights >> 32, minlength=size).astype(np.int64)
    result: np.ndarray = (hi << 32) + lo
    return result


def sum_slice(rows: int, sums: int) -> int:
    """Rows per slice for a loop that adds each slice's ``sums`` totals (``exact_sums``,
    ``bincount``) into running ones: a million when the sums are few, else every row at once.
    Each slice's sums are as long as the totals, so slicing millions of sums (a hostile trace
    with a stream per launch) would cost slices x sums."""
    return _SUM_SLICE if sums <= _FEW_SUMS else max(rows, 1)


def exact_sums(index: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    """Exact int64 sums of non-negative int64 ``weights`` per ``index`` (``bincount``'s).
    ``bincount`` adds in float64, exact while every sum stays below 2**53 (104 days of ns), which
    a bound on the largest weight proves cheaply; otherwise the high and low 32 bits are summed
    apart, each exactly. A million rows at a time when the sums are few: ``bincount`` copies its
    index to intp and its weights to float64, which on millions of rows are tens of MiB each, and
    sums of exact slice sums are the same sums (many sums, one per op, are summed in one go: each
    slice would cost an output as large as the input)."""
    step = sum_slice(weights.size, size)
    if weights.size <= step:
        return _slice_sums(index, weights, size)
    total = np.zeros(size, np.int64)
    for a in range(0, weights.size, step):
        part = _slice_sums(index[a : a + step], weights[a : a + step], size)
        if part.size > total.size:  # an index past ``size``, as bincount allows
            total = np.concatenate([total, np.zeros(part.size - total.size, np.int64)])
        total[: part.size] += part
    return total


_T = TypeVar("_T")


class Handoff(Generic[_T]):
    """A big value handed to a callee that must hold its only reference, so the callee can free
    it midway (a few hundred MiB of arrays on a big export): the caller wraps it and drops its
    own name for it; the callee :meth:`take`s it, once. An argument passed plainly stays alive
    in the caller's frame until the call returns."""

    def __init__(self, value: _T) -> None:
        self._held = [value]

    def take(self) -> _T:
        return self._held.pop()
