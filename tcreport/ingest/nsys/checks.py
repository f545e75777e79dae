"""What the Nsight Systems reader leaves out or renames, and the notes that say so.

A profile can hold rows no figure may sum (an interval whose end lies before its start, a kernel
whose name is NULL in ``StringIds``) and NVTX ranges that say nothing about ops (a user's
``train_step``, MPI tracing ranges). The reader keeps every figure it can, drops or renames only
those rows, and the run's notes say how many, so a report never hides what it did not count.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from tcreport.schema import MAX_INTERVAL_NS, POSITIONS_NS


def timed(raw: pa.Table, end: str) -> tuple[pa.Table, int]:
    """Rows with a start and an end at or after it, and how many were not: an inverted, untimed
    or absurdly long interval would be summed into negative totals (``GPU kernel time -1789.6 s``)."""
    if raw.num_rows == 0:
        return raw, 0
    ok = pc.and_(pc.is_valid(raw["start"]), pc.is_valid(raw[end]))
    # in float64 (unsafe cast: ints past 2^53 only lose precision), so INT64 extremes cannot wrap
    length = pc.subtract(_f64(raw["end"]), _f64(raw["start"])) if end == "end" else _f64(raw[end])
    ok = pc.and_(ok, pc.and_(pc.greater_equal(length, 0), pc.less(length, MAX_INTERVAL_NS)))
    lo, hi = POSITIONS_NS  # a start near INT64_MIN would wrap every difference taken with it
    ok = pc.and_(ok, pc.and_(pc.greater_equal(raw["start"], lo), pc.less(raw["start"], hi)))
    ok = pc.fill_null(ok, False)
    bad = raw.num_rows - (pc.sum(ok).as_py() or 0)
    return (raw.filter(ok), bad) if bad else (raw, 0)


def _f64(col: pa.ChunkedArray) -> pa.ChunkedArray:
    return pc.cast(col, pa.float64(), safe=False)


def dropped_note(kernels: int, memory: int, nvtx: int = 0) -> list[str]:
    what = ((kernels, "kernel"), (memory, "memcpy/memset"), (nvtx, "NVTX range"))
    parts = [f"{n:,} {name}" for n, name in what if n]
    if not parts:
        return []
    return [
        f"dropped {' and '.join(parts)} rows whose end lies before their start (or that have "
        "no end, last more than 13 days, or start more than 36 years before the clock's origin "
        "or 146 years after it): they are left out of every figure"
    ]


def no_ops_note(ops: pa.Table | None, ranges: pa.Table | None, has_nvtx: bool) -> list[str]:
    """NVTX ranges that follow no op convention (a user's ``train_step``, MPI tracing ranges, one
    marker) leave the kernel figures whole but every op figure unknown: the report says why."""
    if (ops is not None and ops.num_rows) or not has_nvtx:
        return []
    n = 0 if ranges is None else ranges.num_rows
    return [
        "no op ranges found: the export's NVTX events follow no framework op convention "
        f"(emit_nvtx, DLProf, TF_ENABLE_NVTX_RANGES; {n:,} kept as plain ranges), so kernels "
        "are not attributed to ops and op figures are unknown"
    ]


UNNAMED = "(unnamed kernel)"


def named(names: pa.DictionaryArray) -> pa.DictionaryArray:
    """A NULL ``StringIds.value`` is a kernel without a name, not a missing row: it keeps its
    time under a placeholder (rules match names as text and must never see None); the run's
    notes count them (:func:`unnamed_note`)."""
    if not names.dictionary.null_count:
        return names
    return pa.DictionaryArray.from_arrays(names.indices, pc.fill_null(names.dictionary, UNNAMED))


def unnamed_note(kernels: pa.Table) -> list[str]:
    n = pc.sum(pc.equal(kernels["name"].cast(pa.string()), UNNAMED)).as_py() or 0
    if not n:
        return []
    return [f"{n:,} kernel launches have no name in StringIds (NULL); shown as {UNNAMED!r}"]
