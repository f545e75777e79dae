"""The last check at the edge of ingest: every reader's tables hold only values a profiler writes.

Each reader already refuses or drops what its own format gets wrong; this is the net under all of
them, run once per read on the canonical tables (:func:`checked`), so that nothing after ingest
ever sees a negative count or duration, a position that would wrap int64 differences, or columns
whose sums leave int64 (``eligible_gpu_ns: -52`` from a hand-edited folder holding ``2**63 - 1``).

* A row with an impossible value (a negative time or count, a start outside
  :data:`schema.POSITIONS_NS`, an interval of 13 days or more, an aggregated total past
  :data:`MAX_TOTAL_NS`, a timed row, which is one event, counting other than one call) is
  dropped, and the run's notes name the table, the field and a value. So is a GPU event still
  running when the next two of its own stream start (:mod:`tcreport.ingest.common.streams`).
* A column whose values are each plausible but whose sum could still wrap (more than
  :data:`MAX_SUM` in total) is an :class:`InputError`: no figure built from it could be trusted.
  Every sum the analysis takes is over a subset of one such column or adds a few of them, so
  bounding each column's total at 2**60 leaves room for every sum after it.
* Reported figures in the metadata (the profiler's own totals) that are negative, or shares
  outside [0, 1], are dropped (``None``) with a note.

Only min/max passes run on sound tables (milliseconds for millions of rows); masks are built
only for a column whose extremes are out of bounds.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from tcreport.errors import InputError
from tcreport.ingest.common import streams
from tcreport.model import ReportedFigures, Run
from tcreport.schema import MAX_INTERVAL_NS, POSITIONS_NS, TableKind

#: An aggregated row (one kernel or op over all its calls) totals at most this (about 1.1 years).
MAX_TOTAL_NS = 2**55
#: Calls, kernel calls: no profile holds 2**40 (10**12) launches.
MAX_COUNT = 2**40
#: Bytes of one row (a copy, or all copies of a kind): 32 PiB is no profile's.
MAX_BYTES = 2**55
#: The most one column may sum to: eight such totals added still fit int64.
MAX_SUM = 2**60

#: launch_ns is not among them: an impossible launch is forgotten, not its event (_bad_launches)
_POSITIONS = ("start_ns", "end_ns")
_DURATIONS = ("duration_ns", "cpu_ns", "gpu_ns", "gpu_total_ns")
_COUNTS = ("calls", "kernel_calls")
_SUMMED = (*_DURATIONS, *_COUNTS, "bytes")

#: Where a table's rows came from, for notes and errors ("the ops table", "ops.parquet").
Label = Callable[[TableKind], str]


def _rows_of(kind: TableKind) -> str:
    return f"the {kind.value} table"


@dataclass(frozen=True)
class _Check:
    field: str
    ok: pa.ChunkedArray | pa.Array  # True where the row is sound (nulls count as sound)
    why: str


def checked(run: Run, label: Label = _rows_of, path: Path | None = None) -> Run:
    """``run`` with impossible rows dropped and noted; :class:`InputError` for a column whose
    total would wrap int64 (the error names ``path``, by default the run's, the table, the field
    and the sum)."""
    notes: list[str] = []
    changes: dict[str, pa.Table] = {}
    for kind in TableKind:
        table: pa.Table | None = getattr(run, kind.value)
        if table is None or table.num_rows == 0:
            continue
        kept, note = _plausible_rows(table, kind, label)
        if note:
            changes[kind.value], notes = kept, [*notes, note]
        if (late := _bad_launches(kept)) is not None:
            n = int(pc.sum(late).as_py())
            launch = pc.if_else(late, pa.scalar(None, pa.int64()), kept["launch_ns"])
            kept = kept.set_column(kept.schema.get_field_index("launch_ns"), "launch_ns", launch)
            changes[kind.value], notes = kept, [*notes, _late_note(n, label(kind))]
        if (
            kind in (TableKind.KERNELS, TableKind.MEMORY)
            and (bad := streams.containing(kept)) is not None
        ):
            n = int(bad.sum())
            kept = kept.filter(pa.array(~bad))
            changes[kind.value], notes = kept, [*notes, streams.note(n, label(kind))]
        _check_sums(kept, kind, label, path or run.meta.path)
    reported, dropped = _plausible_reported(run.meta.reported)
    if dropped:
        notes.append(
            "left out the profiler's own figures "
            + ", ".join(dropped)
            + ": negative, or a share outside 0-100 %"
        )
    if not notes:
        return run
    meta = dataclasses.replace(run.meta, reported=reported, notes=(*run.meta.notes, *notes))
    return run.replace(meta=meta, **changes)


#: A launch recorded this long after the event it launched had ended is no clock skew: the
#: launch time is impossible, and the event is placed by its GPU time instead.
LATE_LAUNCH_NS = 1_000_000_000


def _bad_launches(table: pa.Table) -> pa.ChunkedArray | None:
    """True where a row's launch time is impossible: outside the clock positions int64
    differences can take, or more than :data:`LATE_LAUNCH_NS` after the row's own end (in
    float64: extremes cannot wrap). None when no row's is. The row itself stays: its GPU time
    was recorded; only the host time that launched it was not."""
    cols = set(table.column_names)
    if "launch_ns" not in cols:
        return None

    def f64(name: str) -> pa.ChunkedArray:
        return pc.cast(table[name], pa.float64(), safe=False)

    lo, hi = POSITIONS_NS
    bad = pc.invert(
        pc.and_(pc.greater_equal(table["launch_ns"], lo), pc.less(table["launch_ns"], hi))
    )
    if "end_ns" in cols or {"start_ns", "duration_ns"} <= cols:
        # a launch-level row's end; an aggregated row (no start) has none, so it is never late
        end = f64("end_ns") if "end_ns" in cols else pc.add(f64("start_ns"), f64("duration_ns"))
        bad = pc.or_(bad, pc.greater(pc.subtract(f64("launch_ns"), end), LATE_LAUNCH_NS))
    bad = pc.fill_null(bad, False)
    return bad if pc.any(bad).as_py() else None


def _late_note(n: int, rows: str) -> str:
    return (
        f"ignored the launch time of {n:,} {'row' if n == 1 else 'rows'} of {rows}: past the "
        "clock's range or more than a second after the event had ended, which no launch can be; "
        "they are placed in steps by their GPU time instead"
    )


def _plausible_rows(table: pa.Table, kind: TableKind, label: Label) -> tuple[pa.Table, str]:
    checks = _checks(table)
    if not checks:
        return table, ""
    keep = checks[0].ok
    for c in checks[1:]:
        keep = pc.and_kleene(keep, c.ok)
    keep = pc.fill_null(keep, True)
    kept = table.filter(keep)
    first = next(c for c in checks if not pc.all(pc.fill_null(c.ok, True)).as_py())
    value = table.column(first.field).filter(pc.invert(pc.fill_null(first.ok, True)))[0].as_py()
    n = table.num_rows - kept.num_rows
    return kept, (
        f"dropped {n:,} {'row' if n == 1 else 'rows'} of {label(kind)} with an impossible value ({first.field} = {value:,}, "
        f"{first.why}{' among others' if len(checks) > 1 else ''}): the input was edited or "
        "damaged, and they are left out of every figure"
    )


def _out_of(col: pa.ChunkedArray, lo: int, hi: int) -> bool:
    """Whether any value of ``col`` lies outside [lo, hi): one min/max pass."""
    mm = pc.min_max(col)
    low, high = mm["min"].as_py(), mm["max"].as_py()
    return low is not None and (low < lo or high >= hi)


def _checks(table: pa.Table) -> list[_Check]:
    """The failing checks of ``table``, each with its row mask; none for a sound table."""
    cols = set(table.column_names)
    out: list[_Check] = []
    lo, hi = POSITIONS_NS
    for name in _POSITIONS:
        if name in cols and _out_of(table[name], lo, hi):
            ok = pc.and_(pc.greater_equal(table[name], lo), pc.less(table[name], hi))
            out.append(_Check(name, ok, "a clock position int64 differences would wrap"))
    if "end_ns" in cols:
        length = pc.subtract(
            pc.cast(table["end_ns"], pa.float64(), safe=False),
            pc.cast(table["start_ns"], pa.float64(), safe=False),
        )  # in float64: extremes cannot wrap
        if _out_of(length, 0, MAX_INTERVAL_NS):
            ok = pc.and_(pc.greater_equal(length, 0), pc.less(length, MAX_INTERVAL_NS))
            out.append(_Check("end_ns", ok, "an end before its start or 13 days after it"))
    for name, bound, what in (
        *((n, MAX_TOTAL_NS, "a negative time or a total past a year") for n in _DURATIONS),
        *((n, MAX_COUNT, "a negative count or one past 10**12") for n in _COUNTS),
        ("bytes", MAX_BYTES, "a negative size or one past 32 PiB"),
    ):
        if name in cols and _out_of(table[name], 0, bound):
            ok = pc.and_(pc.greater_equal(table[name], 0), pc.less(table[name], bound))
            out.append(_Check(name, ok, what))
    if {"calls", "start_ns"} <= cols and _out_of(table["calls"], 1, 2):
        one = pc.and_(pc.is_valid(table["start_ns"]), pc.is_valid(table["calls"]))
        ok = pc.or_kleene(pc.invert(one), pc.equal(table["calls"], 1))
        if not pc.all(ok).as_py():  # an aggregated table (no starts) has other counts: fine
            out.append(_Check("calls", ok, "a count beyond the one timed event it stands for"))
    per_launch = {"duration_ns", "calls", "start_ns"} <= cols
    if per_launch and _out_of(table["duration_ns"], -(2**63), MAX_INTERVAL_NS):  # < 13 days
        launch = pc.and_(pc.is_valid(table["start_ns"]), pc.equal(table["calls"], 1))
        ok = pc.or_kleene(
            pc.invert(pc.fill_null(launch, False)),
            pc.less(table["duration_ns"], MAX_INTERVAL_NS),
        )
        out.append(_Check("duration_ns", ok, "one launch lasting 13 days or more"))
    return out


def _check_sums(table: pa.Table, kind: TableKind, label: Label, path: str | Path) -> None:
    """Refuse a column whose total would leave int64 (each value being plausible on its own)."""
    for name in _SUMMED:
        if name not in table.column_names:
            continue
        col = table[name]
        top = pc.max(col).as_py()
        if top is None or top * table.num_rows < MAX_SUM:
            continue  # cannot reach the bound: no need to add anything up
        total = pc.sum(pc.cast(col, pa.float64(), safe=False)).as_py() or 0.0
        if total >= MAX_SUM:
            raise InputError(
                f"{label(kind)}: {name} sums to {total:.3g}, past 2**60, where every total "
                "must fit int64; the input was edited or damaged",
                path or None,
            )


def _plausible_reported(r: ReportedFigures) -> tuple[ReportedFigures, list[str]]:
    """The profiler's own figures with impossible ones set to ``None``, and their names."""
    bad: dict[str, None] = {}
    for f in dataclasses.fields(r):
        v = getattr(r, f.name)
        if v is None:
            continue
        if isinstance(v, float):
            share = f.name.endswith("utilization")
            if not math.isfinite(v) or v < 0 or (share and v > 1 + 1e-9):
                bad[f.name] = None
        elif v < 0 or v >= MAX_SUM:
            bad[f.name] = None
    return (dataclasses.replace(r, **bad), sorted(bad)) if bad else (r, [])
