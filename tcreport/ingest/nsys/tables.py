"""Columns of the ops and ranges tables for the Nsight Systems reader, built from integer codes.

Millions of ops share a few hundred types, scopes and dtypes: every string column here is made
from codes into a short list of distinct strings, giving the same dictionary columns as encoding
the strings would (distinct values, in order of first appearance) without one string per row.
The activity rows' launches (:class:`Launches`) and physical device ids are set here too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport._arrays import int64s as _np
from tcreport.ingest.nsys.nvtx_text import Parsed

if TYPE_CHECKING:
    from tcreport.ingest.nsys.nvtx_scan import Ranges


@dataclass(frozen=True)
class Launches:
    """The CPU side of activity rows (kernels or copies): the thread and time of the runtime call
    that launched each, ``found`` False where no call matched."""

    gtid: np.ndarray
    time: np.ndarray
    found: np.ndarray
    duration: np.ndarray
    device: np.ndarray | None

    def time_or_null(self) -> pa.Array:
        return pa.array(self.time, mask=~self.found)


def pid_of(gtid: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """nsys packs ``globalPid``/``globalTid`` as ``vm << 56 | pid << 24 | tid``."""
    return pc.bit_wise_and(pc.shift_right(gtid, 24), 0xFFFFFF)


def dict_column(codes: np.ndarray, values: pa.Array) -> pa.DictionaryArray:
    """``values[codes]`` (null where a code is negative) as a dictionary column, built from
    integer codes: equal to dictionary-encoding the strings (distinct values, first-seen order)
    without hashing one string per row."""
    venc = pc.dictionary_encode(values)
    vidx = np.asarray(pc.fill_null(venc.indices, -1).to_numpy(zero_copy_only=False), np.int32)
    # one gather, in int32: code -1 picks the -1 appended at the end (millions of rows, so no
    # int64 temporaries)
    canon = np.append(vidx, np.int32(-1))[codes]
    enc = pc.dictionary_encode(pa.array(canon, mask=canon < 0))
    return pa.DictionaryArray.from_arrays(
        enc.indices.cast(pa.int32()), venc.dictionary.take(enc.dictionary)
    )


def op_id_column(op_ids: pa.Array, rows: np.ndarray) -> pa.DictionaryArray:
    """``op_ids[rows]`` (null where a row is negative) as indices into ``op_ids`` itself: every
    op_id column of one export shares that one dictionary of distinct ids."""
    return pa.DictionaryArray.from_arrays(
        pa.array(rows.astype(np.int32, copy=False), mask=rows < 0), op_ids
    )


def ops_columns(
    start: np.ndarray,
    end: np.ndarray,
    gtid: np.ndarray,
    k_row: np.ndarray,
    m_row: np.ndarray,
    kernels: Launches,
    memory: Launches,
) -> dict[str, pa.Array]:
    """The numeric columns of the ops table, one row per outermost op in start order; ``k_row``
    and ``m_row`` give each kernel's and copy's op row (-1: none)."""
    n_ops = len(start)
    k_ok, m_ok = k_row >= 0, m_row >= 0
    gpu = np.bincount(k_row[k_ok], weights=kernels.duration[k_ok], minlength=n_ops)
    mem = np.bincount(m_row[m_ok], weights=memory.duration[m_ok], minlength=n_ops) + gpu
    gt = pa.array(gtid)
    return {
        "device_id": _min_device(
            n_ops, k_row[k_ok], kernels.device[k_ok] if kernels.device is not None else None
        ),
        "process_id": pid_of(gt),
        "thread_id": pc.bit_wise_and(gt, 0xFFFFFF),
        "start_ns": pa.array(start),
        "cpu_ns": pa.array(end - start),
        "gpu_ns": pa.array(gpu.astype(np.int64)),
        "gpu_total_ns": pa.array(mem.astype(np.int64)),
        "kernel_calls": pa.array(np.bincount(k_row[k_ok], minlength=n_ops).astype(np.int64)),
    }


def _min_device(n_ops: int, rows: np.ndarray, device: np.ndarray | None) -> pa.Array:
    """Lowest device each op launched on (null: none): one counting pass per device, as runs
    have a handful of devices; many devices fall back to an unbuffered minimum."""
    out = np.full(n_ops, np.iinfo(np.int64).max, dtype=np.int64)
    if device is not None and len(device):
        devices = np.unique(device)
        if len(devices) <= 64:
            for d in devices[::-1]:  # lowest last, so it wins
                out[np.bincount(rows[device == d], minlength=n_ops) > 0] = d
        else:
            np.minimum.at(out, rows, device)
    return pa.array(out, mask=out == np.iinfo(np.int64).max)


def op_ids(lab: np.ndarray, labels: pa.Array) -> pa.Array:
    """``<type>_<n>`` per op, n counting the instances of the type in start order (DLProf's
    CONV2D_1, ...); ``lab`` is each op's type as a code into ``labels``."""
    by_type = np.argsort(lab.astype(np.int16) if len(labels) < 2**15 else lab, kind="stable")
    sorted_lab = lab[by_type]
    pos = np.arange(len(lab))
    # where each type's run starts in the sorted codes (what searchsorted(sorted, sorted) gave,
    # in one pass instead of a binary search per op: ~0.25 s less on the x1000 export)
    new_run = np.ones(len(lab), dtype=bool)
    new_run[1:] = sorted_lab[1:] != sorted_lab[:-1]
    run_start = np.maximum.accumulate(np.where(new_run, pos, 0))
    nth = np.empty(len(lab), dtype=np.int32 if len(lab) < 2**31 else np.int64)
    nth[by_type] = pos - run_start + 1
    del by_type, sorted_lab, pos, new_run, run_start
    return pc.binary_join_element_wise(
        labels.take(pa.array(lab)), pa.array(nth).cast(pa.string()), "_"
    )


