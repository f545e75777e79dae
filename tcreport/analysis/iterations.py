"""Iterations, DLProf semantics: a key node marks each iteration; only [start, stop] is aggregated.

Warm-up, cuDNN autotuning and XLA compilation live in the first iterations; averaging them in is the
commonest way a profile lies. DLProf's answer was the key node: an op (or range) that runs once per
iteration, whose occurrences cut the timeline. We do the same for any input that has timestamps:
occurrence *k* opens iteration *k*, which runs until occurrence *k+1* opens; the last one ends where
the last occurrence ends or the run's last event, whichever is later. Without a key node we look for
``ProfilerStep#N`` ranges or a repeating outermost range (``train_step``) and say which we used
(:mod:`tcreport.analysis.iteration_marks`).

One rule puts every GPU event (kernel, memcpy, memset, collective) in an iteration: the iteration
whose host step launched it, by the host time of its launching call (correlation id -> runtime
call), wherever the GPU ran it. Ops belong to the iteration their host start is in. GPU time
decides only for an input that records no launches at all (TF xplane); an event without a launch
record in a trace that records them was queued before profiling began and belongs to no
iteration, as in HolisticTraceAnalysis and TraceLens (the report's notes say how many).

Everything here is vectorised: boundaries are a sorted int64 array, and rows are assigned with one
``searchsorted`` per table.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport import fmt, schema
from tcreport.analysis.eligibility import count_once
from tcreport.analysis.iteration_marks import MIN_ITERATION_COVERAGE as MIN_ITERATION_COVERAGE
from tcreport.analysis.iteration_marks import _occurrences as _occurrences
from tcreport.analysis.iteration_marks import boundaries
from tcreport.analysis.iteration_marks import candidate_key_nodes as candidate_key_nodes
from tcreport.analysis.iteration_marks import nested as nested
from tcreport.analysis.slicing import Slice, past_last
from tcreport.errors import OptionError
from tcreport.model import IterationInfo, IterationMethod, Run, RunMeta


@dataclass(frozen=True)
class Selection:
    """The outcome of iteration slicing, for the report header and the findings."""

    info: IterationInfo
    key_node_found: bool  # False when the user named a key node that never occurs
    candidates: tuple[str, ...] = ()  # validated key-node names, offered when no key node worked
    sliced: bool = False  # True when rows were filtered to [start, stop]


def _no_split(run: Run, info: IterationInfo, found: bool) -> Selection:
    """The selection of a run that could not be split; :func:`tcreport.analysis.result.compute`
    adds the validated key-node candidates (analysis.key_nodes)."""
    return Selection(info=info, key_node_found=found)


def _last_event_ns(run: Run) -> int | None:
    ends: list[int] = []
    for table in (run.kernels, run.memory):
        if (
            table is not None
            and table.num_rows
            and table.column("start_ns").null_count < table.num_rows
        ):
            e = pc.max(pc.add(table.column("start_ns"), table.column("duration_ns"))).as_py()
            if e is not None:
                ends.append(int(e))
    return max(ends) if ends else None


def _assign(table: pa.Table | None, starts: np.ndarray, time_col: str) -> pa.Table | None:
    """Set the ``iteration`` column from boundaries (row time >= start of iteration k); a null
    time leaves the row in no iteration."""
    if table is None or table.num_rows == 0:
        return table
    times = table.column(time_col)
    arr = pc.fill_null(times, -1).to_numpy()
    idx = np.searchsorted(starts, arr, side="right") - 1
    mask = (idx < 0) | (arr < 0)
    if times.null_count:
        mask |= np.asarray(pc.is_null(times).to_numpy(zero_copy_only=False), bool)
    it = pa.array(idx.astype(np.int32), mask=mask)
    pos = table.schema.get_field_index("iteration")
    return table.set_column(pos, table.schema.field("iteration"), it)


def _launch_time(table: pa.Table | None) -> str:
    """The column that puts a GPU row (kernel, copy, set) in a step: the host time of the call that
    launched it, so the step whose host code issued the work owns it wherever the GPU ran it
    (a copy launched in step N but run while step N+1 is queued stays in N). Only an input that
    records no launch at all (TF xplane, a DLProf memory table) falls back to GPU time. A row with
    no launch record in a table that has them was queued before profiling began: it stays in no
    iteration, as in HTA and TraceLens (see :func:`unlaunched_note`)."""
    if table is None or table.num_rows == 0:
        return "start_ns"
    launch = table.column("launch_ns")
    return "start_ns" if launch.null_count == table.num_rows else "launch_ns"


def unlaunched_note(run: Run) -> str | None:
    """The report's line on GPU rows left out of every iteration for want of a launch record."""
    count, gpu_ns = 0, 0
    for table in (run.kernels, run.memory):
        if _launch_time(table) != "launch_ns":
            continue
        assert table is not None
        lost = pc.and_(pc.is_null(table.column("launch_ns")), pc.is_valid(table.column("start_ns")))
        n = pc.sum(lost).as_py() or 0
        if n:
            count += n
            gpu_ns += pc.sum(table.column("duration_ns").filter(lost)).as_py() or 0
    if not count:
        return None
    return (
        f"{count:,} GPU events ({fmt.ns(gpu_ns)} of GPU time) have no launch record in the trace: "
        "they were queued before profiling began, so no iteration owns them and they are left "
        "out of the iteration figures, as HTA and TraceLens do"
    )


