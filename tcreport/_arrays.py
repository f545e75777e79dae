"""Arrow columns as int64 numpy arrays: the one conversion the readers and the analysis share.

Nulls become ``fill`` (-1 by default: "no row", "no code"); a column that is one chunk without
nulls comes back as a read-only view of Arrow's buffer, with no copy.
"""

from __future__ import annotations

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
