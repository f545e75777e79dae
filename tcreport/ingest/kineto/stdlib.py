"""The Kineto parser that needs nothing beyond the standard library: the whole document to dicts.

It is the reference: it runs when msgspec is not installed, and whenever the msgspec parser meets
something it does not handle the same way (``NaN``, lone surrogates, numbers out of double range,
damaged input), so every error message a user can see comes from here. It holds the text and
every event as a Python dict at once, about 4.5x the file size at its peak.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from tcreport.errors import InputError
from tcreport.ingest.common import counters, limits
from tcreport.ingest.kineto import columns as col
from tcreport.ingest.kineto import events as ev

GZIP_MAGIC = b"\x1f\x8b"
#: How much (decompressed) text sniff looks at: the `traceEvents` key comes after `metadata`,
#: which tools such as TraceLens fill with pip package lists (26 kB in the H100 sample).
SNIFF_LIMIT = 1 << 20
_CHUNK = 1 << 16
_READ = 1 << 24

JsonObj = dict[str, Any]
#: The args keys of :data:`events.COLL_COLUMNS`, in that order.
_COLL_KEYS = (
    "Collective name",
    "In msg nelems",
    "Out msg nelems",
    "dtype",
    "Group size",
    "Process Group Name",
)


@contextlib.contextmanager
def open_raw(path: Path) -> Iterator[BinaryIO | gzip.GzipFile]:
    """The trace's bytes, decompressed when the file is gzip (by its magic, not its name)."""
    with path.open("rb") as fh:
        magic = fh.read(2)
        fh.seek(0)
        if magic != GZIP_MAGIC:
            yield fh
            return
        with gzip.GzipFile(fileobj=fh) as gz:
            yield gz


@contextlib.contextmanager
def open_trace(path: Path) -> Iterator[limits.GuardedText]:
    """Like :func:`open_raw`, read in chunks through the memory guards of :mod:`..common.limits`:
    a NUL byte, too much text or a gzip bomb is an InputError within one chunk of the cause."""
    with path.open("rb") as fh:
        magic = fh.read(2)
        fh.seek(0)
        if magic != GZIP_MAGIC:
            yield limits.GuardedText(fh, path, None)
            return
        with gzip.GzipFile(fileobj=fh) as gz:
            yield limits.GuardedText(gz, path, fh)


def read_prefix(path: Path, limit: int = SNIFF_LIMIT, marker: bytes = b'"traceEvents"') -> bytes:
    """Up to ``limit`` bytes of (decompressed) text, stopping early once ``marker`` is seen.

    A truncated gzip still yields what it has: sniffing is about what the file claims to be, and
    :func:`load_document` reports the damage.
    """
    out = bytearray()
    with open_raw(path) as src:
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
        with open_trace(path) as src:
            parts = []
            while chunk := src.read(_READ):
                parts.append(chunk)
            data = b"".join(parts)
            del parts
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
    except ValueError as exc:  # Python's integer-digit limit
        raise InputError(f"invalid JSON: {str(exc).splitlines()[0]}", path) from exc


def parse(path: Path) -> ev.Parsed:
    """The whole document to dicts, the garbage collector paused (:func:`events.gc_paused`)."""
    with ev.gc_paused():
        return _parse_events(path)


def _parse_events(path: Path) -> ev.Parsed:
    doc = load_document(path)
    events = doc.pop("traceEvents", None)
    if not isinstance(events, list):
        what = "no 'traceEvents' list" if events is None else "'traceEvents' is not a list"
        raise InputError(f"{what}; is this a PyTorch profiler trace?", path)
    out = ev.Collector()
    lists: list[list[JsonObj]] = [[] for _ in ev.KINDS]
    for e in events:
        if type(e) is not dict:
            out.malformed += 1
            continue
        kind, legacy = ev.kind_of(e.get("cat"), e.get("ph"), e.get("name"))
        if kind is not None:
            lists[kind].append(e)
            out.legacy = out.legacy or legacy
        else:
            out.unread(e.get("cat"))
    del events
    for kind in ev.KINDS:
        out.add(kind, _rows(kind, lists[kind]))
        lists[kind] = []
    return out.finish(header(doc), "json")


def _rows(kind: int, events: list[JsonObj]) -> ev.Rows:
    empty: JsonObj = {}
    args = [a if type(a) is dict else empty for a in (e.get("args") for e in events)]
    need = ev.ARGS[kind]
    r = ev.Rows(
        name=[e.get("name") for e in events],
        pid=[e.get("pid") for e in events],
        tid=[e.get("tid") for e in events],
        ts=[e.get("ts") for e in events],
        dur=[e.get("dur") for e in events],
    )
    if ev.CORR in need:
        r.corr = [a.get("correlation") for a in args]
    if ev.EID in need:
        r.eid = [a.get("External id", a.get("external id")) for a in args]
    if ev.DEVICE in need:
        r.device = [a.get("device") for a in args]
    if ev.STREAM in need:
        r.stream = [a.get("stream") for a in args]
    if ev.GRID in need:
        r.grid = [a.get("grid") for a in args]
    if ev.BLOCK in need:
        r.block = [a.get("block") for a in args]
    if ev.BYTES in need:
        r.nbytes = [a.get("bytes") for a in args]
    if ev.DIMS in need:
        r.dims = [col.dims_json(a.get("Input Dims")) for a in args]
    if ev.DTYPE in need:
        r.dtype = [col.first_float_type(a.get("Input type")) for a in args]
    if ev.CONCRETE in need:
        r.concrete = [col.dims_json(a.get("Concrete Inputs")) for a in args]
    if ev.TENSOR in need:
        r.tensor = col.range_tensor_verdicts(args)
    if ev.GPU_TIME in need:
        r.gpu_time = [a.get(counters.DURATION) for a in args]
    if ev.COLL in need:
        r.coll = tuple([a.get(key) for a in args] for key in _COLL_KEYS)
    return r


def header(doc: JsonObj) -> ev.Header:
    node: Any = doc
    for key in ("metadata", "system", "torch_env_info", "torch_version"):
        node = node.get(key) if isinstance(node, dict) else None
    props = doc.get("deviceProperties")
    devices = tuple(
        (p.get("id"), p.get("name"), p.get("computeMajor"), p.get("computeMinor"), p.get("numSms"))
        for p in (props if isinstance(props, list) else ())
        if isinstance(p, dict)
    )
    return ev.Header(
        schema_version=doc.get("schemaVersion"),
        cuda_runtime_version=doc.get("cuda_runtime_version"),
        base_time_ns=doc.get("baseTimeNanoseconds"),
        torch_version=node,
        devices=devices,
        distributed=doc.get("distributedInfo"),
    )