#: The marker tcreport found on its own, whose first occurrence may come after real work.
_FOUND = IterationMethod.REPEATING_RANGE


def _before_first_note(run: Run, first_ns: int, marker: str | None) -> str | None:
    """What falls before the first occurrence of a repeating range tcreport chose as the
    iteration marker by itself: no iteration owns it, so every figure leaves it out. A warm-up
    forward before the loop is meant to be left out; the first step's forward before a range
    that opens later in the step (``Optimizer.zero_grad``) is not, and only the user can tell,
    so the report says how much it is and which range was taken (``--key-node`` picks another)."""
    found: list[str] = []
    k = run.kernels
    if k is not None and k.num_rows:
        t = k.column(_launch_time(k))
        early = pc.fill_null(pc.less(t, first_ns), False)
        n = pc.sum(k.column("calls").filter(early)).as_py() or 0
        if n:
            gpu_ns = pc.sum(k.column("duration_ns").filter(early)).as_py() or 0
            found.append(
                f"{n:,} kernel launch{'es' if n != 1 else ''} ({fmt.ns(gpu_ns)} of GPU time)"
            )
    ops = run.ops
    if ops is not None and ops.num_rows:
        early = pc.fill_null(pc.less(ops.column("start_ns"), first_ns), False)
        n = pc.sum(ops.column("calls").filter(early)).as_py() or 0
        if n:
            found.append(f"{n:,} op call{'s' if n != 1 else ''}")
    if not found:
        return None
    return (
        f"{' and '.join(found)} came before the first {marker!r}, the repeating range tcreport "
        "took as the iteration marker (the trace has no ProfilerStep ranges and no --key-node "
        "was given): no iteration owns them, so every figure leaves them out. That is right for "
        "a warm-up before the loop; if they are part of the first step, pass --key-node with "
        "the range that opens each step"
    )


def _filter(table: pa.Table | None, start: int, stop: int) -> pa.Table | None:
    if table is None or table.num_rows == 0 or "iteration" not in table.column_names:
        return table
    it = table.column("iteration")
    if it.null_count == table.num_rows:
        return table
    keep = pc.fill_null(pc.and_(pc.greater_equal(it, start), pc.less_equal(it, stop)), False)
    if pc.all(keep).as_py():  # every iteration kept: the table itself, not a filtered copy of it
        return table
    return table.filter(keep)


def _bounded(
    start: int | None, stop: int | None, total: int, info: IterationInfo, allow_empty: bool = False
) -> tuple[int, int]:
    """The iterations ``[start, stop]`` clipped to the run's; a start past the last is refused,
    or with ``allow_empty`` (as documented for ``--allow-empty``) the whole run is aggregated."""
    lo = 0 if start is None else start
    if lo > total - 1:
        if allow_empty:
            return 0, total - 1
        raise OptionError(past_last(lo, total, info))
    hi = total - 1 if stop is None else min(total - 1, stop)
    return lo, max(lo, hi)


