"""One Nsight Systems export of a multi-process launch: a job with a rank per process.

``nsys profile torchrun --nproc_per_node=8 train.py`` (or ``mpirun``) leaves one export holding
every process of the launch, each driving its own GPU. Read as one run it is "a run of 8 GPUs",
which hides what a distributed job's reader wants: each rank's step, the slow rank, the time
the others wait for it. So such an export is a job (:mod:`tcreport.ingest.job`), and each rank is
the export's canonical tables filtered to one process (:class:`Export`), analysed exactly as a
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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.errors import InputError
from tcreport.ingest.common import sqlite
from tcreport.ingest.common.constant import Constants
from tcreport.ingest.common.later import Later
from tcreport.ingest.common.memory import release_free_memory
from tcreport.ingest.nsys import db
from tcreport.model import Distributed, Run, RunMeta

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
    sizes: Later[str | None]  # why the job has no collective message sizes


def _pairs(con: sqlite3.Connection) -> list[tuple[int, int]]:
    rows = con.execute(
        f"SELECT DISTINCT (globalPid >> 24) & 16777215, deviceId FROM {_KERNELS} "
        "WHERE globalPid IS NOT NULL AND deviceId IS NOT NULL"
    ).fetchall()
    return [(int(p), int(d)) for p, d in rows]


def _sizes_query(con: sqlite3.Connection, names: set[str]) -> tuple[str, bool]:
    """What the export holds of NCCL's NVTX ranges, which is where nsys could carry sizes: the
    note where the schema alone says (``(note, False)``), else the SQL that counts NCCL's ranges
    and those with a payload (``(sql, True)``)."""
    if _NVTX not in names:
        return (
            "message sizes not recorded: the export holds no NVTX rows (NCCL's among them)",
            False,
        )
    cols = set(sqlite.columns(con, _NVTX))
    if "domainId" not in cols or "text" not in cols:
        return "message sizes not recorded: the export's NVTX rows name no domain", False
    payload = [f"count({c})" for c in ("binaryData", "jsonText", "jsonTextId") if c in cols]
    # CAST: SQLite 3.5x (ADBC's) matches a BLOB against LIKE, 3.40 (a Python's sqlite3) never
    # does; a text stored as a BLOB counts the same through either
    named = "CAST(text AS TEXT) LIKE 'nccl%'"
    if "textId" in cols and "StringIds" in names:  # the text, else its registered string's
        named = (
            f"({named} OR (text IS NULL AND textId IN "
            "(SELECT id FROM StringIds WHERE CAST(value AS TEXT) LIKE 'nccl%')))"
        )
    sql = (
        f"SELECT count(*), {' + '.join(payload) or '0'} FROM {_NVTX} "
        f"WHERE domainId IS NOT NULL AND domainId != 0 AND {named}"
    )
    return sql, True


def _sizes_note(count: object, with_payload: object) -> str:
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


#: What the count reads that is not a stored table (a view, a virtual table, a generated
#: column), asked on the connection that counts: :func:`sizes_later` checked the file the path
#: held when the job was found, and the count runs later, unbounded through ADBC.
_UNSAFE = (
    "SELECT count(*) FROM sqlite_master m WHERE lower(m.name) IN ('nvtx_events', 'stringids') "
    "AND (m.type = 'view' OR (m.type = 'table' AND (upper(ltrim(m.sql)) LIKE 'CREATE VIRTUAL%' "
    "OR EXISTS (SELECT 1 FROM pragma_table_xinfo(m.name) x WHERE x.hidden = 2))))"
)


def _counted(path: Path, sql: str) -> Later[str | None]:
    """The note from counting NCCL's ranges: through ADBC in a thread once the reader's scan is
    done (:mod:`tcreport.ingest.common.later`; ~1 s of the x1000 export's critical path), else
    through ``sqlite3`` when the job asks for it. None where the file cannot be counted: the
    reader says why when it reads it."""

    def through_adbc() -> str | None:
        try:
            row = db.adbc_row(path, sql, unsafe=_UNSAFE)
        except (InputError, pa.ArrowException, OSError, db.adbc_errors()):
            return None
        return through_sqlite() if row is None else _sizes_note(*row[:2])

    def through_sqlite() -> str | None:
        try:
            with sqlite.connect(path) as con:  # checked again: the path may hold a new file
                sqlite.refuse_unsafe(con, path, [_NVTX, "StringIds"])
                count, with_payload = con.execute(sql).fetchone()
        except (InputError, sqlite3.Error):
            return None
        return _sizes_note(count, with_payload)

    if db.has_adbc():
        return Later(through_adbc, threaded=True)
    return Later(through_sqlite, threaded=False)


def sizes_later(path: Path) -> Later[str | None]:
    """Why an nsys export gives no collective message sizes (None where it cannot be read: the
    reader says why when the export is read), worked out off the critical path."""
    try:
        with sqlite.connect(path) as con:
            names = sqlite.table_names(con, path)
            sqlite.refuse_unsafe(con, path, [_NVTX, "StringIds"])
            text, counts = _sizes_query(con, names)
    except (InputError, sqlite3.Error):
        return Later.known(None)
    return _counted(path, text) if counts else Later.known(text)


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
            text, counts = _sizes_query(con, names)
    except (InputError, sqlite3.Error):
        return None
    ranks = tuple(
        ProcessRank(i, pid, tuple(sorted(devices[pid]))) for i, pid in enumerate(sorted(devices))
    )
    return Launch(ranks, _counted(path, text) if counts else Later.known(text))


#: The canonical tables that hold rows of one process each (``process_id``); the iteration table
#: is the export's window, shared by its ranks.
PER_PROCESS = ("kernels", "memory", "ops", "ranges", "collectives")


class Export:
    """A multi-process export read whole, handed out rank by rank: each process's rows are moved
    out of the rest the first time that process is asked for, one table at a time, so the export
    is never held twice (the whole beside a rank's copy of its rows, as filtering the whole for
    each rank did: ~0.5 GB more at the x1000 export's peak). A rank asked for again (the rank a
    job shows in full) gets the rows it was given before."""

    def __init__(self, run: Run, *, geometry: bool = True) -> None:
        self.geometry = geometry  # whether ``run`` was read with its kernels' launch geometry
        self._meta = run.meta
        self._iterations = run.iterations
        self._rest: dict[str, pa.Table | None] = {n: getattr(run, n) for n in PER_PROCESS}
        self._taken: dict[int, dict[str, pa.Table | None]] = {}
        self._forgotten: set[int] = set()

    def rank(self, rank: int, process_id: int) -> Run:
        """Process ``process_id``'s part of the export as rank ``rank`` (:func:`rank_run`)."""
        if not self.gives(process_id):
            raise ValueError(f"process {process_id}'s rows were let go (Export.forget)")
        if process_id not in self._taken:
            self._taken[process_id] = _take(self._rest, process_id)
        return rank_run(self._meta, self._iterations, self._taken[process_id], rank, process_id)

    def gives(self, process_id: int) -> bool:
        """Whether :meth:`rank` can still hand out ``process_id``'s rows."""
        return process_id not in self._forgotten

    def forget(self, process_id: int) -> None:
        """Let go of ``process_id``'s rows once its rank is analysed and never asked for again
        (the job keeps its Report): while the next rank is analysed they are not held beside
        it (~0.45 GiB of the x1000 export's 2 ranks)."""
        if process_id not in self._taken:
            self._taken[process_id] = _take(self._rest, process_id)  # out of the rest, too
        self._forgotten.add(process_id)
        del self._taken[process_id]
        release_free_memory()

    def held_beside(self, process_id: int) -> int:
        """Bytes of the rows of processes other than ``process_id`` still held (an upper bound:
        buffers shared between tables, as the op ids' dictionary, count once per table; a table
        left without rows holds only such shared buffers, and counts nothing)."""
        tables = [*self._rest.values()]
        tables += [t for pid, ts in self._taken.items() if pid != process_id for t in ts.values()]
        return sum(t.nbytes for t in tables if t is not None and t.num_rows)


def _take(rest: dict[str, pa.Table | None], process_id: int) -> dict[str, pa.Table | None]:
    """Move ``process_id``'s rows out of ``rest`` into the tables returned, a column at a time:
    each column of the whole is freed once both its halves are made, so the move holds at most
    one column twice (a whole table twice: ~0.7 GiB more at the x1000 export's peak). glibc is
    asked to hand the freed blocks back after each table (it keeps those of up to 32 MiB)."""
    mine: dict[str, pa.Table | None] = {}
    # each half's process ids: one buffer for all its tables, as long as the longest
    tables = [t for t in rest.values() if t is not None and "process_id" in t.column_names]
    pid = pa.scalar(process_id, pa.int64())
    counts = [
        (pc.sum(pc.equal(t["process_id"], pid)), pc.sum(pc.not_equal(t["process_id"], pid)))
        for t in tables
    ]
    del tables
    pids = tuple(_Pids(max((c[h].as_py() or 0 for c in counts), default=0)) for h in (0, 1))
    # and one set of constant buffers for every table of both halves (:func:`_filtered`)
    consts = Constants(max(p.rows for p in pids))
    for name in PER_PROCESS:
        table = rest.pop(name)
        if table is None or "process_id" not in table.column_names:
            mine[name] = rest[name] = table  # not per process: every rank sees all of it
            continue
        is_mine = pc.equal(table["process_id"], pa.scalar(process_id, pa.int64()))
        not_mine = pc.invert(is_mine)  # null pids: no rank's, in neither half
        keep = [(m, pc.sum(m).as_py() or 0) for m in (is_mine, not_mine)]
        schema, columns = table.schema, table.columns
        del table
        halves: tuple[list[pa.Array | pa.ChunkedArray], ...] = ([], [])
        for i, field in enumerate(schema):
            col, columns[i] = columns[i], None
            for half, (m, n), ids in zip(halves, keep, pids, strict=True):
                part = _filtered(col, field.name, m, consts, n)
                half.append(ids.shared(part) if field.name == "process_id" else part)
            del col
        mine[name] = pa.table(halves[0], schema=schema)
        rest[name] = pa.table(halves[1], schema=schema)
        del halves, keep, is_mine, not_mine
        release_free_memory()  # per table: the next one's halves reuse the pages, not add to them
    return mine


class _Pids:
    """One int64 buffer of a process id for the ``process_id`` columns of a rank's tables: the
    rank's rows all hold its pid (as the rest's do, once the other ranks are moved out), so the
    kernels', copies' and ops' columns can be views of one buffer instead of three copies
    (8 B a row: ~19 MiB a rank of the x1000 export)."""

    def __init__(self, rows: int) -> None:
        self.rows = rows  # the most any column asks for
        self._pid: int | None = None
        self._buffer: pa.Buffer | None = None

    def shared(self, col: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
        """``col`` itself, or a view of the shared buffer where it holds one pid, no nulls."""
        if not len(col) or len(col) > self.rows or col.null_count or col.type != pa.int64():
            return col
        low, high = (v.as_py() for v in pc.min_max(col).values())
        if low != high or (self._pid is not None and low != self._pid):
            return col
        if self._buffer is None:
            self._pid, self._buffer = low, pa.py_buffer(np.full(self.rows, low, np.int64))
        return pa.Array.from_buffers(
            pa.int64(), len(col), [None, self._buffer.slice(0, len(col) * 8)]
        )


def _filtered(
    col: pa.ChunkedArray, name: str, keep: pa.ChunkedArray, consts: Constants, n: int
) -> pa.Array | pa.ChunkedArray:
    """``col.filter(keep)``, except that the columns the reader made views of one shared buffer
    (all null, or ``calls`` 1 and ``iteration`` 0 on every row:
    :mod:`tcreport.ingest.common.constant`) stay such views of ``consts`` instead of becoming
    copies (~50 MiB per rank of the x300 export). ``n``: the rows ``keep`` keeps."""
    if name == "calls" and col.type == pa.int64() and _constant(col, 1):
        return consts.ones_int64(n)
    if name == "iteration" and pa.types.is_integer(col.type) and _constant(col, 0):
        return consts.zeros(n, col.type)
    if _all_null(col):
        return consts.nulls(n, col.type)
    return col.filter(keep)


def _constant(col: pa.ChunkedArray, value: int) -> bool:
    if col.null_count or not len(col):
        return False
    low, high = pc.min_max(col).values()
    return bool(low.as_py() == high.as_py() == value)


def _all_null(col: pa.ChunkedArray) -> bool:
    """Null on every row, and nothing a copy would keep beyond that (a dictionary's values)."""
    if not len(col) or col.null_count != len(col):
        return False
    return not pa.types.is_dictionary(col.type) or all(len(c.dictionary) == 0 for c in col.chunks)


def rank_run(
    meta: RunMeta,
    iterations: pa.Table | None,
    tables: dict[str, pa.Table | None],
    rank: int,
    process_id: int,
) -> Run:
    """The run of rank ``rank``: process ``process_id``'s rows of every per-process table
    (``tables``), the GPUs it ran kernels on, and the export's iteration table (the whole
    export's window, or its steps): ranks of one launch share it."""
    kernels = tables["kernels"]
    used = set() if kernels is None else set(pc.unique(kernels["device_id"]).to_pylist())
    gpus = tuple(g for g in meta.gpus if g.device_id in used)
    on = ", ".join(str(g.device_id) for g in gpus) or "none"
    note = f"rank {rank} of a multi-process export: process {process_id} (by PID order), GPU {on}"
    meta = dataclasses.replace(
        meta, gpus=gpus, distributed=Distributed(rank=rank), notes=(*meta.notes, note)
    )
    return Run(meta=meta, iterations=iterations, **tables)
