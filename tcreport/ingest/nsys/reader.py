"""Reader for Nsight Systems SQLite exports (``nsys export --type sqlite``), 2022.x to 2026.x.

An export of a real training run holds millions of kernel launches and tens of millions of NVTX
ranges, so the bulk tables are scanned once, in parallel rowid ranges, straight into Arrow
(:mod:`tcreport.ingest.nsys.db`), and every join is an Arrow hash lookup or a numpy binary
search; Python only touches metadata and distinct strings. Names are ids into ``StringIds`` and
become dictionary columns without one string per launch. The time span and the device list come
from the rows already read, not from extra scans. Metadata lives in
:mod:`tcreport.ingest.nsys.meta`, NVTX op attribution in :mod:`tcreport.ingest.nsys.nvtx`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport._arrays import Handoff
from tcreport._arrays import int64_view as _view
from tcreport._arrays import int64s as _np
from tcreport.errors import InputError, SchemaError
from tcreport.ingest.common import later
from tcreport.ingest.common import sqlite as _sqlite
from tcreport.ingest.common.constant import Constants, shared
from tcreport.ingest.common.memory import release_free_memory
from tcreport.ingest.nsys import meta as _nsys_meta
from tcreport.ingest.nsys.checks import dropped_note, named, no_ops_note, timed, unnamed_note
from tcreport.ingest.nsys.db import NsysDb, Scan, int64, string
from tcreport.ingest.nsys.nvtx import Outline, attribute, outline
from tcreport.ingest.nsys.nvtx_scan import merge_ranges, nvtx_scans
from tcreport.ingest.nsys.tables import Launches, dict_column, physical_devices, pid_of
from tcreport.model import Run
from tcreport.schema import MemoryKind, TableKind, conform

KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
MEMCPY_TABLE = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET_TABLE = "CUPTI_ACTIVITY_KIND_MEMSET"
SYNC_TABLE = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
GRAPH_TABLE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
NVTX_TABLE = "NVTX_EVENTS"
_ACTIVITY_TABLES = (KERNEL_TABLE, RUNTIME_TABLE, MEMCPY_TABLE, MEMSET_TABLE, NVTX_TABLE)

#: CUPTI_ActivityMemcpyKind (the export's own ENUM_CUDA_MEMCPY_OPER table says the same).
_COPY_KINDS: dict[int, MemoryKind] = {
    1: MemoryKind.HTOD,
    2: MemoryKind.DTOH,
    8: MemoryKind.DTOD,
    9: MemoryKind.HTOH,
    10: MemoryKind.PEER,
    11: MemoryKind.HTOD,  # unified memory migrations keep their direction
    12: MemoryKind.DTOH,
    13: MemoryKind.DTOD,
}
_KERNEL_COLS = ("start", "end", "deviceId", "streamId", "correlationId", "globalPid", "shortName")
_KERNEL_OPT = ("demangledName", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ")
_GEOMETRY = {"gridX": "grid_x", "gridY": "grid_y", "gridZ": "grid_z"} | {
    "blockX": "block_x",
    "blockY": "block_y",
    "blockZ": "block_z",
}
_EMPTY_KERNELS = [
    (n, pa.int64()) for n in ("start", "duration", "stream", "corr", "pid", "short")
] + [("device", pa.int32())]
_MEMORY_COLS = ("start", "end", "deviceId", "streamId", "correlationId", "globalPid", "bytes")


def sniff(path: Path) -> bool:
    """An nsys export has ``StringIds`` and CUPTI/NVTX tables; a DLProf Viewer database (which
    embeds some of the same tables) is recognised by ``read_only_kernels`` and left alone."""
    if not _sqlite.is_sqlite(path):
        return False
    try:
        with _sqlite.connect(path) as con:
            names = _sqlite.table_names(con, path)
    except InputError:
        return False
    if "StringIds" not in names or "read_only_kernels" in names:
        return False
    return any(t in names for t in _ACTIVITY_TABLES)


def read(path: Path, *, geometry: bool = True) -> Run:
    """The export's canonical tables. ``geometry=False``: the kernels' launch geometry (grid and
    block sizes) is not read, and is null, as in an export that lacks it; no analysis reads it,
    so a multi-process export read only to be analysed rank by rank (``ingest.load_rank``) holds
    24 B a kernel less from the scan to the last rank's analysis (x1000: ~80 MiB at each of
    its peaks) and converts 6 of the kernel table's 13 columns less."""
    with _sqlite.connect(path) as con:
        try:
            db = NsysDb(path, con, needs=("StringIds", *_ACTIVITY_TABLES))
            run = _read(db, geometry)
        except SchemaError as exc:  # a value the canonical type cannot hold (a device id of 2**62)
            raise InputError(f"unexpected value in an export column: {exc}", path) from exc
    return run


