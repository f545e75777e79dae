"""Reading NVTX_EVENTS: one scan in rowid ranges, each folded to compact numpy columns.

An export holds tens of millions of ranges, most of them inside an op (``aten::empty`` in
``aten::linear``) where nothing is read from them: each chunk parses its distinct texts, marks the
ranges inside an op of the same chunk and drops them before they cost memory; :func:`merge_ranges`
joins the chunks for the nesting that follows (:mod:`tcreport.ingest.nsys.nvtx`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport._arrays import int64_view as _view
from tcreport._arrays import int64s as _np
from tcreport.ingest.nsys.db import NsysDb, Scan, int64, string
from tcreport.ingest.nsys.nvtx_nesting import op_cover, thread_codes, time_order
from tcreport.ingest.nsys.nvtx_text import OTHER, Parsed, is_op, parse
from tcreport.schema import MAX_INTERVAL_NS, POSITIONS_NS

TABLE = "NVTX_EVENTS"
PUSH_POP, START_END, DOMAIN_CREATE = 59, 60, 75
_FIRST, _LAST = POSITIONS_NS


@dataclass
class _Chunk:
    """The ranges of one rowid range of NVTX_EVENTS; ``code`` indexes ``parsed``."""

    start: np.ndarray
    end: np.ndarray
    gtid: np.ndarray
    domain: np.ndarray
    start_end: np.ndarray  # eventType 60
    code: np.ndarray
    parsed: Parsed
    span: tuple[int | None, int | None]  # of every event in the chunk, ranges or not
    domains: list[tuple[int, str]]
    dropped: int = 0  # ranges left out: no start or end (never closed), an end before the
    # start, or times out of schema.POSITIONS_NS / MAX_INTERVAL_NS
    # The push/pop ranges in (thread, start, -end) order, as _kept sorted them anyway: rows of
    # this chunk, each one's code into ``threads`` (the chunk's threads, ascending). Kept so that
    # the outline merges the chunks' orders instead of sorting every range of the export again.
    order: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    order_thread: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    threads: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


def nvtx_scans(db: NsysDb, sid_ids: pa.Array, sid_values: pa.Array) -> list[Scan[_Chunk]]:
    """Push/pop and start/end ranges with their text (inline, or a ``textId`` into StringIds),
    plus every event's time for the span and the domain names, in one scan of the table."""
    cols = set(db.columns(TABLE))
    if not {"start", "end", "eventType", "globalTid"} <= cols:
        return []
    text = "NULL" if "text" not in cols else '"text"'
    if "text" in cols and not db.holds_text(TABLE, "text"):
        text = 'CAST("text" AS TEXT)'  # numbers read as one text whatever the chunks (db.py)
    text_id = "textId" if "textId" in cols else "NULL"
    domain = "IFNULL(domainId, 0) & 2147483647" if "domainId" in cols else "0"
    # Every value ADBC converts costs ~45 ns, and this table has tens of millions of rows, so
    # two pairs of columns travel as one: the event type with the domain id (``domain + 2**31 *
    # type``: the domain is masked to 31 bits, so the type comes back whole; ``type + 256 *
    # domain`` read a hostile type 315 as a push/pop range in domain 1), and the text with its
    # registered-string id (``"\x01<id>"`` where the range has only a textId; inline text wins,
    # as nsys shows it, unless it is empty: 2021 exports may write defaults instead of NULLs).
    # The id is resolved once per distinct text. The text is never NULL, so ADBC types it as a
    # string from any first batch.
    sql = (
        f'SELECT start, "end", ({domain}) + 2147483648 * eventType, globalTid, '
        f"CASE WHEN eventType IN ({PUSH_POP}, {START_END}, {DOMAIN_CREATE}) THEN "
        f"COALESCE(NULLIF({text}, ''), "
        f"CASE WHEN eventType <> {DOMAIN_CREATE} THEN char(1) || {text_id} END, '') "
        f"ELSE '' END FROM {TABLE}"
    )  # COALESCE/NULLIF: the same choice as a CASE of IS NOT NULL tests, ~8 % less SQLite time
    names = ("start", "end", "et", "gtid", "text")
    named = {"domainId", "text"} <= cols  # nvtxDomainCreate (75) names each domain

    def fold(batches: Iterator[pa.RecordBatch]) -> _Chunk:
        cols_: dict[str, list[np.ndarray]] = {k: [] for k in ("s", "e", "g", "d", "x")}
        texts = _TextCodes(sid_ids, sid_values)
        lo: int | None = None
        hi: int | None = None
        domains: list[tuple[int, str]] = []
        dropped = 0
        for raw in batches:
            st, en = int64(raw, "start"), int64(raw, "end")
            first, last = pc.min(st).as_py(), pc.max(en).as_py()
            lo = first if lo is None or (first is not None and first < lo) else lo
            hi = last if hi is None or (last is not None and last > hi) else hi
            packed = _view(int64(raw, "et"))
            et, dom = packed >> 31, packed & 2147483647
            created = np.flatnonzero(et == DOMAIN_CREATE) if named else ()
            if len(created):
                txt = string(raw, "text").take(pa.array(created)).to_pylist()
                domains += [
                    (int(d), t) for d, t in zip(dom[created].tolist(), txt, strict=True) if t
                ]
            ok = (et == PUSH_POP) | (et == START_END)
            ranges = int(ok.sum())
            ok &= _valid(st) & _valid(en) & _valid(int64(raw, "gtid"))
            # the bounds checks.timed holds kernels to, as the dropped note says: a NULL start
            # read as 0, or one at INT64_MIN, made a range of ~2**63 ns that swallowed every op
            # before it on its thread (and wrapped its op's cpu_ns negative)
            s_v, e_v = _view(st), _view(en)
            ok &= (s_v >= _FIRST) & (s_v < _LAST) & (e_v >= s_v) & (e_v < s_v + MAX_INTERVAL_NS)
            dropped += ranges - int(ok.sum())
            # usually every row is a range: then nothing is copied to drop the others
            b = raw if ok.all() else raw.filter(pa.array(ok))
            texts.add(string(b, "text"))
            for k, name in (("s", "start"), ("e", "end"), ("g", "gtid")):
                cols_[k].append(_view(int64(b, name), 0))
            cols_["d"].append(dom[ok].astype(np.int32))
            cols_["x"].append(et[ok] == START_END)
        distinct, code = texts.result()
        cat = {k: np.concatenate(v) if v else np.zeros(0, np.int64) for k, v in cols_.items()}
        keep, kept_code, parsed, by_time = _kept(
            cat["g"], cat["s"], cat["e"], cat["x"], code, distinct
        )
        # only the texts still referenced travel on, collapsed to what they parse to (millions
        # of distinct autograd-nvtx texts are a few thousand results)
        used = pc.dictionary_encode(pa.array(kept_code))
        entry, small = parsed.take(used.dictionary).collapse()
        return _Chunk(
            cat["s"][keep], cat["e"][keep], cat["g"][keep], cat["d"][keep], cat["x"][keep],
            entry[_np(used.indices)].astype(np.int32), small, (lo, hi), domains, dropped, *by_time,
        )  # fmt: skip

    return [Scan(f"{sql} {w}", names, fold) for w in db.chunks(TABLE)]


