"""The fast Kineto parser: msgspec typed structs, streamed piece by piece (the ``[fast]`` extra).

Why it is fast and lean (230 MiB grown V100 trace: see benchmarks/README-kineto.md):

* typed decoding: events decode into structs (:mod:`.structs`) that declare only the fields the
  reader uses, so ``Call stack`` strings, flow ids and the like are skipped without becoming
  Python objects;
  ``Input Dims``/``Input type``/``Concrete Inputs``/``grid``/``block`` stay raw bytes and each
  distinct text is converted once (:mod:`.rawtext`);
* streaming: the (decompressed) text is read 2 MiB at a time and cut between two events of
  ``traceEvents``, each piece decoded and turned into Arrow columns before the next is read, so
  neither the whole text nor all events are ever in memory at once.

Why it is safe: a cut is a guess (the last ``}`` ``,`` ``{`` with only whitespace between), but a
piece is accepted only if ``[`` + piece + ``]`` is valid JSON, which cannot happen when the guess
fell inside a string or a nested value, or after the end of the array. The first piece, closed
with a sentinel event, is accepted only if the ``traceEvents`` value the decoder kept is the array
from the key's ``[`` to the ``]`` written after the sentinel; the last, opened with one, only if the
kept value starts at that ``[`` (a ``msgspec.Raw`` is a view into the text, so its address says
where it lies). A sentinel the file itself holds, a cut inside another top-level array and a later
duplicate ``traceEvents`` key all fail these checks. A rejected guess only makes the next piece
longer; past ``TCREPORT_MAX_VALUE_MB`` of text with no accepted cut the file is refused as one
value too large when no guess was seen there, and handed to ``json`` when guesses were rejected.
Anything this parser would read differently from the ``json`` module (``NaN``, lone surrogates,
numbers beyond double range, damaged input) raises :class:`FastPathError` and the reader starts
again with :mod:`.stdlib`, the reference, which also words every error a user sees.

Known difference: integer literals longer than Python's 4,300-digit limit in fields the reader
skips are accepted here and refused by ``json`` (scanning every byte for them costs 2 s per 230 MiB).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import msgspec
import numpy as np

from tcreport.ingest.common import limits
from tcreport.ingest.kineto import columns as col
from tcreport.ingest.kineto import events as ev
from tcreport.ingest.kineto import rawtext
from tcreport.ingest.kineto import structs as st
from tcreport.ingest.kineto.stdlib import open_trace

#: Decompressed bytes read at a time; a piece is at least this long (a few thousand events).
#: Measured on the grown V100 trace: 1-2 MiB is fastest (pieces stay in cache), 256 KiB pays
#: per-piece Arrow overhead, 8 MiB and more cost 20-50 % more time and 40 MiB more peak.
PIECE = 2 << 20
_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_SENTINEL_PH = "\x00tcreport:cut"
_SENTINEL = b'{"ph":"\\u0000tcreport:cut"}'
_LAST_OPEN = b'{"traceEvents":['
_BOM = b"\xef\xbb\xbf"
#: The last ``}`` ``,`` ``{`` (JSON whitespace between): matched from a position, the greedy
#: ``.*`` backtracks from the end to it, in C, however many ``{`` the strings before it hold.
_CUT = re.compile(rb"(?s:.*)\}[ \t\r\n]*(,)[ \t\r\n]*(\{)")
#: How far before the text read since the last search a cut's ``}`` may lie.
_BACK = 4096


class FastPathError(Exception):
    """The msgspec parser will not read this file the way ``json`` does; use the stdlib parser."""


def parse(path: Path) -> ev.Parsed:
    """Raises :class:`FastPathError` for anything the stdlib parser should judge instead; the
    garbage collector is paused meanwhile (:func:`events.gc_paused`)."""
    try:
        with ev.gc_paused(), open_trace(path) as src:
            return _Reader(src.read, path).run()
    except (
        OSError,  # gzip.BadGzipFile included
        EOFError,
        zlib.error,
        msgspec.DecodeError,  # ValidationError included
        UnicodeDecodeError,
        RecursionError,
        BufferError,
    ) as exc:
        raise FastPathError(f"{type(exc).__name__}: {exc}") from exc


def _last_cut(buf: bytearray, lo: int) -> tuple[int, int] | None:
    """``(comma, brace)`` of the last ``}``, ``,``, ``{`` (whitespace between) whose ``{`` is at or
    after ``lo``. Linear in the text searched, even for hostile text (``}, `` repeated)."""
    m = _CUT.match(buf, max(0, lo - _BACK))
    if m is None or m.start(2) < lo:
        return None
    return m.start(1), m.start(2)


def _address(buffer: Any) -> int:
    return int(np.frombuffer(buffer, np.uint8).ctypes.data)


def _decode(decoder: msgspec.json.Decoder[Any], text: bytes) -> Any:
    if not text.isascii():
        text.decode("utf-8")  # msgspec does not check the strings it skips; json would refuse
    return decoder.decode(text)


def _is_sentinel(item: Any) -> bool:
    return type(item) is st.Event and item.ph == _SENTINEL_PH


class _Reader:
    def __init__(self, read: Callable[[int], bytes], path: Path) -> None:
        self._read = read
        self._path = path
        self._max_value = limits.max_value()
        self.consumed = 0  # bytes of text taken off the front of ``buf`` so far
        self.buf = bytearray()
        self.eof = False
        self.rejected = False  # a cut was guessed and refused since the last accepted one
        self.out = ev.Collector()
        self.docs: list[st.Doc] = []  # the first piece's, the last piece's
        self._dims: dict[bytes, str | None] = {}
        self._types: dict[bytes, str | None] = {}
        self._concrete: dict[bytes, str | None] = {}
        self._grids: dict[bytes, Any] = {}

    def _fill(self) -> None:
        chunk = self._read(PIECE)
        if chunk:
            self.buf += chunk
        else:
            self.eof = True

    def _too_long(self) -> None:
        """Past the value limit with no accepted cut: one absurd value when no cut was even
        guessed (no event boundary, or no traceEvents key, in this much text); when guesses were
        refused (cuts hidden in strings), the ``json`` parser, which needs none, reads it."""
        if not self._max_value or len(self.buf) <= self._max_value:
            return
        if self.rejected:
            raise FastPathError(f"no cut accepted in {len(self.buf)} bytes of text")
        raise limits.value_too_large(len(self.buf), self.consumed, self._path)

    def _more(self, want: int) -> int:
        """What to read up to after a search found no cut (the value limit and one byte, at most,
        so that a last search of more than the limit decides)."""
        self._too_long()
        return min(want, self._max_value + 1) if self._max_value else want

    def run(self) -> ev.Parsed:
        self._fill()
        if self.buf.startswith(_BOM):
            del self.buf[:3]
        head = self._head()
        if head is None:  # no cut anywhere: one piece, the whole document
            self._doc(bytes(self.buf), sentinel=None, start=-1)
        else:
            self._pieces(head)
        return self.out.finish(self._header(), "msgspec")

    def _head(self) -> bytes | None:
        """The text up to the ``[`` opening ``traceEvents``, taken off the buffer; None at EOF."""
        pos = 0
        while (m := _KEY.search(self.buf, max(0, pos - 64))) is None:
            if self.eof:
                return None
            pos = len(self.buf)
            self._too_long()
            self._fill()
        head = bytes(self.buf[: m.end()])
        del self.buf[: m.end()]
        self.consumed += m.end()
        return head

    def _pieces(self, head: bytes) -> None:
        first = True
        want, lo = PIECE, 0
        while True:
            while not self.eof and len(self.buf) < want:
                self._fill()
            if self.eof:
                break
            cut = _last_cut(self.buf, lo)
            lo = len(self.buf)  # a later search only needs the text read after this one
            if cut is None:
                want = self._more(len(self.buf) + PIECE)
                continue
            comma, brace = cut
            if first:
                text = b"".join((head, self.buf[:comma], b",", _SENTINEL, b"]}"))
                done = self._doc(text, sentinel=-1, start=len(head) - 1)
                del text  # before the next read
            else:
                done = self._middle(comma)
            if done:
                # keep the byte before the next event (whitespace or the comma) as its ``[``
                del self.buf[: brace - 1]
                self.buf[0] = 0x5B
                self.consumed += brace - 1
                first, want, lo, self.rejected = False, PIECE, 0, False
            else:
                self.rejected = True
                want = self._more(2 * len(self.buf))  # a wrong guess: twice the text
        if first:
            self._doc(head + self.buf, sentinel=None, start=-1)
        else:
            rest = memoryview(self.buf)[1:]
            text = b"".join((_LAST_OPEN, _SENTINEL, b",", rest))
            del rest
            self._doc(text, sentinel=0, start=len(_LAST_OPEN) - 1)
        self.buf = bytearray()

    def _middle(self, comma: int) -> bool:
        """Decode a middle piece, ``buf[:comma]`` with ``buf[0]`` already its ``[``, in place: the
        comma ending it is ``]`` while it is decoded. Joining a copy of each piece between
        brackets was two copies of the whole text. A view of ``buf`` must be gone before ``buf``
        is resized (a raw value still holding it makes that a BufferError: the json parser then
        reads the file)."""
        buf = self.buf
        buf[comma] = 0x5D
        try:
            view = memoryview(buf)[: comma + 1]
            if not buf.isascii():  # the whole buffer, so it does not copy the piece to ask
                bytes(view).decode("utf-8")  # msgspec does not check the strings it skips
            done = self._items(view)
            del view
        finally:
            buf[comma] = 0x2C
        return done

    def _items(self, text: memoryview) -> bool:
        try:
            items = st.ITEMS.decode(text)
        except msgspec.ValidationError:
            raise
        except msgspec.DecodeError:
            return False
        self._collect(items)
        return True

    def _doc(self, text: bytes, sentinel: int | None, start: int) -> bool:
        """Decode a document (the first piece closed, the last one opened, or the whole text).

        ``sentinel`` is where the sentinel event must be in ``traceEvents``, and ``start`` where
        the array holding it opens in ``text``: the first piece's must also end at the ``]`` after
        the sentinel (the text's last but one byte). Only the first piece may fail quietly (the
        guess was wrong); the others are the end of the road."""
        try:
            doc = _decode(st.DOC, text)
        except msgspec.ValidationError:
            raise
        except msgspec.DecodeError:
            if sentinel == -1:
                return False
            raise
        raw = doc.traceEvents
        if raw is msgspec.UNSET:
            raise FastPathError("no traceEvents list")
        if sentinel is not None:
            at = _address(raw) - _address(text)
            if at != start or (sentinel == -1 and at + len(raw) != len(text) - 1):
                if sentinel == -1:  # valid JSON, but the sentinel is not in the kept array
                    return False
                raise FastPathError("traceEvents is not one array (duplicate keys?)")
        events = st.ITEMS.decode(raw)
        if sentinel is not None:
            if not events or not _is_sentinel(events[sentinel]):
                raise FastPathError("the sentinel is not where it was written")
            del events[sentinel]
        doc.traceEvents = msgspec.UNSET
        self.docs.append(doc)
        self._collect(events)
        return True

    def _header(self) -> ev.Header:
        """Top-level fields; one that appears before and after ``traceEvents``: the later wins,
        as with ``json``."""

        def pick(name: str) -> Any:
            for doc in reversed(self.docs):
                v = getattr(doc, name)
                if v is not msgspec.UNSET:
                    return v
            return None

        meta = pick("metadata")
        system = meta.system if type(meta) is st.Metadata else None
        env = system.torch_env_info if type(system) is st.System else None
        props = pick("deviceProperties")
        return ev.Header(
            schema_version=pick("schemaVersion"),
            cuda_runtime_version=pick("cuda_runtime_version"),
            base_time_ns=pick("baseTimeNanoseconds"),
            torch_version=env.torch_version if type(env) is st.TorchEnv else None,
            distributed=pick("distributedInfo"),
            devices=tuple(
                (p.id, p.name, p.computeMajor, p.computeMinor, p.numSms)
                for p in (props if type(props) is list else ())
                if type(p) is st.Device
            ),
        )

    # ------------------------------------------------------------------ events to rows

    def _collect(self, items: list[Any]) -> None:
        """Sort a piece's events into their categories (:func:`events.kind_of`, written out here
        because it runs once per event: 600,000 calls on the grown V100 trace)."""
        out = self.out
        lists: list[list[st.Event]] = [[] for _ in ev.KINDS]
        category = ev.CATEGORY.get
        unread_device = ev.UNREAD_DEVICE
        legacy_categories = ev.LEGACY_CATEGORIES
        event, op, module = st.Event, ev.OP, ev.MODULE  # locals: looked up once per event
        step, scope = ev.STEP_PREFIX, ev.MODULE_PREFIX
        legacy = False
        for e in items:
            if type(e) is not event:
                out.malformed += 1
                continue
            cat = e.cat
            kind = category(cat) if type(cat) is str and e.ph == "X" else None
            if kind is not None and kind >= op:
                name = e.name
                if kind == op:
                    if type(name) is str and name.startswith(step):
                        kind = ev.ANNOTATION
                elif kind == module:
                    if type(name) is not str or not name.startswith(scope):
                        kind = None
                elif kind == ev.RANGE:
                    # the counters are args keys no struct can declare in advance; such traces
                    # are small (the range profiler replays every kernel), so json reads them
                    raise FastPathError("cuda_profiler_range counters are read by the json parser")
            if kind is None:
                if type(cat) is str and cat in unread_device:
                    out.unread(cat)
                continue
            lists[kind].append(e)
            if not legacy and cat in legacy_categories:
                legacy = True
        out.legacy = out.legacy or legacy
        items.clear()
        for kind in ev.KINDS:
            if lists[kind]:
                out.add(kind, self._rows(kind, lists[kind]))

    def _rows(self, kind: int, events: list[st.Event]) -> ev.Rows:
        need = ev.ARGS[kind]
        r = ev.Rows(
            name=[e.name for e in events],
            pid=[e.pid for e in events],
            tid=[e.tid for e in events],
            ts=[e.ts for e in events],
            dur=[e.dur for e in events],
        )
        if not need:
            return r
        raw = [e.args for e in events]
        if set(map(type, raw)) == {st.Args}:
            args = cast(list[st.Args], raw)
        else:  # an event without args (or odd ones): empty args
            none = st.Args()
            args = [a if type(a) is st.Args else none for a in raw]
        if ev.CORR in need:
            r.corr = [a.correlation for a in args]
        if ev.EID in need:
            eid = [a.eid for a in args]  # UNSET: no "External id", so "external id" speaks
            unset = eid.count(msgspec.UNSET)
            if unset == len(eid):
                eid = [a.eid_legacy for a in args]
            elif unset:
                eid = [
                    a.eid_legacy if v is msgspec.UNSET else v
                    for a, v in zip(args, eid, strict=True)
                ]
            r.eid = eid
        if ev.DEVICE in need:
            r.device = [a.device for a in args]
        if ev.STREAM in need:
            r.stream = [a.stream for a in args]
        if ev.GRID in need:
            r.grid = rawtext.triples([a.grid for a in args], self._grids)
        if ev.BLOCK in need:
            r.block = rawtext.triples([a.block for a in args], self._grids)
        if ev.BYTES in need:
            r.nbytes = [a.bytes for a in args]
        if ev.DIMS in need:
            r.dims = rawtext.texts([a.dims for a in args], self._dims, col.dims_json)
        if ev.DTYPE in need:
            r.dtype = rawtext.texts([a.types for a in args], self._types, col.first_float_type)
        if ev.CONCRETE in need:
            r.concrete = rawtext.texts([a.concrete for a in args], self._concrete, col.dims_json)
        if ev.COLL in need:
            r.coll = (  # in the order of ev.COLL_COLUMNS; getattr by name took 3x as long
                [a.coll_name for a in args],
                [a.in_nelems for a in args],
                [a.out_nelems for a in args],
                [a.coll_dtype for a in args],
                [a.group_size for a in args],
                [a.pg_name for a in args],
            )
        return r
