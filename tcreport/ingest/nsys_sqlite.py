"""Reader for Nsight Systems SQLite exports (``nsys export --type sqlite``), 2022.x to 2026.x.

An export of a real training run holds millions of kernel launches, so bulk columns go straight
from SQLite into Arrow (ADBC when installed, ``sqlite3`` otherwise) and every join is an Arrow hash
lookup; Python only touches metadata and the few distinct strings. Names are ids into ``StringIds``
and are turned into dictionary columns without ever materialising one string per launch.

The export's schema changes between releases (``EXPORT_META_DATA`` became ``META_DATA_EXPORT``,
``TARGET_INFO_GPU`` can be absent, columns come and go), so every optional table and column is
looked up, never assumed. NVTX op attribution lives in :mod:`tcreport.ingest.nsys_nvtx`.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.errors import InputError
from tcreport.ingest import _sqlite
from tcreport.ingest.nsys_nvtx import attribute, pid_of, read_ranges
from tcreport.model import (
    Gpu,
    Granularity,
    IterationInfo,
    ReportedFigures,
    Run,
    RunMeta,
    SourceFormat,
)
from tcreport.schema import MemoryKind, TableKind, conform

KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
MEMCPY_TABLE = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET_TABLE = "CUPTI_ACTIVITY_KIND_MEMSET"
SYNC_TABLE = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
NVTX_TABLE = "NVTX_EVENTS"
_ACTIVITY_TABLES = (KERNEL_TABLE, RUNTIME_TABLE, MEMCPY_TABLE, MEMSET_TABLE, NVTX_TABLE)
_META_TABLES = ("META_DATA_EXPORT", "EXPORT_META_DATA")

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


def read(path: Path) -> Run:
    with _sqlite.connect(path) as con:
        db = NsysDb(path, con)
        try:
            return _read(db)
        finally:
            db.close()


def _read(db: NsysDb) -> Run:
    if "StringIds" not in db.tables:
        raise InputError("no StringIds table; is this an Nsight Systems SQLite export?", db.path)
    if not any(t in db.tables for t in _ACTIVITY_TABLES):
        raise InputError(
            "no CUDA or NVTX activity tables; was the profile run with --trace=cuda,nvtx?", db.path
        )
    sid_ids, sid_values = read_string_ids(db)
    runtime = _runtime(db)
    kernels = _kernels(db, sid_ids, sid_values, runtime)
    memory = _memory(db, runtime)
    origin, last_end = _time_span(db)
    att = attribute(read_ranges(db, sid_ids, sid_values), runtime, kernels, memory)
    kernels = kernels.append_column("op_id", att.kernel_op_id)
    memory = memory.append_column("op_id", att.memory_op_id)
    iterations = conform(
        {"iteration": [0], "start_ns": [origin], "end_ns": [last_end]}, TableKind.ITERATIONS
    )
    for_iter = pa.array(np.zeros(kernels.num_rows, dtype=np.int32))
    kernels = kernels.append_column("iteration", for_iter)
    memory = memory.append_column("iteration", pa.array(np.zeros(memory.num_rows, dtype=np.int32)))
    ops = att.ops
    if ops is not None:
        ops = ops.append_column("iteration", pa.array(np.zeros(ops.num_rows, dtype=np.int32)))
    meta = _meta(db, wall_ns=last_end - origin, has_ops=ops is not None)
    return Run(
        meta=meta,
        kernels=conform(kernels, TableKind.KERNELS),
        memory=conform(memory, TableKind.MEMORY),
        ops=None if ops is None else conform(ops, TableKind.OPS),
        iterations=iterations,
        ranges=None if att.ranges is None else conform(att.ranges, TableKind.RANGES),
    )


# --- database access -------------------------------------------------------------------------


class NsysDb:
    """One export opened twice: ``sqlite3`` (lenient text, metadata) and, when the optional ADBC
    driver is installed, an ADBC connection that hands bulk columns to Arrow without Python rows."""

    def __init__(self, path: Path, con: sqlite3.Connection) -> None:
        self.path = path
        self.con = con
        self.tables = _sqlite.table_names(con, path)
        self._cols: dict[str, list[str]] = {}
        self._adbc = _open_adbc(path)

    def close(self) -> None:
        if self._adbc is not None:
            self._adbc.close()

    def columns(self, table: str) -> list[str]:
        if table not in self.tables:
            return []
        if table not in self._cols:
            try:
                self._cols[table] = _sqlite.columns(self.con, table)
            except sqlite3.DatabaseError as exc:
                raise InputError(
                    f"corrupt or unreadable SQLite database: {exc}", self.path
                ) from exc
        return self._cols[table]

    def rows(self, sql: str, params: tuple[str, ...] = ()) -> list[tuple[object, ...]]:
        try:
            return list(self.con.execute(sql, params))
        except sqlite3.DatabaseError as exc:
            raise InputError(f"corrupt or unreadable SQLite database: {exc}", self.path) from exc

    def scalar_row(self, sql: str) -> tuple[object, ...]:
        rows = self.rows(sql)
        return rows[0] if rows else (None,)

    def arrow(self, sql: str, names: list[str]) -> pa.Table:
        """Rows of ``sql`` as Arrow. ADBC first; its strings are taken only when valid UTF-8 (nsys
        stores some blobs as TEXT), else the lenient ``sqlite3`` path reads the same query."""
        if self._adbc is not None:
            try:
                cur = self._adbc.cursor()
                try:
                    cur.execute(sql)
                    table: pa.Table = cur.fetch_arrow_table()
                finally:
                    cur.close()
                if any(pa.types.is_string(t) for t in table.schema.types):
                    table.validate(full=True)
                return table.rename_columns(names)
            except (pa.ArrowInvalid, _adbc_errors()):
                pass  # fall through to sqlite3, which maps real corruption to InputError
        return _sqlite.query_arrow(self.con, sql, names, self.path)

    @staticmethod
    def int64(table: pa.Table) -> pa.Table:
        """Empty or all-null columns come back typed ``null``; make integer columns integers."""
        cols = [c if pa.types.is_string(c.type) else c.cast(pa.int64()) for c in table.columns]
        return pa.table(cols, names=table.column_names)


def _adbc_errors() -> type[Exception]:
    try:
        import adbc_driver_manager
    except ImportError:  # pragma: no cover - only reached when ADBC vanished mid-read
        return sqlite3.Error
    err: type[Exception] = adbc_driver_manager.Error
    return err


def _open_adbc(path: Path) -> Any:
    try:
        import adbc_driver_sqlite.dbapi as adbc
    except ImportError:
        return None
    try:
        con: Any = adbc.connect(f"file:{path.resolve().as_posix()}?mode=ro")
    except _adbc_errors():
        return None
    return con


def read_string_ids(db: NsysDb) -> tuple[pa.Array, pa.Array]:
    t = db.arrow("SELECT id, value FROM StringIds", ["id", "value"])
    ids = t.column("id").cast(pa.int64()).combine_chunks()
    values = t.column("value").cast(pa.string()).combine_chunks()
    return ids, values


def resolve_names(
    ids: pa.ChunkedArray, sid_ids: pa.Array, sid_values: pa.Array
) -> pa.DictionaryArray:
    """Name ids to a dictionary column holding only the names used, built with integer ops."""
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    pos = pc.index_in(ids, value_set=sid_ids)
    used = pc.unique(pc.drop_null(pos))
    indices = pc.index_in(pos, value_set=used).cast(pa.int32())
    return pa.DictionaryArray.from_arrays(indices, sid_values.take(used))


# --- bulk tables -----------------------------------------------------------------------------


def _runtime(db: NsysDb) -> pa.Table:
    """CUDA runtime/driver API calls: the CPU side of every launch (launch time, thread)."""
    cols = db.columns(RUNTIME_TABLE)
    if not {"start", "end", "correlationId", "globalTid"} <= set(cols):
        return pa.table({n: pa.array([], pa.int64()) for n in ("start", "end", "corr", "gtid")})
    t = db.arrow(
        f'SELECT start, "end", correlationId, globalTid FROM {RUNTIME_TABLE} '
        "WHERE correlationId IS NOT NULL",
        ["start", "end", "corr", "gtid"],
    )
    return db.int64(t)


def _launch_key(corr: pa.ChunkedArray | pa.Array, pid: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Correlation ids are unique per process only (CUPTI's are 32-bit), so the join key carries
    the pid in the high bits."""
    c = np.asarray(pc.fill_null(corr, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    p = np.asarray(pc.fill_null(pid, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    return pa.array((p << 32) | (c & 0xFFFFFFFF))


def runtime_index(runtime: pa.Table, corr: pa.ChunkedArray, pid: pa.ChunkedArray) -> pa.Array:
    """Row of ``runtime`` that launched each activity row (null where none), by (pid, corr)."""
    rkey = _launch_key(runtime.column("corr"), pid_of(runtime.column("gtid")))
    return pc.index_in(_launch_key(corr, pid), value_set=rkey)


def _kernels(db: NsysDb, sid_ids: pa.Array, sid_values: pa.Array, runtime: pa.Table) -> pa.Table:
    cols = set(db.columns(KERNEL_TABLE))
    want = ["start", "end", "deviceId", "streamId", "correlationId", "globalPid", "shortName"]
    if not cols:
        cols = set()
    elif not set(want) <= cols:
        missing = sorted(set(want) - cols)
        raise InputError(
            f"{KERNEL_TABLE} lacks columns {missing}; unsupported export version", db.path
        )
    opt = [
        c
        for c in ("demangledName", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ")
        if c in cols
    ]
    names = want + opt
    if cols:
        sel = ", ".join(f'"{c}"' for c in names)
        raw = db.int64(db.arrow(f"SELECT {sel} FROM {KERNEL_TABLE} ORDER BY start", names))
    else:
        raw = pa.table({n: pa.array([], pa.int64()) for n in names})
    pid = pid_of(raw.column("globalPid"))
    rt = runtime_index(runtime, raw.column("correlationId"), pid)
    out: dict[str, pa.Array | pa.ChunkedArray] = {
        "name": resolve_names(raw.column("shortName"), sid_ids, sid_values),
        "long_name": resolve_names(raw.column("demangledName"), sid_ids, sid_values)
        if "demangledName" in opt
        else pa.nulls(raw.num_rows, pa.string()),
        "device_id": raw.column("deviceId"),
        "process_id": pid,
        "stream_id": raw.column("streamId"),
        "correlation_id": raw.column("correlationId"),
        "start_ns": raw.column("start"),
        "duration_ns": pc.subtract(raw.column("end"), raw.column("start")),
        "calls": pa.array(np.ones(raw.num_rows, dtype=np.int64)),
        "launch_ns": runtime.column("start").take(rt),
        "_rt": rt,
    }
    for c, n in (("gridX", "grid_x"), ("gridY", "grid_y"), ("gridZ", "grid_z")):
        if c in opt:
            out[n] = raw.column(c)
    for c, n in (("blockX", "block_x"), ("blockY", "block_y"), ("blockZ", "block_z")):
        if c in opt:
            out[n] = raw.column(c)
    if pc.any(pc.is_null(out["name"])).as_py():
        raise InputError(f"{KERNEL_TABLE}: kernel name ids missing from StringIds", db.path)
    return pa.table(out)


def _memory(db: NsysDb, runtime: pa.Table) -> pa.Table:
    parts: list[pa.Table] = []
    base = ["start", "end", "deviceId", "streamId", "correlationId", "globalPid", "bytes"]
    if set(base + ["copyKind"]) <= set(db.columns(MEMCPY_TABLE)):
        sel = ", ".join(f'"{c}"' for c in base + ["copyKind"])
        t = db.int64(db.arrow(f"SELECT {sel} FROM {MEMCPY_TABLE}", base + ["kind"]))
        parts.append(t)
    if set(base) <= set(db.columns(MEMSET_TABLE)):
        sel = ", ".join(f'"{c}"' for c in base)
        t = db.int64(db.arrow(f"SELECT {sel}, -1 FROM {MEMSET_TABLE}", base + ["kind"]))
        parts.append(t)
    if parts:
        raw = pa.concat_tables(parts).sort_by("start")
    else:
        raw = pa.table({n: pa.array([], pa.int64()) for n in base + ["kind"]})
    codes = np.array([-1, *_COPY_KINDS], dtype=np.int64)
    labels = pa.array([MemoryKind.MEMSET.value, *(k.value for k in _COPY_KINDS.values())])
    pos = pc.index_in(raw.column("kind"), value_set=pa.array(codes))
    kind = pc.fill_null(labels.take(pos), MemoryKind.MEMCPY_OTHER.value)
    pid = pid_of(raw.column("globalPid"))
    return pa.table(
        {
            "kind": kind,
            "name": kind,
            "device_id": raw.column("deviceId"),
            "process_id": pid,
            "stream_id": raw.column("streamId"),
            "correlation_id": raw.column("correlationId"),
            "start_ns": raw.column("start"),
            "duration_ns": pc.subtract(raw.column("end"), raw.column("start")),
            "calls": pa.array(np.ones(raw.num_rows, dtype=np.int64)),
            "bytes": raw.column("bytes"),
            "_rt": runtime_index(runtime, raw.column("correlationId"), pid),
        }
    )


def _time_span(db: NsysDb) -> tuple[int, int]:
    """The profiled span as DLProf measured it: from the session's time origin to the end of the
    last CUDA activity (runtime call, kernel, copy, memset, synchronisation) or NVTX range.

    DLProf 1.8's ``Wall Clock Time`` for the CNN export (2,840,562,182 ns) is exactly the end of the
    last CUDA runtime call, counted from 0: 2022 exports count time from the session start. 2026
    exports stamp the system clock instead and give the session start as
    ``TARGET_INFO_SESSION_START_TIME.systemClockNs``; it is the origin when it precedes the events
    (a time-normalised export has events before it, and then 0 is the origin again).
    """
    lo: int | None = None
    hi: int | None = None
    for table in (*_ACTIVITY_TABLES, SYNC_TABLE):
        if not {"start", "end"} <= set(db.columns(table)):
            continue
        first, last = db.scalar_row(f'SELECT MIN(start), MAX("end") FROM {table}')
        if isinstance(first, int):
            lo = first if lo is None else min(lo, first)
        if isinstance(last, int):
            hi = last if hi is None else max(hi, last)
    if lo is None or hi is None:
        return 0, 0
    origin = 0
    window = _derived_window_start(db)
    if window is not None and window <= lo:
        # A cut-down export (DERIVED_WINDOW_NS) no longer holds the session's start: its span is
        # the window, not the hours before it.
        return window, hi
    if "systemClockNs" in db.columns("TARGET_INFO_SESSION_START_TIME"):
        (clock,) = db.scalar_row("SELECT MIN(systemClockNs) FROM TARGET_INFO_SESSION_START_TIME")
        if isinstance(clock, int) and 0 <= clock <= lo:
            origin = clock
    return origin, hi


def _derived_window_start(db: NsysDb) -> int | None:
    for table in _META_TABLES:
        if {"name", "value"} <= set(db.columns(table)):
            row = db.scalar_row(
                f"SELECT value FROM {table} WHERE name = 'DERIVED_WINDOW_NS' LIMIT 1"
            )
            if row and isinstance(row[0], str) and "-" in row[0]:
                start = row[0].split("-", 1)[0].strip()
                return int(start) if start.isdigit() else None
    return None


# --- metadata --------------------------------------------------------------------------------


def _meta(db: NsysDb, wall_ns: int, has_ops: bool) -> RunMeta:
    export = _key_values(db, next((t for t in _META_TABLES if t in db.tables), None))
    env = _key_values(db, "TARGET_INFO_SYSTEM_ENV", ("NvDriverVersion", "CudaDriverVersion"))
    info = _system_info(db)
    version = export.get("EXPORT_PRODUCT_VERSION") or info.get("nsysVersion")
    driver = info.get("driverVersion") or _driver(env.get("NvDriverVersion"))
    cuda = info.get("cudaVersion") or _cuda(env.get("CudaDriverVersion"))
    notes: list[str] = []
    if version is None:
        notes.append("export metadata table missing; Nsight Systems version unknown")
    return RunMeta(
        format=SourceFormat.NSYS_SQLITE,
        path=str(db.path),
        profiler=f"Nsight Systems {version}" if version else "Nsight Systems",
        profiler_version=version,
        framework=info.get("framework") or None,
        cuda_version=cuda,
        cudnn_version=info.get("cudnnVersion") or None,
        driver_version=driver,
        gpus=_gpus(db),
        iterations=IterationInfo(total=1, start=0, stop=0, aggregated=1, method="whole run"),
        reported=ReportedFigures(wall_ns=wall_ns),
        kernel_granularity=Granularity.LAUNCH,
        op_granularity=Granularity.LAUNCH if has_ops else Granularity.NONE,
        files=(db.path.name,),
        notes=tuple(notes),
    )


def _key_values(db: NsysDb, table: str | None, only: tuple[str, ...] = ()) -> dict[str, str]:
    if table is None or not {"name", "value"} <= set(db.columns(table)):
        return {}
    sql = f"SELECT name, value FROM {table}"
    if only:
        sql += " WHERE name IN (" + ", ".join("?" for _ in only) + ")"
    return {str(k): str(v) for k, v in db.rows(sql, only) if v is not None}


def _system_info(db: NsysDb) -> dict[str, str]:
    """DLProf adds a ``SystemInfo`` table to the export it aggregates: framework, CUDA, driver."""
    cols = db.columns("SystemInfo")
    if not cols:
        return {}
    rows = db.rows(
        f"SELECT {', '.join(chr(34) + c + chr(34) for c in cols)} FROM SystemInfo LIMIT 1"
    )
    if not rows:
        return {}
    return {c: str(v) for c, v in zip(cols, rows[0], strict=True) if v not in (None, "")}


def _driver(raw: str | None) -> str | None:
    """Windows exports say ``42600`` for driver 426.00; Linux ones say ``580.95.05``."""
    if raw is None or not raw.strip():
        return None
    raw = raw.strip()
    if raw.isdigit() and len(raw) >= 4:
        return f"{int(raw[:-2])}.{raw[-2:]}"
    return raw


def _cuda(raw: str | None) -> str | None:
    """``CudaDriverVersion`` is CUDA's integer encoding (13000 = 13.0, 10010 = 10.1)."""
    if raw is None or not raw.strip().isdigit():
        return None
    n = int(raw)
    return f"{n // 1000}.{(n % 1000) // 10}" if n else None


def _gpus(db: NsysDb) -> tuple[Gpu, ...]:
    """CUDA devices from ``TARGET_INFO_GPU`` (absent in some 2026 exports, which then carry no GPU
    name anywhere: only the device ids seen in the kernel table are known)."""
    cols = set(db.columns("TARGET_INFO_GPU"))
    gpus: dict[int, Gpu] = {}
    if {"id", "name"} <= cols:
        extra = [c for c in ("computeMajor", "computeMinor", "smCount") if c in cols]
        sel = ", ".join(["id", "name", *extra])
        for row in db.rows(f"SELECT {sel} FROM TARGET_INFO_GPU ORDER BY id"):
            rec = dict(zip(["id", "name", *extra], row, strict=True))
            major, minor, sms = rec.get("computeMajor"), rec.get("computeMinor"), rec.get("smCount")
            if not isinstance(major, int) or major <= 0:
                continue  # an integrated or display adapter nsys listed, not a CUDA device
            dev = rec["id"]
            if not isinstance(dev, int):
                continue
            gpus[dev] = Gpu(
                device_id=dev,
                name=str(rec["name"]) if rec["name"] else None,
                compute_capability=f"{major}.{minor}" if isinstance(minor, int) else None,
                sm_count=sms if isinstance(sms, int) and sms > 0 else None,
            )
    if "deviceId" in db.columns(KERNEL_TABLE):
        for (dev,) in db.rows(f"SELECT DISTINCT deviceId FROM {KERNEL_TABLE} ORDER BY 1"):
            if isinstance(dev, int) and dev not in gpus:
                gpus[dev] = Gpu(device_id=dev)
    return tuple(gpus[k] for k in sorted(gpus))
