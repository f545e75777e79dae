"""Low-level pieces of the Kineto reader: loading the JSON, sorting events by category, columns.

Kineto traces are one JSON document of up to hundreds of MB, so the reader parses once, keeps only
the events of the categories it uses (dropping Python-function, flow and instant events early) and
builds Arrow columns from whole lists. Values are validated in bulk: Arrow either converts a list
in one go, or the slow path cleans it value by value; a malformed event becomes a null, never an
exception other than :class:`InputError`.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tcreport.errors import InputError
from tcreport.schema import MemoryKind


def _load_orjson() -> Any:
    """orjson when installed and safe: before 3.9.15 its ``loads`` had no nesting limit and a
    deeply nested file crashes the interpreter (CVE-2024-27454); the stdlib parser is used then."""
    try:
        import orjson
    except ImportError:
        return None
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", getattr(orjson, "__version__", ""))
    return orjson if m and tuple(int(g) for g in m.groups()) >= (3, 9, 15) else None


_orjson = _load_orjson()  # optional: faster and leaner than json on big traces

GZIP_MAGIC = b"\x1f\x8b"
#: How much (decompressed) text sniff looks at: the `traceEvents` key comes after `metadata`,
#: which tools such as TraceLens fill with pip package lists (26 kB in the H100 sample).
SNIFF_LIMIT = 1 << 20
_CHUNK = 1 << 16
_INT64_MAX = 2**63 - 1
#: |ts| above this (microseconds, year 2096 as epoch time) is corrupt; with a base time below
#: MAX_BASE_NS the nanosecond sum stays inside int64.
_MAX_US = 4.0e15
MAX_BASE_NS = 4 * 10**18

JsonObj = dict[str, Any]

# Event categories, current spelling and the 2021 legacy one.
KERNEL, RUNTIME, MEMCPY, MEMSET, OP, ANNOTATION, MODULE = range(7)
_CATEGORY = {
    "kernel": KERNEL,
    "Kernel": KERNEL,
    "cuda_runtime": RUNTIME,
    "cuda_driver": RUNTIME,
    "Runtime": RUNTIME,
    "gpu_memcpy": MEMCPY,
    "Memcpy": MEMCPY,
    "gpu_memset": MEMSET,
    "Memset": MEMSET,
    "cpu_op": OP,
    "Operator": OP,
    "user_annotation": ANNOTATION,
    "python_function": MODULE,
}
MEMSET_CATEGORIES = frozenset({"gpu_memset", "Memset"})
LEGACY_CATEGORIES = frozenset({"Kernel", "Runtime", "Operator", "Memcpy", "Memset"})
STEP_PREFIX = "ProfilerStep#"
MODULE_PREFIX = "nn.Module: "


# --------------------------------------------------------------------------- loading


def read_prefix(path: Path, limit: int = SNIFF_LIMIT, marker: bytes = b'"traceEvents"') -> bytes:
    """Up to ``limit`` bytes of (decompressed) text, stopping early once ``marker`` is seen.

    A truncated gzip still yields what it has: sniffing is about what the file claims to be, and
    :func:`load_document` reports the damage.
    """
    out = bytearray()
    with path.open("rb") as fh:
        magic = fh.read(2)
        fh.seek(0)
        src = gzip.GzipFile(fileobj=fh) if magic == GZIP_MAGIC else fh
        try:
            while len(out) < limit:
                chunk = src.read(_CHUNK)
                if not chunk:
                    break
                out += chunk
                if marker in out:
                    break
        except (EOFError, zlib.error, gzip.BadGzipFile):
            pass  # damaged stream: judge by what was readable
    return bytes(out)


def load_document(path: Path) -> JsonObj:
    """The parsed top-level object; every way the bytes can be wrong becomes an InputError."""
    try:
        with path.open("rb") as fh:
            magic = fh.read(2)
            fh.seek(0)
            if magic == GZIP_MAGIC:
                with gzip.GzipFile(fileobj=fh) as gz:
                    data = gz.read()
            else:
                data = fh.read()
    except EOFError as exc:
        raise InputError("gzip stream ends early; is the file truncated?", path) from exc
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise InputError(f"corrupt gzip data ({exc})", path) from exc
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path) from exc
    if not data or data.isspace():
        raise InputError("file is empty", path)
    holder = [data]  # _parse takes the only reference and drops it once decoded
    del data
    doc = _parse(holder, path)
    if not isinstance(doc, dict):
        raise InputError(
            f"top level is a JSON {type(doc).__name__}, not an object; not a Kineto trace", path
        )
    return doc


def _parse(holder: list[bytes], path: Path) -> Any:
    """Parse, holding at most two copies of the text at once (bytes then str, or str then objects)."""
    try:
        if _orjson is not None:
            return _orjson.loads(holder.pop())
        text = holder.pop().decode("utf-8-sig")
        return json.loads(text)
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not UTF-8 text (byte {exc.start}); not a Kineto JSON trace", path
        ) from exc
    except json.JSONDecodeError as exc:
        raise InputError(
            f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", path
        ) from exc
    except RecursionError as exc:
        raise InputError("JSON nested too deeply", path) from exc
    except ValueError as exc:  # orjson's errors, Python's integer-digit limit
        raise InputError(f"invalid JSON: {str(exc).splitlines()[0]}", path) from exc


# --------------------------------------------------------------------------- bucketing


@dataclass
class Buckets:
    """Complete (``ph: X``) events of the categories the reader uses, in file order."""

    by_kind: tuple[list[JsonObj], ...] = field(default_factory=lambda: tuple([] for _ in range(7)))
    malformed: int = 0  # entries of traceEvents that are not JSON objects
    legacy: bool = False  # 2021 category names seen


def bucket_events(events: list[Any]) -> Buckets:
    """One pass over all events; the only per-event Python loop over the whole trace."""
    out = Buckets()
    lists = out.by_kind
    category = _CATEGORY
    legacy = False
    for e in events:
        if type(e) is not dict:
            out.malformed += 1
            continue
        cat = e.get("cat")
        if type(cat) is not str or e.get("ph") != "X":
            continue
        kind = category.get(cat)
        if kind is None:
            continue
        if kind == MODULE:
            name = e.get("name")
            if type(name) is not str or not name.startswith(MODULE_PREFIX):
                continue
        elif kind == OP:
            legacy = legacy or cat == "Operator"
            name = e.get("name")
            if type(name) is str and name.startswith(STEP_PREFIX):
                kind = ANNOTATION  # the 2021 format records ProfilerStep#N as an Operator
        elif cat in LEGACY_CATEGORIES:
            legacy = True
        lists[kind].append(e)
    out.legacy = legacy
    return out


# --------------------------------------------------------------------------- columns

#: What Arrow raises for values it cannot convert; UnicodeEncodeError (a ValueError) comes from
#: lone surrogates, which JSON escapes such as "\ud800" legally produce.
_CONVERSION_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError)
_TRAILING_INT = re.compile(r"(-?\d+)\s*$")


def _clean_int(v: Any, parse_str: bool) -> int | None:
    t = type(v)
    if t is int:
        return v if -_INT64_MAX <= v <= _INT64_MAX else None
    if t is float:
        return int(v) if v.is_integer() and abs(v) < 9.0e18 else None
    if parse_str and t is str:  # the 2021 format writes tids as "25738" and "stream 7"
        m = _TRAILING_INT.search(v)
        return _clean_int(int(m.group(1)), False) if m and len(m.group(1)) < 20 else None
    return None


def int_column(
    values: list[Any], parse_str: bool = False, lo: int = -_INT64_MAX, hi: int = _INT64_MAX
) -> pa.Array:
    """int64 column; anything that is not an integer (in ``[lo, hi]``) becomes null."""
    arr: pa.Array | None
    try:
        arr = pa.array(values)
    except _CONVERSION_ERRORS:
        arr = None
    if arr is not None and pa.types.is_floating(arr.type):
        whole = pc.and_(pc.is_finite(arr), pc.less_equal(pc.abs(arr), 9.0e18))
        whole = pc.and_(whole, pc.equal(pc.floor(arr), arr))
        arr = pc.if_else(whole, arr, pa.scalar(None, arr.type)).cast(pa.int64())
    elif arr is not None and (pa.types.is_null(arr.type) or arr.type == pa.int64()):
        arr = arr.cast(pa.int64())
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
    if lo > -_INT64_MAX or hi < _INT64_MAX:
        ok = pc.and_(pc.greater_equal(arr, lo), pc.less_equal(arr, hi))
        arr = pc.if_else(ok, arr, pa.scalar(None, pa.int64()))
    return arr


def ns_column(values: list[Any], base_ns: int = 0) -> pa.Array:
    """Kineto microseconds (ints, or floats with three decimals) to int64 ns, exactly.

    Floats are split into whole and fractional microseconds before scaling: multiplying an
    epoch-sized float by 1000 would lose nanoseconds, and truncating would turn .313 into 312 ns.
    """
    try:
        arr = pa.array(values)
    except _CONVERSION_ERRORS:
        arr = None
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
    ok = pc.less_equal(pc.abs(arr), _MAX_US)
    if pa.types.is_floating(arr.type):
        ok = pc.and_(pc.is_finite(arr), ok)
        arr = pc.if_else(ok, arr, pa.scalar(None, arr.type))
        whole = pc.floor(arr)
        frac_ns = pc.round(pc.multiply(pc.subtract(arr, whole), 1000.0)).cast(pa.int64())
        ns = pc.add(pc.multiply(whole.cast(pa.int64()), 1000), frac_ns)
    else:
        arr = pc.if_else(ok, arr, pa.scalar(None, arr.type)).cast(pa.int64())
        ns = pc.multiply(arr, 1000)
    return pc.add(ns, base_ns) if base_ns else ns


def clean_str(v: str) -> str:
    """Text Arrow and UTF-8 writers accept: lone surrogates become "?"."""
    return v.encode("utf-8", "replace").decode("utf-8")


def str_column(values: list[Any]) -> pa.Array:
    try:
        arr = pa.array(values, type=pa.string())
    except _CONVERSION_ERRORS:
        arr = pa.array([clean_str(v) if type(v) is str else None for v in values], type=pa.string())
    return arr


def dims_column(values: list[Any], i: int) -> pa.Array:
    """Element ``i`` of ``grid``/``block`` triples, null unless a positive int32."""
    return int_column(
        [v[i] if type(v) is list and len(v) == 3 else None for v in values], lo=0, hi=2**31 - 1
    )


_COMPACT = json.JSONEncoder(
    separators=(",", ":")
)  # reused: json.dumps(separators=) builds one per call


def dims_json(v: Any) -> str | None:
    """``Input Dims`` as compact JSON text (``[[1,512],[]]``), the form ops.input_shapes keeps."""
    try:
        return _COMPACT.encode(v) if type(v) is list else None
    except (ValueError, RecursionError):  # circular cannot happen from JSON; depth can
        return None


def args_of(events: list[JsonObj]) -> list[JsonObj]:
    empty: JsonObj = {}
    return [a if type(a) is dict else empty for a in (e.get("args") for e in events)]


def external_ids(args: list[JsonObj]) -> pa.Array:
    return int_column([a.get("External id", a.get("external id")) for a in args])


@dataclass
class Frame:
    """Common columns of one category's events, rows with unusable times already dropped."""

    events: list[JsonObj]
    args: list[JsonObj]
    name: pa.Array
    pid: pa.Array
    tid: pa.Array
    start_ns: pa.Array
    dur_ns: pa.Array
    dropped: int = 0


def frame(events: list[JsonObj], base_ns: int) -> Frame:
    """Columns shared by every category; events without a name, start or non-negative duration
    are dropped (and counted) so that later joins never see half an event."""
    dropped = 0
    while True:
        name = str_column([e.get("name") for e in events])
        start = ns_column([e.get("ts") for e in events], base_ns)
        dur = ns_column([e.get("dur") for e in events])
        ok = pc.and_(
            pc.and_(pc.is_valid(name), pc.is_valid(start)),
            pc.fill_null(pc.greater_equal(dur, 0), False),
        )
        if pc.all(ok).as_py() is not False:
            break
        keep = ok.to_pylist()
        dropped += keep.count(False)
        events = [e for e, k in zip(events, keep, strict=True) if k]
    return Frame(
        events=events,
        args=args_of(events),
        name=name,
        pid=int_column([e.get("pid") for e in events], parse_str=True),
        tid=int_column([e.get("tid") for e in events], parse_str=True),
        start_ns=start,
        dur_ns=dur,
        dropped=dropped,
    )


# --------------------------------------------------------------------------- vocabularies

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
