"""NVTX op attribution for Nsight Systems exports: which op launched each kernel.

A kernel joins its CUDA runtime call by correlation id; the call lies inside NVTX push/pop ranges
on the same thread, and the outermost range that follows a known op convention is the op (the
framework-level call the user wrote, as DLProf counts them: ``conv2d`` owns the ``aten::cudnn_
convolution`` inside it and every kernel that launched there). Other ranges give the scope path or
land in the ``ranges`` table, as do start/end ranges (``nvtxRangeStart``, eventType 60), which may
cross threads and so never nest. Conventions understood:

* DLProf's PyTorch plugin (``nvidia_dlprof_pytorch_nvtx``): Python-dict op records ``{'mod': ...,
  'op': 'conv2d', 'args': [{'shape': (..), 'dtype': 'float32'}]}`` inside marker ranges whose
  ``funcStack`` is the module path (``(2)`` suffixes become DLProf's ``[2]``);
* ``torch.autograd.profiler.emit_nvtx`` / ``nsys --pytorch=autograd-nvtx|autograd-shapes-nvtx``:
  ``aten::mm, seq = 5, op_id = 871, sizes = [[4, 256], [256, 512]], input_op_ids = [...]`` (every
  part after the name optional). Names with a sequence number, shapes, or a ``namespace::op`` form
  are ops; ``record_function`` labels that come through the same path (``FSDP::pre_forward (...)``,
  ``ProfilerStep#3``) are ranges;
* TensorFlow's ``TF_ENABLE_NVTX_RANGES`` (NVIDIA's builds): ``MatMul: dense/MatMul`` push/pop
  ranges in the ``tensorflow-core`` domain (ops only there), or detailed records ``{"op":
  "MatMul", "name": ..., "args": [..], "attrs": {..}}``; container ops (``_XlaRun``,
  ``StatefulPartitionedCall``) are scope, not ops (:mod:`tcreport.ingest.nsys.nvtx_text`). Formats
  from TensorFlow's sources, not checked against a real export.

Exports hold tens of millions of ranges, most of them inside an op (``aten::empty`` in
``aten::linear``) where nothing is read from them. So one pass in time order per thread marks the
ranges inside an op and drops them; the full nesting (depth, parent, scope path) is computed only
for what is left: the outermost ops and the ranges around them. Texts are parsed once per distinct
string per scan chunk, never per range, and every step is numpy or Arrow, never Python per range.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport._arrays import Handoff
from tcreport._arrays import int64s as _np
from tcreport.ingest.common.memory import release_free_memory
from tcreport.ingest.nsys.nvtx_nesting import (
    Nesting,
    find_open,
    inside_op,
    thread_codes,
    time_order,
)
from tcreport.ingest.nsys.nvtx_scan import Ranges
from tcreport.ingest.nsys.nvtx_text import DLPROF_MARKER, OTHER, Parsed, is_op
from tcreport.ingest.nsys.tables import (
    Launches,
    op_id_column,
    op_ids,
    ops_columns,
    ops_names,
    ranges_table,
)

_NONE = np.zeros(0, dtype=np.int64)
#: Leaves (ops) placed in the nesting at a time.
_LEAF_BLOCK = 1 << 20


@dataclass(frozen=True)
class Attribution:
    kernel_op_id: pa.Array  # op_id per kernel row, null where no op encloses the launch
    memory_op_id: pa.Array
    ops: pa.Table | None  # canonical-ish columns, None when the export has no push/pop ranges
    ranges: pa.Table | None


# --- attribution -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Outline:
    """What attribution needs from the NVTX ranges, worked out without looking at any kernel
    (the reader makes it after the launch joins): the outermost ops, in ops-table order, with the
    codes their names are made from, and those of them that hold launches, per thread."""

    threads: np.ndarray
    top: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # thread, start, end, table row
    start: np.ndarray
    end: np.ndarray
    gtid: np.ndarray
    code: np.ndarray  # text of each op
    marker: np.ndarray  # text of the DLProf marker around it, -1: none
    scope_path: np.ndarray  # into paths, -1: none
    paths: list[str]
    labels: pa.Array
    lab_of: np.ndarray  # label code of each parsed text
    parsed: Parsed
    ranges: pa.Table
    push_pop: bool  # False: start/end ranges only, which say nothing about ops


def outline(nvtx: Ranges) -> Outline:
    """What attribution needs of ``nvtx``, whose columns are emptied once read (the caller
    holds no other use for them: the reader's ranges of the export)."""
    labels = pc.dictionary_encode(nvtx.parsed.label)
    lab_of = _np(labels.indices)
    threads, out = _outer(nvtx)
    release_free_memory()  # the sort of every range is over; what follows is on the outermost
    rows, tcode, st, en, op = out
    del out  # else the tuple keeps each array alive to the end, past each del below
    code = nvtx.code[rows]
    kind = nvtx.parsed.kind[code]
    # What the ops and ranges tables need of every range, taken now: the ranges' columns (~35 B
    # a range left after the scan) then go before the nesting's arrays are made, where the
    # outline peaks (the caller has no other use for them).
    others = np.flatnonzero(kind == OTHER)
    op_rows = np.flatnonzero(op)
    op_rows = op_rows[np.argsort(st[op_rows], kind="stable")]  # start order, then thread order
    plain_ranges = _subset(nvtx, np.concatenate([rows[others], np.flatnonzero(nvtx.start_end)]))
    taken = rows[op_rows]
    op_start, op_end, op_gtid = nvtx.start[taken], nvtx.end[taken], nvtx.gtid[taken]
    del taken, rows
    push_pop = not nvtx.start_end.all()
    nvtx.start = nvtx.end = nvtx.gtid = nvtx.domain = nvtx.code = _NONE
    nvtx.start_end = np.zeros(0, dtype=bool)

    # Nesting of the non-op ranges left; ops and zero-length ranges hang below it as leaves.
    around = np.flatnonzero(~op & (en > st))
    nest = Nesting(tcode[around], st[around], en[around])
    parent = np.full(len(code), -1, dtype=np.int64)
    depth = np.zeros(len(code), dtype=np.int64)
    parent[around] = np.where(nest.parent >= 0, around[np.maximum(nest.parent, 0)], -1)
    depth[around] = nest.depth
    leaves = np.flatnonzero(op | (en <= st))
    # every op is a leaf (millions): a block at a time, so that the lookups' temporaries stay
    # a block's, not 40-50 B a leaf beside the outline's peak
    for at in range(0, len(leaves) if len(around) else 0, _LEAF_BLOCK):
        block = leaves[at : at + _LEAF_BLOCK]
        inner = nest.innermost(tcode[block], st[block])
        parent[block] = np.where(inner >= 0, around[np.maximum(inner, 0)], -1)
        depth[block] = np.where(inner >= 0, nest.depth[np.maximum(inner, 0)] + 1, 0)
    # (no range around them: every range is an op, as in an autograd-nvtx run without a range
    # of the user's own; parent -1 and depth 0 as filled in)
    del around, nest, leaves
    plain, path, paths = _paths(parent, depth, kind, lab_of[code], labels.dictionary)
    # the plain ranges come first in plain_ranges, the start/end ranges after them
    ranges = ranges_table(
        plain_ranges, np.arange(len(others)), depth[others], lab_of, labels.dictionary
    )
    del others, depth, plain_ranges
    par = parent[op_rows]
    marker = np.where((par >= 0) & (kind[np.maximum(par, 0)] == DLPROF_MARKER), code[par], -1)
    up = plain[op_rows]
    scope_path = np.where(up >= 0, path[np.maximum(up, 0)], -1)
    del par, up, parent, plain, path, kind

    table_row = np.full(len(code), -1, dtype=np.int64)
    table_row[op_rows] = np.arange(len(op_rows))
    top = np.flatnonzero(op & (en > st))  # disjoint per thread, in (thread, start) order
    tops = (tcode[top], st[top], en[top], table_row[top])
    del top, table_row, tcode, st, en, op
    return Outline(
        threads, tops, op_start, op_end, op_gtid, code[op_rows], marker,
        scope_path, paths, labels.dictionary, lab_of, nvtx.parsed, ranges, push_pop,
    )  # fmt: skip


def attribute(
    outline: Handoff[Outline | None], launches: Handoff[tuple[Launches, Launches]]
) -> Attribution:
    """Op of every kernel and memory row (through the thread and time of its launching call), the
    op rows themselves, and the non-op ranges. The outline and the kernels' and copies' launches
    are handed off (:class:`Handoff`) so that their arrays, a few hundred MiB on a big export, go
    as soon as they are used."""
    nvtx = outline.take()
    kernels, memory = launches.take()
    if nvtx is None:
        return Attribution(_no_op(len(kernels.time)), _no_op(len(memory.time)), None, None)
    k_row = _op_row(kernels, nvtx.threads, *nvtx.top)
    m_row = _op_row(memory, nvtx.threads, *nvtx.top)
    nvtx = dataclasses.replace(nvtx, top=(_NONE,) * 4)  # the top ops' keys (~30 B an op) go
    ops = ops_columns(nvtx.start, nvtx.end, nvtx.gtid, k_row, m_row, kernels, memory)
    del kernels, memory  # the launching threads (8 B a row) go before the strings are made
    code, lab_of, labels, push_pop, ranges = (
        nvtx.code, nvtx.lab_of, nvtx.labels, nvtx.push_pop, nvtx.ranges,
    )  # fmt: skip
    # Two string jobs that share nothing, one after the other: side by side (Arrow builds
    # strings without the GIL) their temporaries added up to the reader's peak (x1000: ~1.65
    # GiB against ~1.46 GiB), for the same CPU. The name columns first, so that the rest of the
    # outline goes before the op ids are made.
    names = ops_names(code, nvtx.marker, nvtx.scope_path, nvtx.paths, labels, lab_of, nvtx.parsed)
    del nvtx
    ids = op_ids(lab_of[code], labels)
    # One dictionary for the three op_id columns: analysis then joins kernels to ops on
    # the indices (analysis._codes.joint) instead of hashing millions of id strings.
    k_col, m_col = op_id_column(ids, k_row), op_id_column(ids, m_row)
    del k_row, m_row
    ops["op_id"] = op_id_column(ids, np.arange(len(ids)))
    ops |= names
    if not push_pop:
        return Attribution(_no_op(len(k_col)), _no_op(len(m_col)), None, ranges)
    return Attribution(k_col, m_col, pa.table(ops), ranges)


def _op_row(
    launch: Launches,
    threads: np.ndarray,
    tcode: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    table_row: np.ndarray,
) -> np.ndarray:
    """Ops-table row of the outermost op open on the launching thread at the launch (-1: none).
    An export whose ranges hold no op at all (``train_step``, MPI ranges) has nothing to find."""
    if not len(table_row):
        return np.full(len(launch.time), -1, dtype=np.int64)
    tq = np.minimum(np.searchsorted(threads, launch.gtid), max(len(threads) - 1, 0))
    known = launch.found & (len(threads) > 0) & (threads[tq] == launch.gtid)
    hit = find_open(tcode, start, end, np.where(known, tq, -1), launch.time)
    row = np.where(hit >= 0, table_row[np.maximum(hit, 0)], -1)
    # int32, as the op_id column's indices are: that column is then this array, not a copy
    return row.astype(np.int32) if len(table_row) < 2**31 else row


def _outer(nvtx: Ranges) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """Threads, and the push/pop ranges outside every op in (thread, start, -end) order: their
    rows in ``nvtx``, thread codes, starts, ends and whether each is an op."""
    if nvtx.by_time is not None:  # the scan's chunks were sorted already: merged, not sorted
        threads, rows, tcode = nvtx.by_time
        nvtx.by_time = None
    else:
        push_pop = np.flatnonzero(~nvtx.start_end)
        threads, tcode = thread_codes(nvtx.gtid[push_pop])
        order = time_order(tcode, nvtx.start[push_pop], nvtx.end[push_pop])
        rows, tcode = push_pop[order], tcode[order]
        del push_pop, order
    st, en = nvtx.start[rows], nvtx.end[rows]
    op = is_op(nvtx.parsed.kind[nvtx.code[rows]])
    # Everything inside an op is the op's business: keep the outermost ops and what is around them.
    keep = np.flatnonzero(~inside_op(tcode, st, en, op & (en > st)))
    return threads, (rows[keep], tcode[keep], st[keep], en[keep], op[keep])


def _subset(nvtx: Ranges, rows: np.ndarray) -> Ranges:
    """The ranges ``rows`` of ``nvtx``, in that order (codes still into ``nvtx.parsed``)."""
    return Ranges(
        nvtx.start[rows], nvtx.end[rows], nvtx.gtid[rows], nvtx.domain[rows],
        nvtx.start_end[rows], nvtx.code[rows], nvtx.parsed, nvtx.span, nvtx.domains,
    )  # fmt: skip


def _no_op(n: int) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.nulls(n, pa.int32()), pa.array([], pa.string()))


