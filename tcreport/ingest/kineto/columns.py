"""Arrow columns from raw Kineto JSON values, and the vocabularies that interpret them.

Values are validated in bulk: Arrow either converts a list in one go, or the slow path cleans it
value by value; a malformed value becomes a null, never an exception. Every function gives each
value the same result whatever its neighbours are, so a trace read in pieces (the msgspec path)
gets exactly the columns of one read whole (the json path).
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.ingest.common import counters
from tcreport.schema import MemoryKind

_INT64_MAX = 2**63 - 1
#: Floats above this cannot be whole int64 values we trust (2**63 is about 9.22e18).
_MAX_WHOLE_FLOAT = 9.0e18
#: |ts| above this (microseconds, year 2096 as epoch time) is corrupt; with a base time below
#: MAX_BASE_NS the nanosecond sum stays inside int64.
_MAX_US = 4.0e15
MAX_BASE_NS = 4 * 10**18

#: What Arrow raises for values it cannot convert; UnicodeEncodeError (a ValueError) comes from
#: lone surrogates, which JSON escapes such as "\ud800" legally produce.
_CONVERSION_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError)
_TRAILING_INT = re.compile(r"(-?\d+)\s*$")


def _clean_int(v: Any, parse_str: bool) -> int | None:
    t = type(v)
    if t is int:
        return v if -_INT64_MAX <= v <= _INT64_MAX else None
    if t is float:
        return int(v) if v.is_integer() and abs(v) <= _MAX_WHOLE_FLOAT else None
    if parse_str and t is str:  # the 2021 format writes tids as "25738" and "stream 7"
        m = _TRAILING_INT.search(v)
        return _clean_int(int(m.group(1)), False) if m and len(m.group(1)) < 20 else None
    return None


def _no_bools(values: list[Any]) -> list[Any]:
    """JSON ``true`` is not a number: Arrow would read it as 1 beside floats and as a bool list
    alone, so the same event would parse differently depending on its neighbours (and on which
    parser cut the trace into pieces). Booleans become None before Arrow sees them."""
    if bool not in set(map(type, values)):  # a C-level scan; nearly always no booleans
        return values
    return [None if type(v) is bool else v for v in values]


def _infer(values: list[Any]) -> pa.Array | None:
    try:
        return pa.array(values)
    except _CONVERSION_ERRORS:
        return None


def _inferred(values: list[Any]) -> tuple[list[Any], pa.Array | None]:
    """``values`` without booleans (:func:`_no_bools`) and the array Arrow infers from them
    (None: it refused them).

    Arrow refuses a boolean among integers or strings, so a list it reads as int64, null or
    string holds none and skips the scan for them (the usual integer columns); only floats
    (where Arrow takes ``true`` as 1.0), booleans and refusals pay it."""
    arr = _infer(values)
    if arr is not None and (
        arr.type == pa.int64() or pa.types.is_null(arr.type) or pa.types.is_string(arr.type)
    ):
        return values, arr
    clean = _no_bools(values)
    return (values, arr) if clean is values else (clean, _infer(clean))


def _in_range(arr: pa.Array, bound: float) -> pa.Array:
    """|arr| <= bound, with an integer bound for integer arrays: comparing int64 with a float
    bound casts to double, which Arrow refuses above 2**53 (and abs(INT64_MIN) wraps)."""
    b: int | float = int(bound) if pa.types.is_integer(arr.type) else bound
    return pc.and_(pc.greater_equal(arr, -b), pc.less_equal(arr, b))


def within(arr: pa.Array, lo: int, hi: int) -> bool:
    """Every non-null value of an integer column in ``[lo, hi]`` (one pass: the usual case,
    which then needs no masking)."""
    mm = pc.min_max(arr)
    low, high = mm["min"].as_py(), mm["max"].as_py()
    return low is None or (low >= lo and high <= hi)


def _bounded(arr: pa.Array, lo: int, hi: int) -> pa.Array:
    """Nulls outside ``[lo, hi]``; checked even at the default bounds, since INT64_MIN lies below
    ``-INT64_MAX``: a list of ints alone keeps it as int64 where, beside a float, Arrow refuses
    it and :func:`_clean_int` nulls it (a piece of the msgspec parser and the whole trace of the
    ``json`` one would then differ). One ``min_max`` pass per column."""
    if not within(arr, lo, hi):
        ok = pc.and_(pc.greater_equal(arr, lo), pc.less_equal(arr, hi))
        arr = pc.if_else(ok, arr, pa.scalar(None, pa.int64()))
    return arr


def _parsed_strings(arr: pa.Array, parse_str: bool) -> pa.Array:
    """:func:`_clean_int` of a column of strings (and nulls), each distinct text parsed once
    (the 2021 format's tids: a few distinct strings over every event)."""
    enc = arr.dictionary_encode()
    texts = enc.dictionary.to_pylist()
    ints = pa.array([_clean_int(v, parse_str) for v in texts], type=pa.int64())
    return ints.take(enc.indices)


def int_column(
    values: list[Any], parse_str: bool = False, lo: int = -_INT64_MAX, hi: int = _INT64_MAX
) -> pa.Array:
    """int64 column; anything that is not an integer (in ``[lo, hi]``) becomes null."""
    if values.count(None) == len(values):  # an argument this category's events lack
        return pa.nulls(len(values), pa.int64())
    values, arr = _inferred(values)
    if arr is not None and pa.types.is_floating(arr.type):
        whole = pc.and_(pc.is_finite(arr), _in_range(arr, _MAX_WHOLE_FLOAT))
        whole = pc.and_(whole, pc.equal(pc.floor(arr), arr))
        arr = pc.if_else(whole, arr, pa.scalar(None, arr.type)).cast(pa.int64())
    elif arr is not None and (pa.types.is_null(arr.type) or arr.type == pa.int64()):
        arr = arr.cast(pa.int64())
    elif arr is not None and pa.types.is_string(arr.type):
        arr = _parsed_strings(arr, parse_str)
    else:
        memo: dict[str, int | None] = {}  # tids repeat: parse each distinct string once
        arr = pa.array(
            [
                (memo[v] if v in memo else memo.setdefault(v, _clean_int(v, parse_str)))
                if type(v) is str
                else _clean_int(v, parse_str)
                for v in values
            ],
            type=pa.int64(),
        )
    return _bounded(arr, lo, hi)


def ns_column(values: list[Any]) -> pa.Array:
    """Kineto microseconds (ints, or floats with three decimals) to int64 ns, exactly.

    Floats are split into whole and fractional microseconds before scaling: multiplying an
    epoch-sized float by 1000 would lose nanoseconds, and truncating would turn .313 into 312 ns.
    """
    values, arr = _inferred(values)
    if arr is None or not (
        pa.types.is_integer(arr.type)
        or pa.types.is_floating(arr.type)
        or pa.types.is_null(arr.type)
    ):
        cleaned = [
            v if type(v) is float or (type(v) is int and abs(v) <= _MAX_US) else None
            for v in values
        ]
        arr = pa.array(
            cleaned, type=pa.float64() if any(type(v) is float for v in cleaned) else pa.int64()
        )
    if pa.types.is_null(arr.type):
        arr = arr.cast(pa.int64())
    if pa.types.is_integer(arr.type) and within(arr, -int(_MAX_US), int(_MAX_US)):
        return pc.multiply(arr.cast(pa.int64()), 1000)  # the usual integer column: no masking
    ok = _in_range(arr, _MAX_US)
    if pa.types.is_floating(arr.type):
        ok = pc.and_(pc.is_finite(arr), ok)
        arr = pc.if_else(ok, arr, pa.scalar(None, arr.type))
        whole = pc.floor(arr)
        frac_ns = pc.round(pc.multiply(pc.subtract(arr, whole), 1000.0)).cast(pa.int64())
        return pc.add(pc.multiply(whole.cast(pa.int64()), 1000), frac_ns)
    arr = pc.if_else(ok, arr, pa.scalar(None, arr.type)).cast(pa.int64())
    return pc.multiply(arr, 1000)


def clean_str(v: str) -> str:
    """Text Arrow and UTF-8 writers accept: lone surrogates become "?"."""
    return v.encode("utf-8", "replace").decode("utf-8")


def str_column(values: list[Any]) -> pa.Array:
    if values.count(None) == len(values):
        return pa.nulls(len(values), pa.string())
    try:
        arr = pa.array(values, type=pa.string())
    except _CONVERSION_ERRORS:
        arr = pa.array([clean_str(v) if type(v) is str else None for v in values], type=pa.string())
    return arr


def dims_columns(values: list[Any]) -> tuple[pa.Array, pa.Array, pa.Array]:
    """The x, y and z of ``grid``/``block`` triples, each null unless a positive int32.

    The usual column (every value a list of three) is converted as one flat column, read back
    three values apart (each value's result does not depend on its neighbours, so this is the
    axis-by-axis result); anything else goes value by value."""
    n = len(values)
    if n and set(map(type, values)) == {list} and set(map(len, values)) == {3}:
        flat = int_column(list(itertools.chain.from_iterable(values)), lo=0, hi=2**31 - 1)
        step = np.arange(0, 3 * n, 3)
        x, y, z = (flat.take(step + i) for i in range(3))
        return x, y, z
    x, y, z = (
        int_column(
            [v[i] if type(v) is list and len(v) == 3 else None for v in values],
            lo=0,
            hi=2**31 - 1,
        )
        for i in range(3)
    )
    return x, y, z


_COMPACT = json.JSONEncoder(
    separators=(",", ":")
)  # reused: json.dumps(separators=) builds one per call


def dims_json(v: Any) -> str | None:
    """``Input Dims`` as compact JSON text (``[[1,512],[]]``), the form ops.input_shapes keeps
    (and ``Concrete Inputs`` as ops.concrete_inputs keeps them, ``["","","[2, 2]"]``).

    ASCII only (the encoder escapes the rest), so Arrow always accepts it."""
    try:
        return _COMPACT.encode(v) if type(v) is list else None
    except (ValueError, RecursionError):  # circular cannot happen from JSON; depth can
        return None


#: Tensor element types as Kineto writes them (caffe2 TypeMeta names) -> tcreport dtype names.
#: Capitalised ``Double``/``Int`` are Python scalars in the 2021 format, not tensors.
FLOAT_TYPES = {
    "float": "float32",
    "double": "float64",
    "c10::Half": "float16",
    "c10::BFloat16": "bfloat16",
    "c10::Float8_e4m3fn": "float8_e4m3fn",
    "c10::Float8_e5m2": "float8_e5m2",
    "c10::Float8_e4m3fnuz": "float8_e4m3fnuz",
    "c10::Float8_e5m2fnuz": "float8_e5m2fnuz",
    "c10::Float8_e8m0fnu": "float8_e8m0fnu",
    "c10::Float4_e2m1fn_x2": "float4_e2m1fn_x2",
}


def first_float_type(types: Any) -> str | None:
    if type(types) is not list:
        return None
    for t in types:
        if type(t) is str and t in FLOAT_TYPES:
            return FLOAT_TYPES[t]
    return None


_MEMCPY_KINDS = {
    "HtoD": MemoryKind.HTOD,
    "DtoH": MemoryKind.DTOH,
    "DtoD": MemoryKind.DTOD,
    "HtoH": MemoryKind.HTOH,
    "PtoP": MemoryKind.PEER,
}
_DIRECTION = re.compile(r"\b(HtoD|DtoH|DtoD|HtoH|PtoP)\b")


def memcpy_kind(name: str | None) -> MemoryKind:
    """``Memcpy HtoD (Pageable -> Device)`` -> HTOD; an unknown direction stays a generic memcpy."""
    m = _DIRECTION.search(name) if name else None
    return _MEMCPY_KINDS[m.group(1)] if m else MemoryKind.MEMCPY_OTHER


def _count(v: object) -> float | None:
    """A counter value from JSON: a float, or an int a float can hold; nothing else."""
    if type(v) is float:
        return v
    return float(v) if type(v) is int and abs(v) < 2**1023 else None


def range_tensor_verdicts(args: list[dict[str, Any]]) -> list[bool | None]:
    """The Tensor Core verdict of each ``cuda_profiler_range`` event's counters (its args), as
    ``counters.tensor_verdict`` gives it for an ncu launch: a column per counter name, each name
    classified once. A value that is not a number (a bool, a string) is no count."""
    names = sorted(k for k in set().union(*args) if type(k) is str and counters.is_tensor_metric(k))
    columns = ((k, [_count(a.get(k)) for a in args]) for k in names)
    return counters.verdicts(counters.evidence_columns(columns, len(args)))
