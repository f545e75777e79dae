"""NVTX op attribution for Nsight Systems exports: which op launched each kernel.

A kernel joins its CUDA runtime call by correlation id; the call lies inside NVTX push/pop ranges
on the same thread, and the outermost range that follows a known op convention is the op (the
framework-level call the user wrote, as DLProf counts them: ``conv2d`` owns the ``aten::cudnn_
convolution`` inside it and every kernel that launched there). Other ranges give the scope path or
land in the ``ranges`` table. Conventions understood:

* DLProf's PyTorch plugin (``nvidia_dlprof_pytorch_nvtx``): Python-dict op records ``{'mod': ...,
  'op': 'conv2d', 'args': [{'shape': (..), 'dtype': 'float32'}]}`` inside marker ranges whose
  ``funcStack`` is the module path (``(2)`` suffixes become DLProf's ``[2]``);
* ``torch.autograd.profiler.emit_nvtx`` / ``nsys --pytorch=autograd-nvtx|autograd-shapes-nvtx``:
  ``aten::mm, seq = 5, op_id = 871, sizes = [[4, 256], [256, 512]], input_op_ids = [...]`` (every
  part after the name optional). Names with a sequence number, shapes, or a ``namespace::op`` form
  are ops; ``record_function`` labels that come through the same path (``FSDP::pre_forward (...)``,
  ``ProfilerStep#3``) are ranges;
* TensorFlow's ``TF_ENABLE_NVTX_RANGES`` detailed JSON records ``{"op": "MatMul", "name": ...}``
  (format from TensorFlow's sources, not checked against a real export).

Nesting is computed with sorts and binary searches per depth level, never per range in Python:
exports with tens of millions of ranges are normal.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

OTHER, DLPROF_OP, DLPROF_MARKER, TORCH_OP, TF_OP = range(5)
_TORCH = (
    r"^(?P<name>.+?)(?:, seq = (?P<seq>\d+))?(?:, op_id = (?P<opid>\d+))?"
    r"(?:, sizes = (?P<sizes>\[.*?\]))?(?:, input_op_ids = \[.*\])?$"
)
_NAMESPACED = r"^[A-Za-z_][\w.]*::[A-Za-z_]\w*$"
_FUNC_STACK = re.compile(r"'funcStack': '([^']*)'")
_DEDUP = re.compile(r"\((\d+)\)(?=/|$)")
_ANGLE = re.compile(r"<([\w.]+)>")
_TF_JSON = re.compile(r'^\{"op":\s*"([^"]+)",\s*"name":\s*"([^"]*)"')


class DbLike(Protocol):
    def columns(self, table: str) -> list[str]: ...
    def rows(self, sql: str, params: tuple[str, ...] = ()) -> list[tuple[object, ...]]: ...
    def arrow(self, sql: str, names: list[str]) -> pa.Table: ...


@dataclass(frozen=True)
class Attribution:
    kernel_op_id: pa.Array  # string per kernel row, null where no op encloses the launch
    memory_op_id: pa.Array
    ops: pa.Table | None  # canonical-ish columns, None when the export has no NVTX
    ranges: pa.Table | None


def pid_of(gtid: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """nsys packs ``globalPid``/``globalTid`` as ``vm << 56 | pid << 24 | tid``."""
    return pc.bit_wise_and(pc.shift_right(gtid, 24), 0xFFFFFF)


def _np(col: pa.ChunkedArray | pa.Array, fill: int = -1) -> np.ndarray:
    return np.asarray(pc.fill_null(col, fill).to_numpy(zero_copy_only=False), dtype=np.int64)


def read_ranges(
    db: DbLike, sid_ids: pa.Array, sid_values: pa.Array
) -> tuple[pa.Table, dict[int, str]] | None:
    """Push/pop ranges (eventType 59) with their text, inline or via ``textId``."""
    cols = set(db.columns("NVTX_EVENTS"))
    if not {"start", "end", "eventType", "globalTid"} <= cols:
        return None
    text = '"text"' if "text" in cols else "NULL"
    text_id = "textId" if "textId" in cols else "NULL"
    domain = "domainId" if "domainId" in cols else "0"
    raw = db.arrow(
        f'SELECT start, "end", globalTid, {domain}, {text_id}, {text} FROM NVTX_EVENTS '
        'WHERE eventType = 59 AND "end" IS NOT NULL AND "end" >= start AND globalTid IS NOT NULL',
        ["start", "end", "gtid", "domain", "text_id", "text"],
    )
    inline = raw.column("text").cast(pa.string())
    by_id = sid_values.take(pc.index_in(raw.column("text_id").cast(pa.int64()), value_set=sid_ids))
    table = pa.table(
        {
            "start": raw.column("start").cast(pa.int64()),
            "end": raw.column("end").cast(pa.int64()),
            "gtid": raw.column("gtid").cast(pa.int64()),
            "domain": pc.fill_null(raw.column("domain").cast(pa.int64()), 0),
            "text": pc.fill_null(pc.coalesce(inline, by_id), ""),
        }
    )
    names: dict[int, str] = {}
    if "domainId" in cols and "text" in cols:  # nvtxDomainCreate (75) names each domain
        for d, t in db.rows('SELECT domainId, "text" FROM NVTX_EVENTS WHERE eventType = 75'):
            if isinstance(d, int) and t:
                names[d] = str(t)
    return table, names


# --- parsing the distinct strings ------------------------------------------------------------


@dataclass
class _Parsed:
    kind: np.ndarray  # per distinct text
    label: list[str]  # op type for ops, cleaned name for other ranges
    dtype: list[str | None]
    shapes: list[str | None]
    func_stack: list[str | None]  # DLProf markers: module path in DLProf's spelling


def _parse(texts: pa.Array, tf_domain: bool) -> _Parsed:
    n = len(texts)
    kind = np.full(n, OTHER, dtype=np.int8)
    m = pc.extract_regex(texts, _TORCH)
    name = m.field("name")
    label: list[str] = [
        s if s is not None else t for s, t in zip(name.to_pylist(), texts.to_pylist(), strict=True)
    ]
    # RE2 gives "" for an optional group that did not take part
    has_seq = pc.or_(pc.not_equal(m.field("seq"), ""), pc.not_equal(m.field("sizes"), ""))
    namespaced = pc.match_substring_regex(name, _NAMESPACED)
    is_torch = pc.fill_null(pc.or_(has_seq, namespaced), False).to_numpy(zero_copy_only=False)
    kind[is_torch] = TORCH_OP
    shapes: list[str | None] = [v or None for v in m.field("sizes").to_pylist()]
    dtype: list[str | None] = [None] * n
    func_stack: list[str | None] = [None] * n
    dictish = pc.starts_with(texts, "{").to_numpy(zero_copy_only=False)
    raw = texts.to_pylist()
    for i in np.flatnonzero(dictish):
        _parse_dict(str(raw[i]), int(i), kind, label, dtype, shapes, func_stack)
    if tf_domain:
        tf = (
            pc.extract_regex(texts, r"^(?P<type>[A-Z]\w*): (?P<node>\S+)$")
            .field("type")
            .to_pylist()
        )
        for j, t in enumerate(tf):
            if t and kind[j] == OTHER:
                kind[j], label[j] = TF_OP, t
    return _Parsed(kind, label, dtype, shapes, func_stack)


def _parse_dict(
    text: str,
    i: int,
    kind: np.ndarray,
    label: list[str],
    dtype: list[str | None],
    shapes: list[str | None],
    func_stack: list[str | None],
) -> None:
    """DLProf plugin records are Python literals; TensorFlow's detailed records are JSON."""
    tf = _TF_JSON.match(text)
    if tf:
        kind[i], label[i] = TF_OP, tf.group(1)
        return
    fs = _FUNC_STACK.search(text)
    if fs and text.startswith("{'traceMarker'"):
        kind[i] = DLPROF_MARKER
        func_stack[i] = _DEDUP.sub(r"[\1]", _ANGLE.sub(r"\1", fs.group(1)))
        return
    if not text.startswith("{'mod'"):
        return
    try:
        rec = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return
    if not isinstance(rec, dict) or not isinstance(rec.get("op"), str):
        return
    kind[i], label[i] = DLPROF_OP, rec["op"]
    args = [a for a in rec.get("args", []) if isinstance(a, dict)]
    tensors = [a for a in args if "shape" in a]
    if tensors:
        shapes[i] = "[" + ", ".join(str(list(a["shape"])) for a in tensors) + "]"
    dtypes = [str(a["dtype"]) for a in args if a.get("dtype")]
    dtype[i] = dtypes[0] if dtypes else None


