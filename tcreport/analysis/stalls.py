"""GPU idle that a host synchronisation, a pageable copy or a tiny copy caused, per step and op.

The step breakdown says how long the GPU waited; these are the three causes Nsight Systems' expert
rules and nsys-ai name, each proven by where a gap starts or ends, never by a name alone:

* **host synchronisation**: the GPU ran dry while the launching process was inside a call that
  waits for it (``.item()`` is ``aten::item`` / ``aten::_local_scalar_dense``, ``aten::nonzero``,
  a synchronize range or call, a synchronous ``cudaMemcpy``), or right after a device-to-host copy
  (a readback blocks the host until it lands). The host was waiting for the queue to drain, so
  the GPU then waits for the host to launch again: that gap is the sync's cost.
* **pageable copy**: the gap opened by the end of a host-to-device copy from pageable memory
  (``Memcpy HtoD (Pageable -> Device)``): CUDA stages it through a bounce buffer and the host
  blocks, so nothing more was queued. ``pin_memory=True`` with ``non_blocking=True`` avoids it.
* **tiny copies**: the gaps that end at a host-device copy under :data:`TINY_COPY_BYTES` launched
  after the GPU ran dry (the GPU waited for it to be issued), each counted up to the host time of
  the op that issued it: a launch's cost for a few bytes, not whatever else the host did before
  (without launch times or per-call op times nothing is claimed).

A gap counts once, in that order. Each stall names the op: the sync op the host was in (the
innermost), or the op that launched the copy. The idle is per (iteration, GPU), in the window of
the step where the gap opens (:mod:`tcreport.analysis.windows`), so a sync at the end of a step
costs that step. Rules in ``tcreport/rules/st00*`` decide when it is worth a finding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport._arrays import exact_sums
from tcreport.analysis import _codes, host_ranges
from tcreport.analysis.activity import Activity
from tcreport.analysis.gaps import Gaps
from tcreport.schema import MemoryKind

#: Calls and ops that wait for the GPU: explicit synchronisation, reading a GPU value on the
#: host, a synchronous ``cudaMemcpy``, and ops whose output size depends on GPU data.
SYNC = re.compile(
    r"synchroni[sz]e|aten::item\b|_local_scalar_dense|\.item\(|cudaMemcpy(?!Async)|hipMemcpy(?!Async)"
    r"|aten::nonzero|aten::is_nonzero",
    re.IGNORECASE,
)
#: A host-device copy this small is latency, not bandwidth: PCIe moves 64 KiB in ~5 µs, about
#: what launching the copy costs.
TINY_COPY_BYTES = 64 * 1024
#: Stalls kept per (step, GPU) and kind, most idle first.
TOP_OPS = 3


class StallKind(StrEnum):
    SYNC = "host synchronisation"
    PAGEABLE = "pageable copy"
    TINY = "tiny copies"


@dataclass(frozen=True)
class Stall:
    """GPU idle of one (iteration, GPU) caused by one op, of one kind."""

    kind: StallKind
    op: str | None  # the op (or range) on the host; None when nothing recorded names it
    gaps: int  # idle gaps it caused
    idle_ns: int
    copies: int = 0  # pageable / tiny copies: how many ran in the step (a gap or not)
    bytes: int = 0


@dataclass(frozen=True)
class _Copies:
    """Per memory row: pageable host-to-device, device-to-host, tiny host copy; name code."""

    pageable: np.ndarray
    readback: np.ndarray
    tiny: np.ndarray
    bytes: np.ndarray
    op: np.ndarray  # code into names, -1: no op
    op_cpu: np.ndarray  # host time of the launching op's call, -1: unknown
    names: list[str | None]


def _copies(memory: pa.Table, ops: pa.Table | None) -> _Copies:
    kind = memory.column("kind")
    htod = np.asarray(_codes.equals(kind, MemoryKind.HTOD.value).to_numpy(zero_copy_only=False))
    dtoh = np.asarray(_codes.equals(kind, MemoryKind.DTOH.value).to_numpy(zero_copy_only=False))
    pageable = np.asarray(
        _codes.matches(memory.column("name"), r"Pageable").to_numpy(zero_copy_only=False), bool
    )
    size = np.asarray(pc.fill_null(memory.column("bytes"), -1).to_numpy(), np.int64)
    tiny = (htod | dtoh) & (size >= 0) & (size < TINY_COPY_BYTES)
    op, cpu, names = _launching_ops(memory, ops)
    return _Copies(htod & pageable, dtoh, tiny, np.maximum(size, 0), op, cpu, names)


def _launching_ops(
    memory: pa.Table, ops: pa.Table | None
) -> tuple[np.ndarray, np.ndarray, list[str | None]]:
    """Per memory row, the name of the op that launched it (a code; the copy's own name without
    one) and that op call's host time (-1 unless the op row is one call)."""
    own = _codes.codes(memory.column("name"))
    names: list[str | None] = list(own.values.to_pylist())
    code = np.asarray(own.codes, np.int64)
    cpu = np.full(memory.num_rows, -1, np.int64)
    if ops is None or ops.num_rows == 0 or memory.column("op_id").null_count == memory.num_rows:
        return code, cpu, names
    j = _codes.joint(ops.column("op_id"), memory.column("op_id"))
    op_name = _codes.codes(ops.column("name"))
    # The op row of each key (of several, the last, as a fancy assignment leaves it), then of
    # each copy: per copy, not per op (millions of ops, a copy for one in five of them)
    row_of = np.full(j.size, -1, np.int32 if ops.num_rows < 2**31 else np.int64)
    rows = np.arange(ops.num_rows, dtype=row_of.dtype)
    ok = j.ops >= 0
    if ok.all():
        row_of[j.ops] = rows
    else:
        row_of[j.ops[ok]] = rows[ok]
    del rows, ok
    row = np.where(j.other >= 0, row_of[np.maximum(j.other, 0)], -1)
    del row_of
    has = np.flatnonzero(row >= 0)
    at = pa.array(row[has])
    linked = np.full(memory.num_rows, -1, np.int64)
    linked[has] = np.asarray(op_name.codes)[row[has]]
    one_call = pc.fill_null(pc.equal(ops.column("calls").take(at), 1), False)
    op_cpu = pc.if_else(one_call, pc.fill_null(ops.column("cpu_ns").take(at), -1), -1)
    cpu[has] = np.asarray(op_cpu.to_numpy(), np.int64)
    code = np.where(linked >= 0, linked + len(names), code)
    return code, cpu, names + list(op_name.values.to_pylist())