def _read(db: NsysDb, geometry: bool = True) -> Run:
    if "StringIds" not in db.tables:
        raise InputError("no StringIds table; is this an Nsight Systems SQLite export?", db.path)
    if not any(t in db.tables for t in _ACTIVITY_TABLES):
        raise InputError(
            "no CUDA or NVTX activity tables; was the profile run with --trace=cuda,nvtx?", db.path
        )
    sid_ids, sid_values = read_string_ids(db)
    jobs: dict[str, list[Scan[Any]]] = {  # biggest first, so the pool ends evenly
        NVTX_TABLE: nvtx_scans(db, sid_ids, sid_values),
        KERNEL_TABLE: _kernel_scans(db, geometry),
        RUNTIME_TABLE: _runtime_scans(db),
        MEMCPY_TABLE: _memory_scans(db, MEMCPY_TABLE, '"copyKind"'),
        MEMSET_TABLE: _memory_scans(db, MEMSET_TABLE, "-1"),
    }
    flat = db.scan([s for group in jobs.values() for s in group])
    later.start_waiting()  # what follows runs mostly on one core: the other's is free
    done: dict[str, list[Any]] = {}
    for table, group in jobs.items():
        done[table], flat = flat[: len(group)], flat[len(group) :]
    spans = {t: _span(parts) for t, parts in done.items() if parts}
    # The kernel side (launch joins) first, then the NVTX side (nesting, op outlines): they do
    # not meet until attribution, but run side by side their temporaries added up to the whole
    # run's peak (x1000: 1.7-1.8 GiB against ~1.45 GiB one after the other, for the same CPU),
    # and the launch join frees the runtime calls before the outline starts.
    nvtx_chunks = done.pop(NVTX_TABLE)
    nvtx_bad = sum(c.dropped for c in nvtx_chunks)
    runtime = _table(done.pop(RUNTIME_TABLE), ("key", "start", "gtid"))
    kernels, k_bad = timed(
        _table(done.pop(KERNEL_TABLE), _kernel_columns(db, geometry)), "duration"
    )
    kernels = _kernels(db, kernels, sid_ids, sid_values)
    memory = _table(done.pop(MEMCPY_TABLE) + done.pop(MEMSET_TABLE), (*_MEMORY_COLS, "kind"))
    memory, m_bad = timed(memory, "end")
    memory = _memory(memory)
    to_gpu = _nsys_meta.device_map(db)
    kernels, k_moved = physical_devices(kernels, to_gpu)
    memory, m_moved = physical_devices(memory, to_gpu)
    k_launch, m_launch = _launches(runtime, kernels, memory)
    del runtime
    kernels = kernels.append_column("launch_ns", [k_launch.time_or_null()])
    memory = memory.append_column("launch_ns", [m_launch.time_or_null()])
    release_free_memory()  # the joins' temporaries, before the outline peaks
    ranges_outline = Handoff(_outline(nvtx_chunks))
    del nvtx_chunks
    release_free_memory()  # the sort of every range, before attribution peaks
    launches = Handoff((k_launch, m_launch))
    del k_launch, m_launch
    att = attribute(ranges_outline, launches)
    release_free_memory()

    origin, last_end = _nsys_meta.time_span(db, (*_ACTIVITY_TABLES, SYNC_TABLE), spans)
    kernels = kernels.append_column("op_id", att.kernel_op_id)
    memory = memory.append_column("op_id", att.memory_op_id)
    ops = att.ops
    notes = (
        dropped_note(k_bad, m_bad, nvtx_bad)
        + unnamed_note(kernels)
        + no_ops_note(ops, att.ranges, _has_rows(db, NVTX_TABLE))
    )
    if ops is not None and ops.num_rows == 0:
        ops = None  # ranges of the user's own (train_step, MPI_Send) say nothing about ops
    devices = [d for d in pc.unique(kernels["device_id"]).to_pylist() if d is not None]
    if k_moved or m_moved:
        notes.append(
            "device ids are the GPUs' own (TARGET_INFO_GPU), mapped from each process's CUDA ordinal"
        )
    notes += _graph_note(db)
    meta = _nsys_meta.run_meta(db, db.path, last_end - origin, ops is not None, devices, notes)
    consts = Constants(max(kernels.num_rows, memory.num_rows, 0 if ops is None else ops.num_rows))
    return Run(
        meta=meta,
        kernels=conform(shared(kernels, TableKind.KERNELS, consts), TableKind.KERNELS),
        memory=conform(shared(memory, TableKind.MEMORY, consts), TableKind.MEMORY),
        ops=None if ops is None else conform(shared(ops, TableKind.OPS, consts), TableKind.OPS),
        iterations=conform(
            {"iteration": [0], "start_ns": [origin], "end_ns": [last_end]}, TableKind.ITERATIONS
        ),
        ranges=None if att.ranges is None else conform(att.ranges, TableKind.RANGES),
    )


