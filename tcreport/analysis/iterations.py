"""Iterations, DLProf semantics: a key node marks each iteration; only [start, stop] is aggregated.

Warm-up, cuDNN autotuning and XLA compilation live in the first iterations; averaging them in is the
commonest way a profile lies. DLProf's answer was the key node: an op (or range) that runs once per
iteration, whose occurrences cut the timeline. We do the same for any input that has timestamps:
occurrence *k* opens iteration *k*, which runs until occurrence *k+1* opens; the last one ends where
the last occurrence ends or the run's last event, whichever is later. Without a key node we look for
``ProfilerStep#N`` ranges or a repeating outermost range (``train_step``) and say which we used.

Everything here is vectorised: boundaries are a sorted int64 array, and rows are assigned with one
``searchsorted`` per table.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport import schema
from tcreport.analysis import _codes
from tcreport.errors import UsageError
from tcreport.model import IterationInfo, Run, RunMeta


@dataclass(frozen=True)
class Selection:
    """The outcome of iteration slicing, for the report header and the findings."""

    info: IterationInfo
    key_node_found: bool  # False when the user named a key node that never occurs
    candidates: tuple[str, ...] = ()  # validated key-node names, offered when no key node worked
    sliced: bool = False  # True when rows were filtered to [start, stop]


def _occurrences(run: Run, name: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Start and end times of every occurrence of ``name`` among ranges and op instances.

    With several processes (one per rank) each rank runs the key node once per iteration, so
    taking all of them would cut every iteration into as many pieces as there are ranks: the
    boundaries come from the rank with the most occurrences (the lowest pid on a tie), and apply
    to every rank's rows by time.
    """
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    pids: list[np.ndarray] = []
    if run.ranges is not None and run.ranges.num_rows:
        sel = run.ranges.filter(_codes.equals(run.ranges.column("name"), name))
        starts.append(sel.column("start_ns").to_numpy())
        ends.append(sel.column("end_ns").to_numpy())
        pids.append(pc.fill_null(sel.column("process_id"), -1).to_numpy())
    if (
        run.ops is not None
        and run.ops.num_rows
        and run.ops.column("start_ns").null_count < run.ops.num_rows
    ):
        ops = run.ops.select(["name", "type", "op_id", "start_ns", "cpu_ns", "process_id"])
        if ops.column("start_ns").null_count:  # after the select: the ops table is wide
            ops = ops.filter(pc.is_valid(ops.column("start_ns")))
        hit = pc.or_(
            pc.or_(
                _codes.equals(ops.column("name"), name), _codes.equals(ops.column("type"), name)
            ),
            _codes.equals(ops.column("op_id"), name),
        )
        sel = ops.filter(hit)
        st = sel.column("start_ns").to_numpy()
        cpu = pc.fill_null(sel.column("cpu_ns"), 0).to_numpy()
        starts.append(st)
        ends.append(st + cpu)
        pids.append(pc.fill_null(sel.column("process_id"), -1).to_numpy())
    if not starts:
        return None
    s = np.concatenate(starts)
    e = np.concatenate(ends)
    pid = np.concatenate(pids)
    if s.size == 0:
        return None
    values, counts = np.unique(pid, return_counts=True)
    if values.size > 1:
        keep = pid == values[np.argmax(counts)]  # argmax takes the first, i.e. lowest, pid on ties
        s, e = s[keep], e[keep]
    order = np.argsort(s, kind="stable")
    return s[order], e[order]