def _paths(
    parent: np.ndarray, depth: np.ndarray, kind: np.ndarray, lab: np.ndarray, labels: pa.Array
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Nearest plain (non-op, non-marker) ancestor of each range, and for plain ranges their scope
    path ("outer/inner"), as codes into a list of distinct paths built level by level."""
    n = len(parent)
    plain = np.full(n, -1, dtype=np.int64)
    path = np.full(n, -1, dtype=np.int64)
    paths: list[str] = []
    n_lab = len(labels) + 1
    by_depth = np.argsort(depth, kind="stable")
    for idx in np.split(by_depth, np.cumsum(np.bincount(depth))[:-1]) if n else []:
        par = parent[idx]
        pp = np.maximum(par, 0)
        plain[idx] = np.where(par >= 0, np.where(kind[pp] == OTHER, pp, plain[pp]), -1)
        mine = idx[kind[idx] == OTHER]
        if not len(mine):
            continue
        up = plain[mine]
        pair = (np.where(up >= 0, path[np.maximum(up, 0)], -1) + 1) * n_lab + lab[mine]
        uniq, inverse = np.unique(pair, return_inverse=True)
        names = labels.take(pa.array(uniq % n_lab)).to_pylist()
        prefixes = uniq // n_lab - 1
        path[mine] = len(paths) + inverse.reshape(-1)
        paths += [
            name if pre < 0 else f"{paths[pre]}/{name}"
            for pre, name in zip(prefixes.tolist(), names, strict=True)
        ]
    return plain, path, paths