def _has_rows(db: NsysDb, table: str) -> bool:
    return table in db.tables and db.scalar_row(f"SELECT EXISTS(SELECT 1 FROM {table})")[0] == 1


def _graph_note(db: NsysDb) -> list[str]:
    """CUDA graphs traced whole (``--cuda-graph-trace=graph``, nsys' default) leave one row per
    replay in the graph-trace table and none of their kernels in the kernel table: every figure
    would silently leave that GPU time out, so the report says how much it is."""
    if not {"start", "end"} <= set(db.columns(GRAPH_TABLE)):
        return []
    # CUPTI writes 0 for both times when it could not time a replay: counted, not timed
    count, total = db.scalar_row(
        f'SELECT COUNT(*), SUM(CASE WHEN "end" > start THEN "end" - start END) FROM {GRAPH_TABLE}'
    )
    if not isinstance(count, int) or count == 0:
        return []
    ms = f" ({total / 1e6:,.1f} ms of GPU time)" if isinstance(total, int) else ""
    return [
        f"{count:,} CUDA graph replays{ms} were traced as whole graphs, so their kernels are not "
        "in the export and are missing from every figure here; record with nsys "
        "--cuda-graph-trace=node to see them"
    ]


def _outline(chunks: list[Any]) -> Outline | None:
    ranges = merge_ranges(chunks) if chunks else None
    return outline(ranges) if ranges is not None and len(ranges.start) else None


def read_string_ids(db: NsysDb) -> tuple[pa.Array, pa.Array]:
    def fold(batches: Iterator[pa.RecordBatch]) -> tuple[pa.Array, pa.Array]:
        ids, values = [pa.array([], pa.int64())], [pa.array([], pa.string())]
        for b in batches:
            ids.append(int64(b, "id"))
            values.append(string(b, "value"))
        return pa.concat_arrays(ids), pa.concat_arrays(values)

    scan = Scan("SELECT id, value FROM StringIds", ("id", "value"), fold)
    result: tuple[pa.Array, pa.Array] = db.scan([scan])[0]
    return result


def resolve_names(ids: pa.Array, sid_ids: pa.Array, sid_values: pa.Array) -> pa.DictionaryArray:
    """Name ids to a dictionary column holding only the names used, built with integer ops."""
    pos = pc.index_in(ids, value_set=sid_ids)
    used = pc.unique(pc.drop_null(pos))
    indices = pc.index_in(pos, value_set=used).cast(pa.int32())
    return pa.DictionaryArray.from_arrays(indices, sid_values.take(used))


# --- scans: each rowid range folds its batches into int64 batches and its (first, last) span --


@dataclass(frozen=True)
class _Rows:
    batches: list[pa.RecordBatch]
    span: _nsys_meta.Span  # of every row scanned, kept or not


def _rows_fold(
    names: tuple[str, ...], keep: Callable[[pa.RecordBatch], pa.RecordBatch] | None = None
) -> Callable[[Iterator[pa.RecordBatch]], _Rows]:
    def fold(batches: Iterator[pa.RecordBatch]) -> _Rows:
        out: list[pa.RecordBatch] = []
        lo: int | None = None
        hi: int | None = None
        for raw in batches:
            b = pa.record_batch([int64(raw, n) for n in names], names=list(names))
            first, last = pc.min(b["start"]).as_py(), pc.max(b["end"]).as_py()
            lo = first if lo is None or (first is not None and first < lo) else lo
            hi = last if hi is None or (last is not None and last > hi) else hi
            out.append(b if keep is None else keep(b))
        return _Rows(out, (lo, hi))

    return fold


