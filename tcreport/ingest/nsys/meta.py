"""Run metadata and the profiled time span of an Nsight Systems export.

Everything here is small (key/value tables, a few aggregates), so it goes through plain ``sqlite3``
queries. The export's schema changes between releases (``EXPORT_META_DATA`` became
``META_DATA_EXPORT``, ``TARGET_INFO_GPU`` can be absent), so every table and column is looked up,
never assumed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Protocol

from tcreport.ingest.common import started
from tcreport.model import (
    Gpu,
    Granularity,
    IterationInfo,
    IterationMethod,
    ReportedFigures,
    RunMeta,
    SourceFormat,
)

_META_TABLES = ("META_DATA_EXPORT", "EXPORT_META_DATA")

#: An activity table's first start and last end, as (min, max); None where it had no rows.
Span = tuple[int | None, int | None]


class Db(Protocol):
    @property
    def tables(self) -> set[str]: ...
    def columns(self, table: str) -> list[str]: ...
    def rows(self, sql: str, params: tuple[str, ...] = ()) -> list[tuple[object, ...]]: ...
    def scalar_row(self, sql: str) -> tuple[object, ...]: ...


def time_span(db: Db, tables: Iterable[str], known: Mapping[str, Span]) -> tuple[int, int]:
    """The profiled span as DLProf measured it: from the session's time origin to the end of the
    last CUDA activity (runtime call, kernel, copy, memset, synchronisation) or NVTX event.

    ``known`` holds the spans of the tables the reader scanned anyway, so only the others cost a
    query. DLProf 1.8's ``Wall Clock Time`` for the CNN export (2,840,562,182 ns) is exactly the
    end of the last CUDA runtime call, counted from 0: 2022 exports count time from the session
    start. 2026 exports stamp the system clock instead and give the session start as
    ``TARGET_INFO_SESSION_START_TIME.systemClockNs``; it is the origin when it precedes the events
    (a time-normalised export has events before it, and then 0 is the origin again).
    """
    lo: int | None = None
    hi: int | None = None
    for table in tables:
        if not {"start", "end"} <= set(db.columns(table)):
            continue
        if table in known:
            first, last = known[table]
        else:
            row = db.scalar_row(f'SELECT MIN(start), MAX("end") FROM {table}')
            first = row[0] if isinstance(row[0], int) else None
            last = row[1] if len(row) > 1 and isinstance(row[1], int) else None
        if first is not None:
            lo = first if lo is None else min(lo, first)
        if last is not None:
            hi = last if hi is None else max(hi, last)
    if lo is None or hi is None:
        return 0, 0
    window = _derived_window_start(db)
    if window is not None and window <= lo:
        # A cut-down export (DERIVED_WINDOW_NS) no longer holds the session's start: its span is
        # the window, not the hours before it.
        return window, hi
    origin = 0
    if "systemClockNs" in db.columns("TARGET_INFO_SESSION_START_TIME"):
        (clock,) = db.scalar_row("SELECT MIN(systemClockNs) FROM TARGET_INFO_SESSION_START_TIME")
        if isinstance(clock, int) and 0 <= clock <= lo:
            origin = clock
    return origin, hi


def _derived_window_start(db: Db) -> int | None:
    for table in _META_TABLES:
        if {"name", "value"} <= set(db.columns(table)):
            row = db.scalar_row(
                f"SELECT value FROM {table} WHERE name = 'DERIVED_WINDOW_NS' LIMIT 1"
            )
            if row and isinstance(row[0], str) and "-" in row[0]:
                start = row[0].split("-", 1)[0].strip()
                return int(start) if start.isdigit() else None
    return None


def run_meta(
    db: Db,
    path: Path,
    wall_ns: int,
    has_ops: bool,
    devices: Iterable[int],
    notes: Iterable[str] = (),
) -> RunMeta:
    """``devices``: the device ids seen in the kernel table, which the reader already holds;
    ``notes``: the reader's own remarks, after the metadata's."""
    export = _key_values(db, next((t for t in _META_TABLES if t in db.tables), None))
    env = _key_values(db, "TARGET_INFO_SYSTEM_ENV", ("NvDriverVersion", "CudaDriverVersion"))
    info = _system_info(db)
    version = export.get("EXPORT_PRODUCT_VERSION") or info.get("nsysVersion")
    driver = info.get("driverVersion") or _driver(env.get("NvDriverVersion"))
    cuda = info.get("cudaVersion") or _cuda(env.get("CudaDriverVersion"))
    started_at = _started(db)
    all_notes: list[str] = []
    if version is None:
        all_notes.append("export metadata table missing; Nsight Systems version unknown")
    all_notes += notes
    return RunMeta(
        format=SourceFormat.NSYS_SQLITE,
        path=str(path),
        profiler=f"Nsight Systems {version}" if version else "Nsight Systems",
        profiler_version=version,
        framework=info.get("framework") or None,
        cuda_version=cuda,
        cudnn_version=info.get("cudnnVersion") or None,
        driver_version=driver,
        gpus=_gpus(db, devices),
        iterations=IterationInfo(
            total=1, start=0, stop=0, aggregated=1, method=IterationMethod.WHOLE_RUN
        ),
        reported=ReportedFigures(wall_ns=wall_ns),
        kernel_granularity=Granularity.LAUNCH,
        op_granularity=Granularity.LAUNCH if has_ops else Granularity.NONE,
        files=(path.name,),
        notes=tuple(all_notes),
        started_at=started_at,
        started_at_source=started.NSYS_SESSION if started_at else None,
    )


def _started(db: Db) -> str | None:
    """The session's UTC start (``TARGET_INFO_SESSION_START_TIME.utcEpochNs``), when recorded."""
    if "utcEpochNs" not in db.columns("TARGET_INFO_SESSION_START_TIME"):
        return None
    (ns,) = db.scalar_row("SELECT MIN(utcEpochNs) FROM TARGET_INFO_SESSION_START_TIME")
    return started.iso(ns) if isinstance(ns, int) and started.plausible(ns) else None