def ops_names(
    code: np.ndarray,
    marker: np.ndarray,
    scope_path: np.ndarray,
    paths: list[str],
    labels: pa.Array,
    lab_of: np.ndarray,
    parsed: Parsed,
) -> dict[str, pa.Array]:
    """The name columns of the ops table but the op id. ``code`` is each op's text, ``marker``
    the DLProf marker text around it (its module path), ``scope_path`` the plain ranges around
    it; all are codes, and strings are built once per distinct value."""
    lab = lab_of[code]
    # Scope and name per distinct (marker, plain path, type, TF node): DLProf's module path when
    # there is a marker, else the plain ranges around the op, then a TensorFlow node's own path
    # (``dense_1/MatMul``: name ``dense_1/MatMul`` in scope ``dense_1``, as DLProf named TF ops).
    at = _pair(_pair(marker, scope_path), lab)
    node_enc = None
    if parsed.node.null_count < len(parsed.node):  # TensorFlow ranges only: skipped otherwise
        node_enc = pc.dictionary_encode(parsed.node)
        node = _np(node_enc.indices)[code]
        at = _pair(at, node)
    first = np.flatnonzero(np.r_[True, at[1:] > np.maximum.accumulate(at)[:-1]] if len(at) else [])
    fs = parsed.func_stack.take(pa.array(marker[first], mask=marker[first] < 0)).to_pylist()
    types = labels.take(pa.array(lab[first])).to_pylist()
    nodes: list[str | None] = (
        node_enc.dictionary.take(pa.array(node[first], mask=node[first] < 0)).to_pylist()
        if node_enc is not None
        else [None] * len(first)
    )
    scopes: list[str | None] = []
    names: list[str] = []
    for f, p, t, nd in zip(fs, scope_path[first].tolist(), types, nodes, strict=True):
        plain = paths[p] if p >= 0 else None
        if f is None and nd:
            up = "/".join(x for x in (plain, nd.rpartition("/")[0]) if x)
            scopes.append(up or None)
            names.append(f"{plain}/{nd}" if plain is not None else nd)
            continue
        scopes.append(re.sub(r"/[^/]*\Z", "", f) if f is not None else plain)
        names.append(f if f is not None else (f"{plain}/{t}" if plain is not None else t))
    backward = pc.match_substring_regex(labels, r"Backward\d*$").to_numpy(zero_copy_only=False)
    return {
        "name": dict_column(at, pa.array(names, pa.string())),
        "type": dict_column(lab, labels),
        "scope": dict_column(at, pa.array(scopes, pa.string())),
        "direction": dict_column(np.where(backward[lab], 0, -1), pa.array(["bprop"])),
        "dtype": dict_column(code, parsed.dtype),
        "input_shapes": parsed.shapes.take(pa.array(code)),
    }


