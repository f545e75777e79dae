"""One stream runs one event at a time: a timed GPU event during which two later events of its own
stream start is impossible, and is dropped at the edge of ingest.

A GPU stream executes its kernels (its copies, its sets) in order, each after the last ended, so
on one (device, process, stream) no event can still run when the next two start. A table where
one does was edited or damaged (a one-hour kernel in a 4 ms run, written into an ingest folder;
every kernel of a stream starting at the same instant). Left in, such a row breaks every figure
built on time: the hour lands in whichever step's window it ends in, and the steps whose work it
overlaps lose their windows (:mod:`tcreport.analysis.windows`). So it is dropped, with a note, as
:mod:`tcreport.ingest.common.plausible` drops every other impossible row.

Why two later events and not one: real profiles do record pairs that overlap on one stream (the
Nsight Systems 2022.1 Windows export in ``../shared`` holds a kernel recorded twice with the same
times, and one that starts inside its predecessor on the same stream): a duplicated or mistimed
record, which this check must not throw away. Three at once on one stream no real trace here has.
Overlap under :data:`TOLERANCE_NS` is clock rounding (Kineto writes microseconds). Each table is
checked on its own (copies and kernels are different activity kinds whose clocks need not agree to
the nanosecond). One sort per table, vectorised.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: Overlap below this is clock rounding, not two events at once.
TOLERANCE_NS = 1_000


def _ints(table: pa.Table, name: str, fill: int) -> np.ndarray:
    return np.asarray(pc.fill_null(table.column(name), fill).to_numpy(), np.int64)


def containing(table: pa.Table) -> np.ndarray | None:
    """Per row, whether it is a timed event still running when the next two events of its own
    stream start; ``None`` when the table has no per-launch stream timestamps (or no such row)."""
    need = {"start_ns", "duration_ns", "stream_id", "device_id", "calls"}
    if table.num_rows < 3 or not need <= set(table.column_names):
        return None
    if table.column("start_ns").null_count == table.num_rows:
        return None
    timed = np.asarray(
        pc.fill_null(
            pc.and_(pc.is_valid(table.column("start_ns")), pc.equal(table.column("calls"), 1)),
            False,
        ).to_numpy(zero_copy_only=False),
        bool,
    ) & np.asarray(pc.is_valid(table.column("stream_id")).to_numpy(zero_copy_only=False), bool)
    rows = np.flatnonzero(timed)
    if rows.size < 3:
        return None
    start = _ints(table, "start_ns", 0)[rows]
    dev = _ints(table, "device_id", -1)[rows]
    proc = _ints(table, "process_id", -1)[rows] if "process_id" in table.column_names else dev * 0
    stream = _ints(table, "stream_id", -1)[rows]
    order = np.lexsort((start, stream, proc, dev))
    # each key sorted, compared and let go in turn (8 B a row each: the x1000 nsys export's
    # kernels held five sorted copies beside five unsorted ones, ~0.3 GiB, at the load's peak)
    same2 = np.ones(max(len(order) - 2, 0), dtype=bool)  # sorted: i+1 on the same stream too
    for key in (dev, proc, stream):
        k = key[order]
        same2 &= k[2:] == k[:-2]
    del k, key, dev, proc, stream
    s = start[order]
    del start
    e = s + _ints(table, "duration_ns", 0)[rows][order]
    # sorted by start: when the second successor starts inside it, so did the first
    inside = same2 & (s[2:] < e[:-2] - TOLERANCE_NS)
    if not inside.any():
        return None
    out = np.zeros(table.num_rows, bool)
    out[rows[order[:-2][inside]]] = True
    return out


def note(n: int, what: str) -> str:
    return (
        f"dropped {n:,} {'row' if n == 1 else 'rows'} of {what} each still running when the next "
        "two events of their own GPU stream start (a stream runs one event at a time, so the input "
        "was edited or damaged): they are left out of every figure"
    )