class _TextCodes:
    """The texts of one chunk's ranges as codes into their distinct values, parsed once each.

    Texts repeat in most exports (a DLProf or user range per layer per step): each batch is
    dictionary-encoded as it comes and the dictionaries unified at the end. An autograd-nvtx
    export numbers every range (``op_id = 993403``), so nearly every text is new: hashing them
    twice (batch, then unify) would be a third of the chunk's time for nothing, so when the
    first batch is mostly distinct the chunk's texts are kept as they are, one per range.
    """

    def __init__(self, sid_ids: pa.Array, sid_values: pa.Array) -> None:
        self._sid = (sid_ids, sid_values)
        self._parts: list[pa.Array] = []
        self._unique: bool | None = None

    def add(self, text: pa.Array) -> None:
        if self._unique:
            self._parts.append(_registered(text, *self._sid))
            return
        enc = pc.dictionary_encode(text)
        if self._unique is None:
            self._unique = len(enc.dictionary) > len(text) // 2 > 0
            if self._unique:
                self._parts.append(_registered(text, *self._sid))
                return
        values = _registered(enc.dictionary, *self._sid)
        if values is not enc.dictionary:  # a registered string may equal an inline text
            distinct = pc.dictionary_encode(values)
            enc = pa.DictionaryArray.from_arrays(
                distinct.indices.take(enc.indices), distinct.dictionary
            )
        self._parts.append(enc)

    def result(self) -> tuple[pa.Array, np.ndarray]:
        """(texts, code per range)."""
        if not self._parts:
            return pa.array([], pa.string()), np.zeros(0, dtype=np.int64)
        if self._unique:
            texts = pa.concat_arrays(self._parts)
            self._parts = []
            return texts, np.arange(len(texts), dtype=np.int64)
        unified = pa.chunked_array(self._parts, self._parts[0].type).unify_dictionaries()
        self._parts = []
        return unified.chunk(0).dictionary, np.concatenate([_np(c.indices) for c in unified.chunks])