# --- nesting ---------------------------------------------------------------------------------


class _Nesting:
    """Properly nested ranges of many threads, sorted by (thread, start, -end).

    Depth is "ranges opened before me on my thread minus ranges closed by my start"; the parent
    is the last range before me one level up. Both are binary searches over keys that pack the
    thread in the high part, so no per-range Python runs.
    """

    def __init__(self, tcode: np.ndarray, start: np.ndarray, end: np.ndarray) -> None:
        self.n = len(start)
        times = np.concatenate([start, end])
        self._tmin = int(times.min()) if len(times) else 0
        span = (int(times.max()) - self._tmin) if len(times) else 0
        self._uniq: np.ndarray | None = None
        if (int(tcode.max()) + 1 if len(tcode) else 1) * (span + 3) >= 2**62:
            self._uniq = np.unique(times)  # fall back to ranks of the distinct times
            span = 2 * len(self._uniq)
        self._m = span + 3
        self.key_start = self._key(tcode, start)
        self.key_end = np.sort(self._key(tcode, end))
        # where each thread's keys begin, searched once per thread rather than once per range
        bases = np.arange((int(tcode.max()) + 1) if self.n else 0, dtype=np.int64) * self._m
        self._first_start = np.searchsorted(self.key_start, bases, "left")
        self._first_end = np.searchsorted(self.key_end, bases, "left")
        first = self._first_start[tcode]
        ends_before = (
            np.searchsorted(self.key_end, self.key_start, "right") - self._first_end[tcode]
        )
        self.depth = np.maximum(np.arange(self.n) - first - ends_before, 0)
        order = np.argsort(self.depth, kind="stable")
        counts = np.bincount(self.depth) if self.n else np.zeros(0, dtype=np.int64)
        self.levels = np.split(order, np.cumsum(counts)[:-1]) if self.n else []
        self.parent = self._last_at_depth(np.arange(self.n), self.depth - 1)

    def _key(self, tcode: np.ndarray, t: np.ndarray) -> np.ndarray:
        if self._uniq is None:
            off = np.clip(t - self._tmin + 1, 0, self._m - 1)
        else:
            r = np.searchsorted(self._uniq, t, "left")
            exact = (r < len(self._uniq)) & (self._uniq[np.minimum(r, len(self._uniq) - 1)] == t)
            off = 2 * r + np.where(exact, 2, 1)
        key: np.ndarray = tcode * self._m + off
        return key

    def _last_at_depth(self, before: np.ndarray, want: np.ndarray) -> np.ndarray:
        out = np.full(len(before), -1, dtype=np.int64)
        order = np.argsort(want, kind="stable")
        sorted_want = want[order]
        for d in np.unique(sorted_want[sorted_want >= 0]):
            lo, hi = np.searchsorted(sorted_want, [d, d + 1])
            sel = order[lo:hi]
            pos = self.levels[int(d)]
            k = np.searchsorted(pos, before[sel], "left") - 1
            out[sel] = np.where(k >= 0, pos[np.maximum(k, 0)], -1)
        return out

    def innermost(self, tcode: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Innermost range open at time ``t`` on thread ``tcode`` (-1: none; tcode -1: unknown)."""
        if self.n == 0:
            return np.full(len(t), -1, dtype=np.int64)
        valid = tcode >= 0
        valid &= tcode < len(self._first_start)
        tc = np.where(valid, tcode, 0)
        key = self._key(tc, t)
        p = np.searchsorted(self.key_start, key, "right")
        opened = p - self._first_start[tc]
        closed = np.searchsorted(self.key_end, key, "right") - self._first_end[tc]
        depth = np.where(valid, opened - closed, 0)
        return self._last_at_depth(p, depth - 1)


# --- attribution -----------------------------------------------------------------------------


def attribute(
    nvtx: tuple[pa.Table, dict[int, str]] | None,
    runtime: pa.Table,
    kernels: pa.Table,
    memory: pa.Table,
) -> Attribution:
    """Op of every kernel and memory row (through ``_rt``, the launching runtime row), the op
    rows themselves, and the non-op ranges."""
    if nvtx is None or nvtx[0].num_rows == 0:
        return Attribution(
            pa.nulls(kernels.num_rows, pa.string()),
            pa.nulls(memory.num_rows, pa.string()),
            None,
            None,
        )
    table, domains = nvtx
    gt0, st0, en0 = _np(table["gtid"]), _np(table["start"]), _np(table["end"])
    threads = np.unique(gt0)
    order = np.lexsort((-en0, st0, np.searchsorted(threads, gt0)))
    table = table.take(pa.array(order))
    gt, st, en = gt0[order], st0[order], en0[order]
    tcode = np.searchsorted(threads, gt)
    n = len(st)

    positive = np.flatnonzero(en > st)
    nest = _Nesting(tcode[positive], st[positive], en[positive])
    parent = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    parent[positive] = np.where(nest.parent >= 0, positive[np.maximum(nest.parent, 0)], -1)
    depth[positive] = nest.depth
    zero = np.flatnonzero(en <= st)  # zero-length ranges are leaves: they hold no launch
    zp = nest.innermost(tcode[zero], st[zero])
    parent[zero] = np.where(zp >= 0, positive[np.maximum(zp, 0)], -1)
    depth[zero] = np.where(zp >= 0, nest.depth[np.maximum(zp, 0)] + 1, 0)

    enc = pc.dictionary_encode(table["text"]).combine_chunks()
    tf_domain = any("tensorflow" in v.lower() for v in domains.values())
    parsed = _parse(enc.dictionary, tf_domain)
    tix = _np(enc.indices)
    kind = parsed.kind[tix]
    is_op = (kind == DLPROF_OP) | (kind == TORCH_OP) | (kind == TF_OP)
    labels = pa.array(parsed.label, pa.string()).take(pa.array(tix))

    # Walk the levels once: outermost op above each range, nearest plain ancestor, scope paths.
    owner = np.full(n, -1, dtype=np.int64)
    plain = np.full(n, -1, dtype=np.int64)
    paths = np.full(n, None, dtype=object)
    by_depth = np.argsort(depth, kind="stable")
    bounds = np.cumsum(np.bincount(depth))
    for idx in np.split(by_depth, bounds[:-1]):
        par = parent[idx]
        has = par >= 0
        pp = np.maximum(par, 0)
        inherited = np.where(has, owner[pp], -1)
        owner[idx] = np.where(inherited >= 0, inherited, np.where(is_op[idx], idx, -1))
        plain[idx] = np.where(has & (kind[pp] == OTHER), pp, np.where(has, plain[pp], -1))
        mine = idx[kind[idx] == OTHER]
        if len(mine):
            up = plain[mine]
            prefix = pa.array(np.where(up >= 0, paths[np.maximum(up, 0)], None), pa.string())
            joined = pc.binary_join_element_wise(
                prefix, labels.take(pa.array(mine)), "/", null_handling="skip"
            )
            paths[mine] = np.asarray(joined.to_pylist(), dtype=object)

    op_rows = np.flatnonzero(is_op & (owner == np.arange(n)))
    op_rows = op_rows[np.lexsort((tcode[op_rows], st[op_rows]))]
    row_of_range = np.full(n, -1, dtype=np.int64)
    row_of_range[op_rows] = np.arange(len(op_rows))

    def op_row(rt_col: pa.ChunkedArray) -> np.ndarray:
        rt = _np(rt_col)
        ok = rt >= 0
        r = np.maximum(rt, 0)
        rg = _np(runtime["gtid"])[r] if runtime.num_rows else np.zeros(len(rt), dtype=np.int64)
        rs = _np(runtime["start"])[r] if runtime.num_rows else np.zeros(len(rt), dtype=np.int64)
        tq = np.searchsorted(threads, rg)
        known = ok & (tq < len(threads)) & (threads[np.minimum(tq, len(threads) - 1)] == rg)
        inner = nest.innermost(np.where(known, tq, -1), rs)
        rng = np.where(inner >= 0, positive[np.maximum(inner, 0)], -1)
        own = np.where(rng >= 0, owner[np.maximum(rng, 0)], -1)
        return np.where(own >= 0, row_of_range[np.maximum(own, 0)], -1)

    k_row = op_row(kernels["_rt"]) if kernels.num_rows else np.zeros(0, dtype=np.int64)
    m_row = op_row(memory["_rt"]) if memory.num_rows else np.zeros(0, dtype=np.int64)
    ops, op_ids = _ops_table(
        op_rows,
        table,
        labels,
        parsed,
        tix,
        kind,
        parent,
        paths,
        plain,
        kernels,
        memory,
        k_row,
        m_row,
    )
    ranges = _ranges_table(
        np.flatnonzero((kind == OTHER) & (owner < 0)), table, labels, domains, depth
    )
    return Attribution(_take_ids(op_ids, k_row), _take_ids(op_ids, m_row), ops, ranges)


def _take_ids(op_ids: pa.Array, rows: np.ndarray) -> pa.Array:
    return op_ids.take(pa.array(np.where(rows >= 0, rows, 0), mask=rows < 0))


def _ops_table(
    op_rows: np.ndarray,
    table: pa.Table,
    labels: pa.Array,
    parsed: _Parsed,
    tix: np.ndarray,
    kind: np.ndarray,
    parent: np.ndarray,
    paths: np.ndarray,
    plain: np.ndarray,
    kernels: pa.Table,
    memory: pa.Table,
    k_row: np.ndarray,
    m_row: np.ndarray,
) -> tuple[pa.Table, pa.Array]:
    rows = pa.array(op_rows, pa.int64())
    n_ops = len(op_rows)
    op_type = labels.take(rows)
    # Scope: a DLProf record's marker gives the module path; otherwise the plain ranges around it.
    par = parent[op_rows]
    marker = (par >= 0) & (kind[np.maximum(par, 0)] == DLPROF_MARKER)
    fs_all = pa.array(parsed.func_stack, pa.string())
    fs = fs_all.take(pa.array(np.where(marker, tix[np.maximum(par, 0)], 0), mask=~marker))
    up = plain[op_rows]
    scope_plain = pa.array(np.where(up >= 0, paths[np.maximum(up, 0)], None), pa.string())
    scope = pc.coalesce(pc.replace_substring_regex(fs, r"/[^/]*$", ""), scope_plain)
    name = pc.coalesce(
        fs, pc.binary_join_element_wise(scope_plain, op_type, "/", null_handling="skip")
    )
    # op_id "<type>_<n>": n counts instances of the type in start order (DLProf's CONV2D_1, ...).
    codes = _np(pc.dictionary_encode(op_type).indices)
    by_type = np.argsort(codes, kind="stable")
    sorted_codes = codes[by_type]
    first = np.searchsorted(sorted_codes, sorted_codes, "left")
    nth = np.empty(n_ops, dtype=np.int64)
    nth[by_type] = np.arange(n_ops) - first + 1
    op_ids = pc.binary_join_element_wise(op_type, pa.array(nth).cast(pa.string()), "_")

    k_ok = k_row >= 0
    k_dur = _np(kernels["duration_ns"], 0) if kernels.num_rows else np.zeros(0, dtype=np.int64)
    gpu = np.bincount(k_row[k_ok], weights=k_dur[k_ok], minlength=n_ops).astype(np.int64)
    calls = np.bincount(k_row[k_ok], minlength=n_ops).astype(np.int64)
    m_ok = m_row >= 0
    m_dur = _np(memory["duration_ns"], 0) if memory.num_rows else np.zeros(0, dtype=np.int64)
    mem = np.bincount(m_row[m_ok], weights=m_dur[m_ok], minlength=n_ops).astype(np.int64)
    device = np.full(n_ops, np.iinfo(np.int64).max, dtype=np.int64)
    if k_ok.any():
        np.minimum.at(device, k_row[k_ok], _np(kernels["device_id"])[k_ok])
    gtid = table["gtid"].take(rows)
    shapes = pa.array(parsed.shapes, pa.string()).take(pa.array(tix[op_rows]))
    ops = pa.table(
        {
            "op_id": op_ids,
            "name": name,
            "type": op_type,
            "scope": scope,
            "direction": pc.if_else(
                pc.match_substring_regex(op_type, r"Backward\d*$"), "bprop", None
            ),
            "dtype": pa.array(parsed.dtype, pa.string()).take(pa.array(tix[op_rows])),
            "input_shapes": shapes,
            "device_id": pa.array(device, mask=device == np.iinfo(np.int64).max),
            "process_id": pid_of(gtid),
            "thread_id": pc.bit_wise_and(gtid, 0xFFFFFF),
            "start_ns": table["start"].take(rows),
            "calls": pa.array(np.ones(n_ops, dtype=np.int64)),
            "cpu_ns": pc.subtract(table["end"].take(rows), table["start"].take(rows)),
            "gpu_ns": pa.array(gpu),
            "gpu_total_ns": pa.array(gpu + mem),
            "kernel_calls": pa.array(calls),
        }
    )
    return ops, op_ids


def _ranges_table(
    rows_np: np.ndarray,
    table: pa.Table,
    labels: pa.Array,
    domains: dict[int, str],
    depth: np.ndarray,
) -> pa.Table:
    rows = pa.array(rows_np, pa.int64())
    dom = _np(table["domain"].take(rows), 0)
    known = np.array(sorted(domains), dtype=np.int64)
    names = pa.array([domains[int(k)] for k in known], pa.string())
    pos = pc.index_in(pa.array(dom), value_set=pa.array(known, pa.int64()))
    unnamed = pc.if_else(
        pc.equal(pa.array(dom), 0),
        None,
        pc.binary_join_element_wise("domain ", pa.array(dom).cast(pa.string()), ""),
    )
    gtid = table["gtid"].take(rows)
    return pa.table(
        {
            "name": labels.take(rows),
            "domain": pc.coalesce(names.take(pos), unnamed),
            "process_id": pid_of(gtid),
            "thread_id": pc.bit_wise_and(gtid, 0xFFFFFF),
            "start_ns": table["start"].take(rows),
            "end_ns": table["end"].take(rows),
            "depth": pa.array(depth[rows_np].astype(np.int32)),
        }
    )
