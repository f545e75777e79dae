"""Raw argument values (``msgspec.Raw``) of the msgspec parser as columns, each distinct text
decoded once.

``Input Dims``, ``Input type``, ``Concrete Inputs``, ``grid`` and ``block`` repeat: a few thousand
distinct texts over 190,000 ops, a few dozen triples over 70,000 kernels of the grown V100 trace.
Decoding each in place made Python lists (and ints) per event; kept raw, the texts of a piece
become one binary column whose dictionary encoding gives the distinct ones, each converted once
per file (the memo), and a take spreads the result to the rows. The conversions are the ones
the ``json`` parser applies value by value, and none depends on a value's neighbours, so both
parsers give the same columns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa

from tcreport.ingest.kineto import columns as col
from tcreport.ingest.kineto.structs import NO_RAW

_ANY = msgspec.json.Decoder()


def _distinct(raws: list[msgspec.Raw]) -> pa.DictionaryArray:
    """The raw texts as one dictionary-encoded binary column (an absent value is empty text).

    Built from their lengths and one join of them (both C loops over the buffers), not a bytes
    object per value: a third of the time on the 567,000 raw op arguments of the x8 trace."""
    n = len(raws)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(np.fromiter(map(len, raws), np.int64, n), out=offsets[1:])
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(raws))]
    return pa.Array.from_buffers(pa.large_binary(), n, buffers).dictionary_encode()


def texts(
    raws: list[msgspec.Raw], memo: dict[bytes, str | None], convert: Callable[[Any], str | None]
) -> pa.Array:
    """``convert`` of each raw JSON value as a string column, decoding each distinct text once
    (ops repeat: a few thousand distinct texts over 190,000 ops); Arrow finds the distinct ones."""
    if raws[0] is NO_RAW and raws.count(NO_RAW) == len(raws):  # a key the piece lacks
        return pa.nulls(len(raws), pa.string())  # (``Concrete Inputs`` before torch 2.1)
    keys = _distinct(raws)
    texts: list[str | None] = []
    for key in keys.dictionary.to_pylist():
        if key not in memo:
            memo[key] = convert(_ANY.decode(key)) if key else None
        texts.append(memo[key])
    return pa.array(texts, pa.string()).take(keys.indices)


def triples(raws: list[msgspec.Raw], memo: dict[bytes, Any]) -> tuple[pa.Array, pa.Array, pa.Array]:
    """The x, y, z columns of raw ``grid``/``block`` values: each distinct text is decoded once
    and :func:`columns.dims_columns` converts the distinct values (a value's result does not
    depend on its neighbours), spread to the rows by Arrow's dictionary encoding. Decoding the
    triples in place made two lists and six ints per kernel."""
    keys = _distinct(raws)
    values = []
    for key in keys.dictionary.to_pylist():
        if key not in memo:
            memo[key] = _ANY.decode(key) if key else None
        values.append(memo[key])
    x, y, z = (axis.take(keys.indices) for axis in col.dims_columns(values))
    return x, y, z