def stalls(
    act: Activity,
    rows: np.ndarray,
    group: np.ndarray,
    gaps: Gaps,
    g_dev: np.ndarray,
    memory: pa.Table | None,
    host: tuple[pa.Table | None, pa.Table | None],
) -> dict[int, tuple[Stall, ...]]:
    """Per group, its stalls (see the module docstring); ``rows``: each interval's activity row.
    The gaps are judged a million at a time: a long run has a gap per launch, and a handful of
    them are stalls."""
    names: list[str | None] = []
    copies: _Copies | None = None
    records: list[tuple[np.ndarray, ...]] = []
    if memory is not None and memory.num_rows and act.memory_row is not None:
        copies = _copies(memory, host[1])
        names = copies.names
        records.append(_copy_rows(act.memory_row[rows], group, copies))
    found = _sync_ops(act, gaps, g_dev, group, host)
    first_sync = len(names)
    if found is not None:
        names = names + found[1]
    parts = [
        _gap_stalls(
            act, rows, group, gaps, slice(a, a + _GAP_SLICE), copies,
            None if found is None else (found[0][a : a + _GAP_SLICE], first_sync),
        )
        for a in range(0, len(gaps), _GAP_SLICE)
    ]  # fmt: skip
    if parts:
        records.insert(0, tuple(np.concatenate(c) for c in zip(*parts, strict=True)))
    return _collect(records, names) if records else {}


#: Gaps judged at once by :func:`stalls`.
_GAP_SLICE = 1 << 20


def _gap_stalls(
    act: Activity,
    rows: np.ndarray,
    group: np.ndarray,
    gaps: Gaps,
    part: slice,
    copies: _Copies | None,
    sync: tuple[np.ndarray, int] | None,
) -> tuple[np.ndarray, ...]:
    """The stall records of the gaps in ``part``: (group, kind, op, idle, 1, 0, 0) per stall."""
    before_rows, after_rows, opened = (
        rows[gaps.before[part]],
        rows[gaps.after[part]],
        gaps.start[part],
    )
    kind = np.full(opened.size, -1, np.int8)  # index into list(StallKind)
    code = np.full(opened.size, -1, np.int64)
    length = gaps.length[part].copy()
    if copies is not None and act.memory_row is not None:
        before, after = act.memory_row[before_rows], act.memory_row[after_rows]
        bm, am = np.maximum(before, 0), np.maximum(after, 0)
        late = (act.launch[after_rows] > opened) if act.launch is not None else False
        tiny = (after >= 0) & copies.tiny[am] & late & (copies.op_cpu[am] > 0)
        for k, hit, at in (
            (_PAGEABLE, (before >= 0) & copies.pageable[bm], bm),
            (_SYNC, (before >= 0) & copies.readback[bm], bm),
            (_TINY, tiny, am),
        ):
            new = hit & (kind < 0)
            kind[new], code[new] = k, copies.op[at[new]]
        capped = kind == _TINY
        length[capped] = np.minimum(length[capped], copies.op_cpu[am[capped]])
    if sync is not None:
        found, first = sync
        by_host = (found >= 0) & (kind != _PAGEABLE)  # a pageable copy's gap stays the copy's
        kind[by_host], code[by_host] = _SYNC, found[by_host] + first
        length[by_host] = gaps.length[part][by_host]
    keep = np.flatnonzero(kind >= 0)
    g = group[gaps.before[part][keep]]
    ones = np.ones(g.size, np.int64)
    return (g, kind[keep].astype(np.int64), code[keep], length[keep], ones, 0 * ones, 0 * ones)