def _key_values(db: Db, table: str | None, only: tuple[str, ...] = ()) -> dict[str, str]:
    if table is None or not {"name", "value"} <= set(db.columns(table)):
        return {}
    sql = f"SELECT name, value FROM {table}"
    if only:
        sql += " WHERE name IN (" + ", ".join("?" for _ in only) + ")"
    return {str(k): str(v) for k, v in db.rows(sql, only) if v is not None}


def _system_info(db: Db) -> dict[str, str]:
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


#: The GPU table and its columns: ``TARGET_INFO_GPU`` from nsys 2021.3.1 on, ``TARGET_INFO_CUDA_GPU``
#: in 2021.1-2021.3.0 (NVIDIA's own 2021 report scripts switch on which one exists).
_GPU_TABLES = (
    ("TARGET_INFO_GPU", ("id",), "computeMajor", "computeMinor", "smCount"),
    (
        "TARGET_INFO_CUDA_GPU",
        ("deviceId", "id"),
        "computeCapabilityMajor",
        "computeCapabilityMinor",
        "numMultiprocessors",
    ),
)


def device_map(db: Db) -> dict[tuple[int, int], int]:
    """(pid, CUDA device id) -> nsys GPU id, from ``TARGET_INFO_CUDA_DEVICE`` (2023+ exports).

    A kernel's ``deviceId`` is the CUDA ordinal its process saw; with ``CUDA_VISIBLE_DEVICES`` set
    per rank every rank says 0, and per-device figures would merge the GPUs. The GPU id is the
    physical one ``TARGET_INFO_GPU`` describes. Empty when the table is absent or says nothing."""
    cols = set(db.columns("TARGET_INFO_CUDA_DEVICE"))
    if not {"gpuId", "cudaId", "pid"} <= cols:
        return {}
    out: dict[tuple[int, int], int] = {}
    for pid, cuda, gpu in db.rows("SELECT pid, cudaId, gpuId FROM TARGET_INFO_CUDA_DEVICE"):
        if isinstance(pid, int) and isinstance(cuda, int) and isinstance(gpu, int):
            out.setdefault((pid, cuda), gpu)
    return out


def _gpus(db: Db, devices: Iterable[int]) -> tuple[Gpu, ...]:
    """CUDA devices from the GPU table (absent in some 2026 exports, which then carry no GPU name
    anywhere: only the device ids seen in the kernel table are known)."""
    gpus: dict[int, Gpu] = {}
    for table, ids, major_col, minor_col, sm_col in _GPU_TABLES:
        cols = set(db.columns(table))
        key = next((c for c in ids if c in cols), None)
        if key is None or "name" not in cols or gpus:
            continue
        extra = [c for c in (major_col, minor_col, sm_col) if c in cols]
        sel = ", ".join([key, "name", *extra])
        for row in db.rows(f"SELECT {sel} FROM {table} ORDER BY {key}"):
            rec = dict(zip([key, "name", *extra], row, strict=True))
            major, minor, sms = rec.get(major_col), rec.get(minor_col), rec.get(sm_col)
            if major_col in cols and (not isinstance(major, int) or major <= 0):
                continue  # an integrated or display adapter nsys listed, not a CUDA device
            dev = rec[key]
            if not isinstance(dev, int) or dev in gpus:
                continue
            gpus[dev] = Gpu(
                device_id=dev,
                name=str(rec["name"]) if rec["name"] else None,
                compute_capability=f"{major}.{minor}" if isinstance(minor, int) else None,
                sm_count=sms if isinstance(sms, int) and sms > 0 else None,
            )
    for dev in devices:
        if dev not in gpus:
            gpus[dev] = Gpu(device_id=dev)
    return tuple(gpus[k] for k in sorted(gpus))