def select(run: Run, slc: Slice) -> tuple[Run, Selection]:
    """Split ``run`` into iterations and keep only ``[slc.iter_start, slc.iter_stop]``.

    Inputs without timestamps (DLProf's aggregated reports) were sliced by DLProf itself; they
    pass through with the profiler's own iteration figures.
    """
    key_node, iter_start, iter_stop = slc.key_node, slc.iter_start, slc.iter_stop
    reported = run.meta.iterations
    # DLProf aggregated at profile time; the TF capture profiled only the kept steps.
    profiler_sliced = reported.method is not None and reported.method.sliced_by_profiler
    if not _has_times(run) or (key_node is None and profiler_sliced):
        # The profiler already split and aggregated (DLProf); keep its iterations, narrowing to
        # [start, stop] only where rows carry their iteration number.
        return _keep_reported(run, key_node, iter_start, iter_stop, slc.allow_empty)
    bounds, key_node, found, note = boundaries(run, key_node)
    if note is not None:
        run = run.replace(meta=dataclasses.replace(run.meta, notes=(*run.meta.notes, note)))
    if bounds is None:
        info = IterationInfo(
            key_node=key_node,
            total=run.meta.iterations.total or 1,
            start=0,
            stop=0,
            aggregated=1,
            mean_ns=run.meta.iterations.mean_ns,
            std_ns=run.meta.iterations.std_ns,
            method=IterationMethod.WHOLE_RUN,
        )
        return run.replace(meta=_with_iterations(run, info)), _no_split(
            run, info, found and key_node is None
        )
    return _split(run, bounds, key_node, found, (iter_start, iter_stop), slc.allow_empty)


def _has_times(run: Run) -> bool:
    """Whether any kernel or op row carries a timestamp to split by."""
    return any(
        t is not None and t.num_rows > 0 and t.column("start_ns").null_count < t.num_rows
        for t in (run.kernels, run.ops)
    )


def _split(
    run: Run,
    bounds: tuple[np.ndarray, np.ndarray, IterationMethod],
    key_node: str | None,
    found: bool,
    asked: tuple[int | None, int | None],
    allow_empty: bool,
) -> tuple[Run, Selection]:
    """Number every row by the iteration it starts in and keep the ``asked`` ``[start, stop]``."""
    starts, ends, method = bounds
    iter_start, iter_stop = asked
    total = int(starts.size)
    last = _last_event_ns(run)
    bounds_end = np.empty_like(starts)
    bounds_end[:-1] = starts[1:]
    bounds_end[-1] = max(int(ends[-1]), last or int(ends[-1]))
    lo, hi = _bounded(
        iter_start, iter_stop, total, IterationInfo(key_node=key_node, method=method), allow_empty
    )
    durations = (bounds_end - starts)[lo : hi + 1]
    info = IterationInfo(
        key_node=key_node,
        total=total,
        start=lo,
        stop=hi,
        aggregated=hi - lo + 1,
        mean_ns=float(durations.mean()) if durations.size else None,
        std_ns=float(durations.std()) if durations.size else None,
        method=method,
    )
    iterations = schema.conform(
        {
            "iteration": pa.array(np.arange(total, dtype=np.int32)),
            "start_ns": pa.array(starts),
            "end_ns": pa.array(bounds_end),
        },
        schema.TableKind.ITERATIONS,
    )
    meta = _with_iterations(run, info)
    before = _before_first_note(run, starts[0], key_node) if method is _FOUND else None
    for note in (unlaunched_note(run), _past_note(iter_start, total), before):
        if note is not None:
            meta = dataclasses.replace(meta, notes=(*meta.notes, note))
    assigned = _assign(run.kernels, starts, _launch_time(run.kernels))
    collectives = _filter(_with_kernel_iteration(run.collectives, assigned, starts), lo, hi)
    kernels = _filter(assigned, lo, hi)
    ops = _filter(_assign(run.ops, starts, "start_ns"), lo, hi)
    out = run.replace(
        meta=meta,
        kernels=kernels,
        memory=_filter(_assign(run.memory, starts, _launch_time(run.memory)), lo, hi),
        # An op is in the iteration its host start is in, a kernel in its launch's: a kernel with
        # no launch record is in none, though its op may be. The op keeps only the time of the
        # kernels kept with it, or op time outgrows the kernel time it is part of.
        ops=count_once(ops, kernels) if ops is not None else None,
        iterations=iterations,
        collectives=collectives,
    )
    return out, Selection(info=info, key_node_found=found, sliced=(lo, hi) != (0, total - 1))


#: What ties a collective call to its kernel launch (one row of each per launch).
_LAUNCH_KEY = ("process_id", "device_id", "correlation_id", "start_ns")


_NONE = np.iinfo(np.int64).max  # an iteration-less row, sorted after every iteration