_SYNC, _PAGEABLE, _TINY = range(3)  # list(StallKind) order


def _copy_rows(
    memory_row: np.ndarray, group: np.ndarray, copies: _Copies
) -> tuple[np.ndarray, ...]:
    """One record per pageable or tiny copy in a step, a gap or not: the findings say how many
    copies ran and how much they moved."""
    mm = np.maximum(memory_row, 0)
    is_mem = memory_row >= 0
    out = []
    for k, flag in ((_PAGEABLE, copies.pageable), (_TINY, copies.tiny)):
        sel = np.flatnonzero(is_mem & flag[mm])
        z = np.zeros(sel.size, np.int64)
        out.append((group[sel], z + k, copies.op[mm[sel]], z, z, z + 1, copies.bytes[mm[sel]]))
    return tuple(np.concatenate(c) for c in zip(*out, strict=True))


def _sync_ops(
    act: Activity,
    gaps: Gaps,
    g_dev: np.ndarray,
    group: np.ndarray,
    host: tuple[pa.Table | None, pa.Table | None],
) -> tuple[np.ndarray, list[str | None]] | None:
    """Per gap, the innermost synchronising host range/op open on the GPU's launching process when
    the GPU ran dry (a code into the returned names, -1: none)."""
    if len(gaps) == 0:
        return None
    tables = [_named_sync(t) for t in host]
    if all(t is None or t.num_rows == 0 for t in tables):
        return None
    found = host_ranges.host_intervals(tables[0], tables[1], np.sort(gaps.start))
    if found is None:
        return None
    gap_dev = g_dev[group[gaps.before]]
    return host_ranges.codes_at(gap_dev, gaps.start, act, found), found.names


def _named_sync(table: pa.Table | None) -> pa.Table | None:
    """The rows of a ranges or ops table whose name is a synchronising call or op (the regex runs
    once per distinct name): a few per step, where the ops are millions."""
    if table is None or table.num_rows == 0:
        return None
    c = _codes.codes(table.column("name"))
    hit = np.array([bool(v and SYNC.search(v)) for v in c.values.to_pylist()] + [False], bool)
    rows = hit[np.where(c.codes >= 0, c.codes, -1)]
    return table.filter(pa.array(rows)) if rows.any() else None


def _collect(
    records: list[tuple[np.ndarray, ...]], names: list[str | None]
) -> dict[int, tuple[Stall, ...]]:
    """Sum (group, kind, op, idle, gaps, copies, bytes) records per (group, kind, op); keep the
    :data:`TOP_OPS` with most idle (then most copies) per (group, kind)."""
    g, kind, code, idle, gaps, copies, size = (
        np.concatenate(c) for c in zip(*records, strict=True)
    )
    if g.size == 0:
        return {}
    width, n_kinds = len(names) + 1, len(StallKind)
    key = (g.astype(np.int64) * n_kinds + kind) * width + (code + 1)
    uk, inv = np.unique(key, return_inverse=True)
    sums = [
        exact_sums(inv, v.astype(np.int64), uk.size).tolist() for v in (idle, gaps, copies, size)
    ]
    kinds = list(StallKind)
    out: dict[int, list[Stall]] = {}
    for k, ns, n, c, b in sorted(
        zip(uk.tolist(), *sums, strict=True), key=lambda r: (-r[1], -r[3], r[0])
    ):  # one per (step, kind, op): few
        rest, op = divmod(k, width)
        grp, kd = divmod(rest, n_kinds)
        lst = out.setdefault(grp, [])
        if sum(1 for s in lst if s.kind == kinds[kd]) < TOP_OPS:
            lst.append(Stall(kinds[kd], names[op - 1] if op else None, n, ns, c, b))
    return {grp: tuple(v) for grp, v in out.items()}