def _profiler_steps(run: Run) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``ProfilerStep#N`` ranges, one boundary per step number: with several ranks in one trace,
    step N spans from the first rank's start to the last rank's end."""
    if run.ranges is None or run.ranges.num_rows == 0:
        return None
    extracted = _codes.per_value(
        run.ranges.column("name"), lambda d: pc.extract_regex(d, r"^ProfilerStep#(?P<n>\d{1,18})$")
    )
    valid = pc.is_valid(extracted)
    if not pc.any(valid).as_py():
        return None
    sel = run.ranges.filter(valid)
    steps = pa.table(
        {
            "n": pc.cast(pc.struct_field(extracted.filter(valid), "n"), pa.int64()),
            "start_ns": sel.column("start_ns"),
            "end_ns": sel.column("end_ns"),
        }
    )
    g = (
        steps.group_by("n")
        .aggregate([("start_ns", "min"), ("end_ns", "max")])
        .sort_by("start_ns_min")
    )
    return (
        g.column("n").to_numpy(),
        g.column("start_ns_min").to_numpy(),
        g.column("end_ns_max").to_numpy(),
    )


#: A repeating range is taken as the iteration marker only if its occurrences cover at least this
#: share of the run's span; short repeating markers (``FSDP::post_forward``) are not iterations.
MIN_ITERATION_COVERAGE = 0.5


def _span(run: Run) -> tuple[int, int] | None:
    lo: list[int] = []
    hi: list[int] = []
    for table, end_col in ((run.ranges, "end_ns"), (run.kernels, None)):
        if (
            table is None
            or table.num_rows == 0
            or table.column("start_ns").null_count == table.num_rows
        ):
            continue
        lo.append(int(pc.min(table.column("start_ns")).as_py()))
        end = (
            table.column(end_col)
            if end_col
            else pc.add(table.column("start_ns"), table.column("duration_ns"))
        )
        hi.append(int(pc.max(end).as_py()))
    return (min(lo), max(hi)) if lo else None


def _repeating_outer_range(run: Run) -> str | None:
    """The outermost range name that repeats and covers most of the run (``train_step``)."""
    if run.ranges is None or run.ranges.num_rows == 0:
        return None
    depth = run.ranges.column("depth")
    outer = (
        run.ranges.filter(pc.fill_null(pc.equal(depth, 0), True))
        if depth.null_count < len(depth)
        else run.ranges
    )
    span = _span(run)
    if outer.num_rows == 0 or span is None or span[1] <= span[0]:
        return None
    name = _codes.codes(outer.column("name"))
    names = pa.table(
        {
            "name": pa.array(name.codes),
            "dur": pc.subtract(outer.column("end_ns"), outer.column("start_ns")),
            "pid": pc.fill_null(outer.column("process_id"), 0),
        }
    )
    # Per process, so two ranks' copies of one step do not count twice.
    per = names.group_by(["name", "pid"]).aggregate([("dur", "sum"), ("dur", "count")])
    per = per.filter(pc.greater_equal(per.column("dur_count"), 2))
    if per.num_rows == 0:
        return None
    best = per.group_by("name").aggregate([("dur_sum", "max")])
    best = best.append_column("text", name.values.take(best.column("name")))
    best = best.sort_by([("dur_sum_max", "descending"), ("text", "ascending")])
    top = str(best.column("text")[0].as_py())
    coverage = best.column("dur_sum_max")[0].as_py() / (span[1] - span[0])
    return top if coverage >= MIN_ITERATION_COVERAGE else None


def candidate_key_nodes(run: Run, limit: int = 5) -> tuple[str, ...]:
    """Names that occur most often, as suggestions when no key node was found."""
    tallies: dict[str, int] = {}
    for table, col in ((run.ranges, "name"), (run.ops, "type"), (run.ops, "name")):
        if (
            table is None
            or table.num_rows == 0
            or table.column("start_ns").null_count == table.num_rows
        ):
            continue
        c = _codes.codes(table.column(col))
        counts = _codes.value_counts(c)
        frequent = np.flatnonzero(counts >= 2)
        for value, count in zip(c.take(frequent), counts[frequent].tolist(), strict=True):
            if value is not None:
                tallies[value] = max(tallies.get(value, 0), count)
    ranked = sorted(tallies.items(), key=lambda kv: (-kv[1], kv[0]))
    return tuple(name for name, _ in ranked[:limit])


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
    """Set the ``iteration`` column from boundaries (row time >= start of iteration k)."""
    if table is None or table.num_rows == 0:
        return table
    times = table.column(time_col)
    if time_col == "launch_ns" and times.null_count:
        times = pc.coalesce(times, table.column("start_ns"))
    arr = pc.fill_null(times, -1).to_numpy()
    idx = np.searchsorted(starts, arr, side="right") - 1
    it = pa.array(idx.astype(np.int32), mask=(idx < 0) | (arr < 0))
    pos = table.schema.get_field_index("iteration")
    return table.set_column(pos, table.schema.field("iteration"), it)


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


def _bounded(start: int | None, stop: int | None, total: int) -> tuple[int, int]:
    lo = 0 if start is None else start
    if lo > total - 1:
        raise UsageError(
            f"--iter-start {lo} is past the last iteration; the run has {total} (0 to {total - 1})"
        )
    hi = total - 1 if stop is None else min(total - 1, stop)
    return lo, max(lo, hi)


def select(
    run: Run, key_node: str | None, iter_start: int | None, iter_stop: int | None
) -> tuple[Run, Selection]:
    """Split ``run`` into iterations and keep only ``[iter_start, iter_stop]``.

    Inputs without timestamps (DLProf's aggregated reports) were sliced by DLProf itself; they
    pass through with the profiler's own iteration figures.
    """
    reported = run.meta.iterations
    # DLProf aggregated at profile time; the TF capture profiled only the kept steps.
    profiler_sliced = reported.method == "dlprof" or (reported.method or "").startswith(
        "TF profiler window"
    )
    if not _has_times(run) or (key_node is None and profiler_sliced):
        # The profiler already split and aggregated (DLProf); keep its iterations, narrowing to
        # [start, stop] only where rows carry their iteration number.
        return _keep_reported(run, key_node, iter_start, iter_stop)
    bounds, key_node, found = _boundaries(run, key_node)
    if bounds is None:
        info = IterationInfo(
            key_node=key_node,
            total=run.meta.iterations.total or 1,
            start=0,
            stop=0,
            aggregated=1,
            mean_ns=run.meta.iterations.mean_ns,
            std_ns=run.meta.iterations.std_ns,
            method="whole run",
        )
        return run.replace(meta=_with_iterations(run, info)), _no_split(
            run, info, found and key_node is None
        )
    return _split(run, bounds, key_node, found, iter_start, iter_stop)


def _has_times(run: Run) -> bool:
    """Whether any kernel or op row carries a timestamp to split by."""
    return any(
        t is not None and t.num_rows > 0 and t.column("start_ns").null_count < t.num_rows
        for t in (run.kernels, run.ops)
    )


def _boundaries(
    run: Run, key_node: str | None
) -> tuple[tuple[np.ndarray, np.ndarray, str] | None, str | None, bool]:
    """(starts, ends, method) of the iterations, or None; the key node used (a repeating outer
    range found on its own becomes one); whether a given key node occurred at all."""
    if key_node is not None:
        occ = _occurrences(run, key_node)
        if occ is None:
            return None, key_node, False
        return (occ[0], occ[1], f"key node {key_node!r}"), key_node, True
    steps = _profiler_steps(run)
    if steps is not None:
        return (steps[1], steps[2], "ProfilerStep#N ranges"), None, True
    outer = _repeating_outer_range(run)
    if outer is not None:
        occ = _occurrences(run, outer)
        assert occ is not None
        return (occ[0], occ[1], f"repeating range {outer!r}"), outer, True
    return None, None, True


def _split(
    run: Run,
    bounds: tuple[np.ndarray, np.ndarray, str],
    key_node: str | None,
    found: bool,
    iter_start: int | None,
    iter_stop: int | None,
) -> tuple[Run, Selection]:
    """Number every row by the iteration it starts in and keep ``[iter_start, iter_stop]``."""
    starts, ends, method = bounds
    total = int(starts.size)
    last = _last_event_ns(run)
    bounds_end = np.empty_like(starts)
    bounds_end[:-1] = starts[1:]
    bounds_end[-1] = max(int(ends[-1]), last or int(ends[-1]))
    lo, hi = _bounded(iter_start, iter_stop, total)
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
    out = run.replace(
        meta=_with_iterations(run, info),
        kernels=_filter(_assign(run.kernels, starts, "launch_ns"), lo, hi),
        memory=_filter(_assign(run.memory, starts, "start_ns"), lo, hi),
        ops=_filter(_assign(run.ops, starts, "start_ns"), lo, hi),
        iterations=iterations,
    )
    return out, Selection(info=info, key_node_found=found, sliced=(lo, hi) != (0, total - 1))


def _keep_reported(
    run: Run, key_node: str | None, iter_start: int | None, iter_stop: int | None
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
        _bounded(lo, hi, info.total)
    narrowed = dataclasses.replace(
        info, start=lo, stop=hi, aggregated=hi - lo + 1, mean_ns=None, std_ns=None
    )
    out = run.replace(
        meta=_with_iterations(run, narrowed),
        kernels=_filter(run.kernels, lo, hi),
        memory=_filter(run.memory, lo, hi),
        ops=_filter(run.ops, lo, hi),
    )
    return out, Selection(info=narrowed, key_node_found=True, sliced=True)


def _with_iterations(run: Run, info: IterationInfo) -> RunMeta:
    return dataclasses.replace(run.meta, iterations=info)