def _pair(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Codes of (a, b) pairs numbered in order of first appearance (a hash, not a sort); a and b
    are codes >= -1 below the row count, so the packed key cannot overflow."""
    key = (a + 1) * (int(b.max(initial=0)) + 2) + (b + 1)
    return _np(pc.dictionary_encode(pa.array(key, pa.int64())).indices)


def ranges_table(
    nvtx: Ranges, rows: np.ndarray, depth: np.ndarray, lab_of: np.ndarray, labels: pa.Array
) -> pa.Table:
    """Plain push/pop ranges outside any op, then every start/end range (no depth: they need not
    nest), together in (thread, start, -end) order."""
    se = np.flatnonzero(nvtx.start_end)
    rows = np.concatenate([rows, se])
    depth_col = pa.array(
        np.concatenate([depth, np.zeros(len(se), np.int64)]).astype(np.int32),
        mask=np.arange(len(rows)) >= len(depth),
    )
    if len(se):
        order = np.lexsort((~nvtx.end[rows], nvtx.start[rows], nvtx.gtid[rows]))  # ~: no overflow
        rows, depth_col = rows[order], depth_col.take(pa.array(order))
    dom = nvtx.domain[rows]
    known = np.unique(dom)
    names = [
        nvtx.domains.get(int(d), None if d == 0 else f"domain {int(d)}") for d in known.tolist()
    ]
    gtid = pa.array(nvtx.gtid[rows])
    return pa.table(
        {
            "name": dict_column(lab_of[nvtx.code[rows]], labels),
            "domain": dict_column(np.searchsorted(known, dom), pa.array(names, pa.string())),
            "process_id": pid_of(gtid),
            "thread_id": pc.bit_wise_and(gtid, 0xFFFFFF),
            "start_ns": pa.array(nvtx.start[rows]),
            "end_ns": pa.array(nvtx.end[rows]),
            "depth": depth_col,
        }
    )


def physical_devices(table: pa.Table, to_gpu: dict[tuple[int, int], int]) -> tuple[pa.Table, bool]:
    """``device_id`` as the GPU's id where the export maps (pid, CUDA ordinal) to one; whether
    any row changed. Rows of a pair the export does not list keep their ordinal."""
    if not to_gpu or table.num_rows == 0:
        return table, False
    pairs = np.array(sorted(to_gpu), dtype=np.int64).reshape(-1, 2)
    gpu = np.array([to_gpu[(int(p), int(c))] for p, c in pairs], dtype=np.int64)
    keys = (pairs[:, 0] << 32) | (pairs[:, 1] & 0xFFFFFFFF)
    dev = _np(table["device_id"])
    row_keys = (_np(table["process_id"]) << 32) | (dev & 0xFFFFFFFF)
    at = np.minimum(np.searchsorted(keys, row_keys), len(keys) - 1)
    hit = (keys[at] == row_keys) & (dev >= 0)
    new = np.where(hit, gpu[at], dev)
    if not (new != dev).any():
        return table, False
    valid = pc.is_valid(table["device_id"])
    col = pa.array(new.astype(np.int32), mask=~np.asarray(valid.to_numpy(zero_copy_only=False)))
    i = table.schema.get_field_index("device_id")
    return table.set_column(i, pa.field("device_id", pa.int32()), col), True