def _launch_keys(t: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """Each row's launch key as one structured value (compared field by field, in order), and
    whether the row can be matched: a correlation id and a GPU start. The process and device
    are compared as recorded, unknown (null) with unknown: a kernel whose launch record is
    missing has no process in a Kineto trace, and neither has its collective call."""
    key = np.empty(t.num_rows, dtype=[(f, np.int64) for f in _LAUNCH_KEY])
    ok = np.ones(t.num_rows, bool)
    for f in _LAUNCH_KEY:
        col = t.column(f)
        if col.null_count and f in ("correlation_id", "start_ns"):
            ok &= pc.is_valid(col).to_numpy(zero_copy_only=False)
        key[f] = pc.fill_null(col.cast(pa.int64()), -1).to_numpy()
    return key, ok


def _with_kernel_iteration(
    coll: pa.Table | None, kernels: pa.Table | None, starts: np.ndarray
) -> pa.Table | None:
    """Each collective call in the iteration of the kernel launch it was recorded on, so it is in
    the step whose host code launched it, like every GPU event (the module docstring). A call
    whose kernel is not in ``kernels`` is in none where the kernels record launches (it was
    queued before profiling began, like its kernel), else in the one its GPU start is in, as
    the kernels of an input without launches are."""
    if coll is None or coll.num_rows == 0:
        return coll
    own = _assign(coll, starts, "start_ns")
    assert own is not None
    if kernels is None or kernels.num_rows == 0:
        return own
    mine = kernels.filter(pc.is_in(kernels.column("correlation_id"), coll.column("correlation_id")))
    k_key, k_ok = _launch_keys(mine)
    c_key, c_ok = _launch_keys(coll)
    k_it = pc.fill_null(mine.column("iteration").cast(pa.int64()), _NONE).to_numpy()
    k_key, k_it = k_key[k_ok], k_it[k_ok]
    # One iteration per launch key (a replayed graph could repeat one): the earliest. A kernel in
    # no iteration (no launch record) keeps its call in none too.
    order = np.lexsort((k_it, *(k_key[f] for f in reversed(_LAUNCH_KEY))))
    k_key, k_it = k_key[order], k_it[order]
    first = np.r_[True, k_key[1:] != k_key[:-1]] if k_key.size else np.zeros(0, bool)
    k_key, k_it = k_key[first], k_it[first]
    at = np.minimum(np.searchsorted(k_key, c_key), max(k_key.size - 1, 0))
    found = c_ok & (k_key.size > 0)
    if k_key.size:
        found &= k_key[at] == c_key
    theirs = np.where(found, k_it[at] if k_key.size else _NONE, _NONE)
    mine_it = pa.array(theirs.astype(np.int32), mask=theirs == _NONE)
    launched = _launch_time(kernels) == "launch_ns"
    fallback = pa.nulls(coll.num_rows, pa.int32()) if launched else own.column("iteration")
    it = pc.if_else(pa.array(found), mine_it, fallback)
    pos = own.schema.get_field_index("iteration")
    return own.set_column(pos, own.schema.field("iteration"), it)


def _past_note(iter_start: int | None, total: int) -> str | None:
    """What an allowed start past the last iteration did (the whole run aggregated instead)."""
    if iter_start is None or iter_start <= total - 1:
        return None
    return (
        f"iteration {iter_start} was asked for first, but the run has {total} (0 to {total - 1}): "
        "every iteration is aggregated instead"
    )


def _keep_reported(
    run: Run,
    key_node: str | None,
    iter_start: int | None,
    iter_stop: int | None,
    allow_empty: bool = False,
) -> tuple[Run, Selection]:
    info = run.meta.iterations
    if key_node is not None:
        # Re-slicing needs timestamps the input does not have.
        return run, _no_split(run, info, False)
    if iter_start is None and iter_stop is None:
        return run, Selection(info=info, key_node_found=True)
    lo = info.start if iter_start is None else iter_start
    hi = info.stop if iter_stop is None else iter_stop
    lo = 0 if lo is None else lo
    hi = (info.total - 1 if info.total else lo) if hi is None else hi
    if info.total is not None:
        lo, hi = (
            (lo, hi) if lo <= info.total - 1 else _bounded(lo, hi, info.total, info, allow_empty)
        )
    narrowed = dataclasses.replace(
        info, start=lo, stop=hi, aggregated=hi - lo + 1, mean_ns=None, std_ns=None
    )
    meta = _with_iterations(run, narrowed)
    if info.total is not None and (note := _past_note(iter_start, info.total)) is not None:
        meta = dataclasses.replace(meta, notes=(*meta.notes, note))
    out = run.replace(
        meta=meta,
        kernels=_filter(run.kernels, lo, hi),
        memory=_filter(run.memory, lo, hi),
        ops=_filter(run.ops, lo, hi),
        collectives=_filter(run.collectives, lo, hi),
    )
    return out, Selection(info=narrowed, key_node_found=True, sliced=True)


def _with_iterations(run: Run, info: IterationInfo) -> RunMeta:
    return dataclasses.replace(run.meta, iterations=info)