def _span(parts: list[Any]) -> _nsys_meta.Span:
    firsts = [p.span[0] for p in parts if p.span[0] is not None]
    lasts = [p.span[1] for p in parts if p.span[1] is not None]
    return (min(firsts) if firsts else None, max(lasts) if lasts else None)


def _table(parts: list[_Rows], names: tuple[str, ...]) -> pa.Table:
    batches = [b for p in parts for b in p.batches]
    if not batches:
        return pa.table({n: pa.array([], pa.int64()) for n in names})
    return pa.Table.from_batches(batches)


def _kernel_columns(db: NsysDb, geometry: bool = True) -> tuple[str, ...]:
    cols = set(db.columns(KERNEL_TABLE))
    if not geometry:
        cols -= _GEOMETRY.keys()
    return (*_KERNEL_COLS, *(c for c in _KERNEL_OPT if c in cols))


def _kernel_scans(db: NsysDb, geometry: bool = True) -> list[Scan[_Rows]]:
    cols = set(db.columns(KERNEL_TABLE))
    if not cols:
        return []
    if not set(_KERNEL_COLS) <= cols:
        missing = sorted(set(_KERNEL_COLS) - cols)
        raise InputError(
            f"{KERNEL_TABLE} lacks columns {missing}; unsupported export version", db.path
        )
    names = _kernel_columns(db, geometry)
    sel = ", ".join(f'"{c}"' for c in names)
    fold = _rows_fold(names, _compact_kernels)
    return [
        Scan(f"SELECT {sel} FROM {KERNEL_TABLE} {w}", names, fold) for w in db.chunks(KERNEL_TABLE)
    ]


def _compact_kernels(b: pa.RecordBatch) -> pa.RecordBatch:
    """The columns as the kernels table keeps them, made while the batch is hot: 32-bit where the
    schema says so, the duration instead of the end, the pid instead of the global pid. Columns
    kept as they are get copied: one column of an imported ADBC batch keeps all of it alive."""
    copy = pa.concat_arrays
    cols: dict[str, pa.Array] = {
        "start": copy([b["start"]]),
        "duration": pc.subtract(b["end"], b["start"]),
        "device": b["deviceId"].cast(pa.int32()),
        "stream": copy([b["streamId"]]),
        "corr": copy([b["correlationId"]]),
        "pid": pid_of(b["globalPid"]),
        "short": copy([b["shortName"]]),
    }
    if "demangledName" in b.schema.names:
        cols["long"] = copy([b["demangledName"]])
    for c, name in _GEOMETRY.items():
        if c in b.schema.names:
            cols[name] = b[c].cast(pa.int32())
    return pa.record_batch(cols)


def _runtime_scans(db: NsysDb) -> list[Scan[_Rows]]:
    """CUDA runtime/driver API calls: the CPU side of every launch (launch time, thread). Only
    calls with a correlation id are kept, as a join key that carries the pid (see _launch_key)."""
    if not {"start", "end", "correlationId", "globalTid"} <= set(db.columns(RUNTIME_TABLE)):
        return []

    def keep(b: pa.RecordBatch) -> pa.RecordBatch:
        b = b.filter(pc.is_valid(b["corr"]))
        key = _launch_key(b["corr"], pid_of(b["gtid"]))
        return pa.record_batch([key, b["start"], b["gtid"]], names=["key", "start", "gtid"])

    names = ("start", "end", "corr", "gtid")
    sql = f'SELECT start, "end", correlationId, globalTid FROM {RUNTIME_TABLE}'
    fold = _rows_fold(names, keep)
    return [Scan(f"{sql} {w}", names, fold) for w in db.chunks(RUNTIME_TABLE)]


def _memory_scans(db: NsysDb, table: str, kind: str) -> list[Scan[_Rows]]:
    need = set(_MEMORY_COLS) | ({"copyKind"} if kind != "-1" else set())
    if not need <= set(db.columns(table)):
        return []
    names = (*_MEMORY_COLS, "kind")
    sel = ", ".join(f'"{c}"' for c in _MEMORY_COLS)
    fold = _rows_fold(names)
    return [Scan(f"SELECT {sel}, {kind} FROM {table} {w}", names, fold) for w in db.chunks(table)]


# --- tables ----------------------------------------------------------------------------------


