"""One Nsight Systems export of a multi-process launch: a job with a rank per process.

``nsys profile torchrun --nproc_per_node=8 train.py`` (or ``mpirun``) leaves one export holding
every process of the launch, each driving its own GPU. Read as one run it is "a run of 8 GPUs",
which hides what a distributed job's reader wants: each rank's step, the slow rank, the time
the others wait for it. So such an export is a job (:mod:`tcreport.ingest.job`), and each rank is
the export's canonical tables filtered to one process (:func:`split`), analysed exactly as a
Kineto rank is.

What makes an export one: two or more processes launched kernels, and no GPU ran kernels of
two of them (each process drives its own GPUs). A single process driving several GPUs stays one
run; processes sharing a GPU are not a launch of ranks either (two unrelated programs).

The rank of each process: the exports seen so far record no process environment (no ``RANK``)
and NCCL's NVTX payloads, where exported, are not decoded here, so ranks follow PID order (a
launcher starts rank 0 first) and the job says so (``detected_by``).

The detection reads two small aggregates from SQLite (distinct process/GPU pairs of the kernel
table, a count over NCCL's NVTX rows), never the rows themselves; the split happens on the tables
the reader made, so the reader's scan is unchanged.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from tcreport.errors import InputError
from tcreport.ingest.common import sqlite
from tcreport.model import Distributed, Run

_KERNELS = "CUPTI_ACTIVITY_KIND_KERNEL"
_NVTX = "NVTX_EVENTS"
#: how the ranks are numbered (``Job.detected_by``)
DETECTED_BY = "processes of one Nsight Systems export (rank by PID order: it records no RANK)"


@dataclass(frozen=True)
class ProcessRank:
    """One process of the launch: its rank (PID order) and the GPUs it ran kernels on."""

    rank: int
    process_id: int
    devices: tuple[int, ...]


@dataclass(frozen=True)
class Launch:
    """The processes of a multi-process export, in rank order."""

    ranks: tuple[ProcessRank, ...]
    sizes_note: str  # why the job has no collective message sizes


def _pairs(con: sqlite3.Connection) -> list[tuple[int, int]]:
    rows = con.execute(
        f"SELECT DISTINCT (globalPid >> 24) & 16777215, deviceId FROM {_KERNELS} "
        "WHERE globalPid IS NOT NULL AND deviceId IS NOT NULL"
    ).fetchall()
    return [(int(p), int(d)) for p, d in rows]


def _sizes_note(con: sqlite3.Connection, names: set[str]) -> str:
    """What the export holds of NCCL's NVTX ranges, which is where nsys could carry sizes."""
    if _NVTX not in names:
        return "message sizes not recorded: the export holds no NVTX rows (NCCL's among them)"
    cols = set(sqlite.columns(con, _NVTX))
    payload = [f"count({c})" for c in ("binaryData", "jsonText", "jsonTextId") if c in cols]
    text = "e.text"
    join = ""
    if "textId" in cols and "StringIds" in names:
        text, join = "coalesce(e.text, s.value)", " LEFT JOIN StringIds s ON s.id = e.textId"
    if "domainId" not in cols or "text" not in cols:
        return "message sizes not recorded: the export's NVTX rows name no domain"
    count, with_payload = con.execute(
        f"SELECT count(*), {' + '.join(payload) or '0'} FROM {_NVTX} e{join} "
        f"WHERE e.domainId IS NOT NULL AND e.domainId != 0 AND {text} LIKE 'nccl%'"
    ).fetchone()
    if not count:
        return "message sizes not recorded: the export holds no NCCL NVTX ranges"
    if not with_payload:
        return (
            f"message sizes not recorded: NCCL's {count:,} NVTX ranges in this export carry no "
            "payload (no binaryData or jsonText), and its kernels' names carry no size"
        )
    return (
        f"message sizes not read: {with_payload:,} of NCCL's {count:,} NVTX ranges carry a "
        "binary payload, which tcreport does not decode yet"
    )


def sizes_note(path: Path) -> str | None:
    """Why an nsys export gives no collective message sizes (None where it cannot be read: the
    reader says why when the export is read)."""
    try:
        with sqlite.connect(path) as con:
            names = sqlite.table_names(con, path)
            sqlite.refuse_unsafe(con, path, [_NVTX, "StringIds"])
            return _sizes_note(con, names)
    except (InputError, sqlite3.Error):
        return None


def launch_of(path: Path) -> Launch | None:
    """The launch ``path`` (an nsys SQLite export) is of, or None when it is not one of several
    processes each on its own GPUs; an export the reader would refuse is left to the reader."""
    try:
        with sqlite.connect(path) as con:
            names = sqlite.table_names(con, path)
            if _KERNELS not in names:
                return None
            sqlite.refuse_unsafe(con, path, [_KERNELS, _NVTX, "StringIds"])
            devices: dict[int, set[int]] = {}
            for pid, dev in _pairs(con):  # one per (process, GPU): a handful
                devices.setdefault(pid, set()).add(dev)
            if len(devices) < 2:
                return None
            owners = [d for ds in devices.values() for d in ds]
            if len(owners) != len(set(owners)):
                return None  # a GPU ran kernels of two processes: not one rank per process
            note = _sizes_note(con, names)
    except (InputError, sqlite3.Error):
        return None
    ranks = tuple(
        ProcessRank(i, pid, tuple(sorted(devices[pid]))) for i, pid in enumerate(sorted(devices))
    )
    return Launch(ranks, note)


def _only(table: pa.Table | None, process_id: int) -> pa.Table | None:
    if table is None or "process_id" not in table.column_names:
        return table
    return table.filter(pc.equal(table["process_id"], pa.scalar(process_id, pa.int64())))


def split(run: Run, rank: int, process_id: int) -> Run:
    """The part of ``run`` (the whole export) that process ``process_id`` did, as rank ``rank``:
    every canonical table filtered to its rows, its GPUs only. The iteration table
    (the whole export's window, or its steps) is kept: ranks of one launch share it."""
    kernels = _only(run.kernels, process_id)
    used = set() if kernels is None else set(pc.unique(kernels["device_id"]).to_pylist())
    gpus = tuple(g for g in run.meta.gpus if g.device_id in used)
    on = ", ".join(str(g.device_id) for g in gpus) or "none"
    note = f"rank {rank} of a multi-process export: process {process_id} (by PID order), GPU {on}"
    meta = dataclasses.replace(
        run.meta, gpus=gpus, distributed=Distributed(rank=rank), notes=(*run.meta.notes, note)
    )
    return run.replace(
        meta=meta,
        kernels=kernels,
        memory=_only(run.memory, process_id),
        ops=_only(run.ops, process_id),
        ranges=_only(run.ranges, process_id),
        collectives=_only(run.collectives, process_id),
    )