def _registered(values: pa.Array, sid_ids: pa.Array, sid_values: pa.Array) -> pa.Array:
    r"""Texts sent as ``"\x01<id>"`` replaced by their ``StringIds`` value ("" if the id is not
    there); ``values`` itself when there are none."""
    if not pc.any(pc.starts_with(values, "\x01")).as_py():  # a byte compare, before any regex
        return values
    is_id = pc.fill_null(pc.match_substring_regex(values, "^\x01[0-9]+$"), False)
    if not pc.any(is_id).as_py():
        return values
    where = np.flatnonzero(is_id.to_numpy(zero_copy_only=False))
    ids = pc.cast(pc.utf8_slice_codeunits(values.take(pa.array(where)), 1), pa.int64())
    by_id = pc.fill_null(sid_values.take(pc.index_in(ids, value_set=sid_ids)), "")
    replaced: pa.Array = pc.replace_with_mask(values, is_id, by_id)
    return replaced


def _kept(
    gtid: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    start_end: np.ndarray,
    code: np.ndarray,
    texts: pa.Array,
) -> tuple[np.ndarray, np.ndarray, Parsed, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The ranges not inside an op of this chunk (inside one for good, so dropped before they
    cost memory; ranges inside an op that began in an earlier chunk go after merging), and their
    texts parsed: (keep mask, each kept range's entry in the Parsed, the Parsed, and the kept
    push/pop ranges in (thread, start, -end) order as :class:`_Chunk` keeps them).

    Only texts that matter are parsed. An op hides what starts inside it, so a range's kind
    decides anything only when something starts inside it (40 % of an autograd export's ranges);
    the kept ranges are then parsed in full, most of them already among those."""
    pp = np.flatnonzero(~start_end.astype(bool))
    threads, tcode = thread_codes(gtid[pp])
    local = time_order(tcode, start[pp], end[pp])
    order, t_sorted = pp[local], tcode[local]  # (thread, start, -end) order
    s_o, e_o = start[order], end[order]
    has_inside = np.zeros(len(order), dtype=bool)
    if len(order) > 1:  # properly nested: the next range on the thread is inside, or after
        has_inside[:-1] = (t_sorted[1:] == t_sorted[:-1]) & (s_o[1:] < e_o[:-1])
    at = np.full(len(texts), -1, dtype=np.int64)  # each text's entry in the parsed parts
    parents = _distinct(code[order[has_inside]], len(texts))
    first = parse(texts.take(pa.array(parents)))
    at[parents] = np.arange(len(parents))
    kind = np.full(len(texts), OTHER, dtype=np.int8)  # not parsed: nothing starts inside them
    kind[parents] = first.kind
    op = is_op(kind[code[order]]) & (e_o > s_o)
    # A range crossing the op it starts in (two NVTX domains) is kept: if it is an op, its end
    # may hide a range of the next chunk; the merge (nvtx._outer) drops it again with the whole
    # export in view. Properly nested ranges never cross, so this keeps next to nothing.
    cover, crossing = op_cover(t_sorted, s_o, e_o, op)
    keep = np.ones(len(start), dtype=bool)
    keep[order] = ~cover | crossing
    kept = _distinct(code[keep], len(texts))
    rest = kept[at[kept] < 0]
    at[rest] = len(parents) + np.arange(len(rest))
    parsed = Parsed.concat([first, parse(texts.take(pa.array(rest)))])
    # The first range of a thread is inside nothing, so every thread keeps at least one range.
    sorted_kept = keep[order]
    row_after = (np.cumsum(keep) - 1).astype(np.int32)  # each kept row's index among the kept
    by_time = (
        row_after[order[sorted_kept]],
        t_sorted[sorted_kept].astype(np.int32),
        threads,
    )
    return keep, at[code[keep]], parsed, by_time


def _distinct(codes: np.ndarray, size: int) -> np.ndarray:
    """The distinct codes below ``size``, ascending, without a sort."""
    seen = np.zeros(size, dtype=bool)
    seen[codes] = True
    return np.flatnonzero(seen)


@dataclass
class Ranges:
    """All NVTX ranges of an export, in table order; ``code`` indexes ``parsed``."""

    start: np.ndarray
    end: np.ndarray
    gtid: np.ndarray
    domain: np.ndarray
    start_end: np.ndarray
    code: np.ndarray
    parsed: Parsed
    span: tuple[int | None, int | None]
    domains: dict[int, str]
    # (threads ascending, push/pop rows in (thread, start, -end) order, each one's thread code),
    # merged from the chunks' own orders; None when that was not possible (then sort them again)
    by_time: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


def merge_ranges(chunks: list[_Chunk]) -> Ranges:
    """One set of ranges from the chunks, copying each column once and freeing as it goes."""
    n = sum(len(c.start) for c in chunks)
    out: dict[str, np.ndarray] = {}
    merged = _merged_order(chunks)
    for name in ("start", "end", "gtid", "domain", "start_end", "code"):
        col = np.empty(n, dtype=getattr(chunks[0], name).dtype)
        at, base = 0, 0
        for c in chunks:
            part = getattr(c, name)
            col[at : at + len(part)] = part + base if name == "code" else part
            at += len(part)
            base += len(c.parsed.kind)
            setattr(c, name, None)
        out[name] = col
    firsts = [c.span[0] for c in chunks if c.span[0] is not None]
    lasts = [c.span[1] for c in chunks if c.span[1] is not None]
    domains = {d: t for c in chunks for d, t in c.domains}  # later names win, as in the table
    parsed = Parsed.concat([c.parsed for c in chunks])
    # TensorFlow's "Type: node" ranges are ops only in its own domains ("tensorflow-core"): a
    # user's "Epoch: 3" in the default domain of the same run stays a plain range. Ranges in a
    # TensorFlow domain point into a second, TensorFlow-mode copy of the (distinct) texts.
    tf_ids = [d for d, v in domains.items() if v.lower().startswith("tensorflow")]
    in_tf = np.isin(out["domain"], tf_ids) if tf_ids else None
    if in_tf is not None and in_tf.any():
        out["code"] = np.where(in_tf, out["code"] + len(parsed.kind), out["code"])
        parsed = Parsed.concat([parsed, parsed.with_tensorflow()])
    return Ranges(
        **out,
        parsed=parsed,
        span=(min(firsts) if firsts else None, max(lasts) if lasts else None),
        domains=domains,
        by_time=(
            merged[0]
            if merged is not None
            and _seams_ordered(merged[0][1], merged[1], out["start"], out["end"])
            else None
        ),
    )


#: Most (chunk, thread) cells the merge of the chunks' orders tabulates; past it (a hostile export
#: with millions of threads) the outline sorts the ranges again instead.
_MAX_CELLS = 1 << 22


def _merged_order(
    chunks: list[_Chunk],
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None:
    """The chunks' push/pop ranges in (thread, start, -end) order, without a sort: ((threads
    ascending, rows of the merged table, each one's thread code), the seams to check with
    :func:`_seams_ordered`); None past :data:`_MAX_CELLS` cells.

    Each chunk comes sorted by its own thread codes; chunks are consecutive row ranges, so
    putting every thread's part of chunk 0, then of chunk 1, ... one after the other is the order
    a stable sort by thread of the whole table gives. Each row's place is the start of its
    (chunk, thread) cell, counted from a table of counts, plus its rank within the cell."""
    threads = np.unique(np.concatenate([c.threads for c in chunks]))
    if len(threads) * len(chunks) > _MAX_CELLS:
        return None
    codes = [np.searchsorted(threads, c.threads)[c.order_thread] for c in chunks]
    counts = np.stack([np.bincount(g, minlength=len(threads)) for g in codes])
    total = counts.sum(axis=0)
    earlier = np.cumsum(counts, axis=0) - counts  # of the thread, in the chunks before
    cell = (np.cumsum(total) - total) + earlier  # where each (chunk, thread) part begins
    order = np.empty(int(total.sum()), dtype=np.int64)
    base = 0
    for c, g, count, at in zip(chunks, codes, counts, cell, strict=True):
        first_in_chunk = np.cumsum(count) - count
        order[at[g] + np.arange(len(g)) - first_in_chunk[g]] = c.order.astype(np.int64) + base
        base += len(c.start)
        c.order = c.order_thread = np.zeros(0, np.int32)
    seams = cell[(counts > 0) & (earlier > 0)]  # first of a part with a part of its thread before
    tcode = np.repeat(np.arange(len(threads), dtype=np.int64), total)
    return (threads, order, tcode), seams


def _seams_ordered(
    order: np.ndarray, seams: np.ndarray, start: np.ndarray, end: np.ndarray
) -> bool:
    """Whether, at each seam of the merged order (the first range of a chunk's part of a thread,
    after the part of an earlier chunk), the two neighbours are in (start, -end) order. The
    chunks checked everything else; an export whose rows are out of time order across chunks
    fails here and is sorted again, as a single table would have been."""
    cur, prev = order[seams], order[seams - 1]
    s_cur, s_prev = start[cur], start[prev]
    return not bool(((s_cur < s_prev) | ((s_cur == s_prev) & (end[cur] > end[prev]))).any())


def _valid(col: pa.Array) -> np.ndarray:
    return np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), dtype=bool)