def _launch_key(corr: pa.Array | pa.ChunkedArray, pid: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Correlation ids are unique per process only (CUPTI's are 32-bit), so the join key carries
    the pid in the high bits."""
    c = np.asarray(pc.fill_null(corr, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    p = np.asarray(pc.fill_null(pid, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    return pa.array((p << 32) | (c & 0xFFFFFFFF))


def _launches(runtime: pa.Table, kernels: pa.Table, memory: pa.Table) -> tuple[Launches, Launches]:
    """The runtime call behind every kernel and memory row, by (pid, correlation id); the first
    call with the key wins. A stable sort and a binary search: the keys come nearly in order,
    which makes this several times cheaper than a hash lookup into millions of calls."""
    keys = np.concatenate(
        [
            _np(_launch_key(kernels["correlation_id"], kernels["process_id"])),
            _np(_launch_key(memory["correlation_id"], memory["process_id"])),
        ]
    )
    rkeys = _np(runtime["key"])
    by_key = np.argsort(rkeys, kind="stable")
    sorted_keys = rkeys[by_key]
    # 8 B a call or a row each (~50 MiB at x1000), beside the NVTX ranges read: each array goes
    # once used, the clamp and the misses are written in place.
    del rkeys
    if len(sorted_keys):
        pos = np.searchsorted(sorted_keys, keys, "left")
        np.minimum(pos, len(sorted_keys) - 1, out=pos)
        found = sorted_keys[pos] == keys
        del sorted_keys, keys
        row = by_key[pos]
        del by_key, pos
        row[~found] = 0
    else:
        found, row = np.zeros(len(keys), dtype=bool), np.zeros(len(keys), dtype=np.int64)
        del sorted_keys, keys, by_key
    hit = len(row) > 0 and bool(found.any())
    # gathered in Arrow: a numpy copy of each whole runtime column first would add ~50 B a call
    gtid = np.where(found, _np(runtime["gtid"].take(row)) if hit else -1, -1)
    time = np.where(found, _np(runtime["start"].take(row)) if hit else 0, 0)
    n = kernels.num_rows
    k = Launches(
        gtid[:n], time[:n], found[:n], _view(kernels["duration_ns"], 0), _view(kernels["device_id"])
    )
    m = Launches(gtid[n:], time[n:], found[n:], _view(memory["duration_ns"], 0), None)
    return k, m


def _kernels(db: NsysDb, raw: pa.Table, sid_ids: pa.Array, sid_values: pa.Array) -> pa.Table:
    if raw.num_rows == 0:
        raw = pa.table({n: pa.array([], t) for n, t in _EMPTY_KERNELS})
    start = _np(raw["start"])
    if len(start) > 1 and bool((start[1:] < start[:-1]).any()):
        raw = raw.take(pa.array(np.argsort(start, kind="stable")))  # exports are nearly in order
    del start
    names = resolve_names(raw["short"].combine_chunks(), sid_ids, sid_values)
    if names.null_count:
        raise InputError(f"{KERNEL_TABLE}: kernel name ids missing from StringIds", db.path)
    names = named(names)
    out: dict[str, pa.Array | pa.ChunkedArray] = {
        "name": names,
        "device_id": raw["device"],
        "process_id": raw["pid"],
        "stream_id": raw["stream"],
        "correlation_id": raw["corr"],
        "start_ns": raw["start"],
        "duration_ns": raw["duration"],
    }
    if "long" in raw.column_names:  # else null: filled in with the run's shared constants
        out["long_name"] = resolve_names(raw["long"].combine_chunks(), sid_ids, sid_values)
    for name in _GEOMETRY.values():
        if name in raw.column_names:
            out[name] = raw[name]
    return pa.table(out)


def _memory(raw: pa.Table) -> pa.Table:
    raw = raw.sort_by("start")
    codes = np.array([-1, *_COPY_KINDS], dtype=np.int64)
    labels = pa.array([MemoryKind.MEMSET.value, *(k.value for k in _COPY_KINDS.values())])
    pos = _np(pc.index_in(raw["kind"], value_set=pa.array(codes)), len(codes))
    labels = pa.concat_arrays([labels, pa.array([MemoryKind.MEMCPY_OTHER.value])])
    kind = dict_column(pos, labels)
    return pa.table(
        {
            "kind": kind,
            "name": kind,
            "device_id": raw["deviceId"],
            "process_id": pid_of(raw["globalPid"]),
            "stream_id": raw["streamId"],
            "correlation_id": raw["correlationId"],
            "start_ns": raw["start"],
            "duration_ns": pc.subtract(raw["end"], raw["start"]),
            "bytes": raw["bytes"],
        }
    )
