"""What marks the iterations of a run: ``ProfilerStep#N`` ranges, a key node, or a repeating
outermost range, and the checks that keep a name that is not a step from cutting the timeline.

:mod:`tcreport.analysis.iterations` numbers the rows by the boundaries found here. A name whose
occurrences nest inside or overlap each other (every NVTX range of an export called
``train_step``) is not a step: found on its own it is rejected, with the reason in the report's
notes; given as ``--key-node`` only its outermost occurrences cut iterations.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport._group_by import aggregate_by
from tcreport.analysis import _codes
from tcreport.model import IterationMethod, Run


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
    g = aggregate_by(steps, "n", [("start_ns", "min"), ("end_ns", "max")]).sort_by("start_ns_min")
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


def nested(starts: np.ndarray, ends: np.ndarray) -> int:
    """How many occurrences (sorted by start) begin before an earlier one has ended: they nest
    inside it or overlap it, so the name cannot cut the timeline into iterations."""
    if starts.size < 2:
        return 0
    reach = np.maximum.accumulate(ends)[:-1]
    return int(np.count_nonzero(starts[1:] < reach))


def _outermost(occ: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The occurrences not inside or overlapping an earlier one."""
    starts, ends = occ
    if starts.size < 2:
        return occ
    reach = np.r_[np.iinfo(np.int64).min, np.maximum.accumulate(ends)[:-1]]
    keep = starts >= reach
    return starts[keep], ends[keep]


#: Repeating outer ranges tried, by time covered, before the search gives up.
_OUTER_TRIES = 5


def _repeating_outer_range(run: Run) -> tuple[str | None, str | None]:
    """The outermost range name that repeats and covers most of the run (``train_step``), and
    why a name that would have been taken was not: its ranges nest or overlap (an export whose
    every NVTX range is called ``train_step`` is not 8,557 iterations of 35 µs)."""
    if run.ranges is None or run.ranges.num_rows == 0:
        return None, None
    depth = run.ranges.column("depth")
    outer = (
        run.ranges.filter(pc.fill_null(pc.equal(depth, 0), True))
        if depth.null_count < len(depth)
        else run.ranges
    )
    span = _span(run)
    if outer.num_rows == 0 or span is None or span[1] <= span[0]:
        return None, None
    name = _codes.codes(outer.column("name"))
    names = pa.table(
        {
            "name": pa.array(name.codes),
            "dur": pc.subtract(outer.column("end_ns"), outer.column("start_ns")),
            "pid": pc.fill_null(outer.column("process_id"), 0),
        }
    )
    # Per process, so two ranks' copies of one step do not count twice.
    per = aggregate_by(names, ["name", "pid"], [("dur", "sum"), ("dur", "count")])
    per = per.filter(pc.greater_equal(per.column("dur_count"), 2))
    if per.num_rows == 0:
        return None, None
    best = aggregate_by(per, "name", [("dur_sum", "max")])
    best = best.append_column("text", name.values.take(best.column("name")))
    best = best.sort_by([("dur_sum_max", "descending"), ("text", "ascending")])
    why = None
    for text, covered in zip(
        best.column("text").to_pylist()[:_OUTER_TRIES],
        best.column("dur_sum_max").to_pylist()[:_OUTER_TRIES],
        strict=True,
    ):  # a few names
        if covered / (span[1] - span[0]) < MIN_ITERATION_COVERAGE:
            break
        occ = _occurrences(run, str(text))
        bad = nested(*occ) if occ is not None else 0
        if occ is not None and not bad:
            return str(text), why
        if why is None and occ is not None:
            why = (
                f"range {text!r} repeats, but {bad:,} of its {occ[0].size:,} occurrences nest "
                "inside or overlap another, so it does not mark iterations"
            )
    return None, why


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


_Bounds = tuple[np.ndarray, np.ndarray, IterationMethod]


def boundaries(
    run: Run, key_node: str | None
) -> tuple[_Bounds | None, str | None, bool, str | None]:
    """(starts, ends, method) of the iterations, or None; the key node used (a repeating outer
    range found on its own becomes one); whether a given key node occurred at all; a note on
    occurrences set aside or a name rejected because its ranges nest or overlap."""
    if key_node is not None:
        occ = _occurrences(run, key_node)
        if occ is None:
            return None, key_node, False, None
        note = None
        if bad := nested(*occ):
            note = (
                f"{bad:,} of the {occ[0].size:,} occurrences of key node {key_node!r} nest inside "
                "or overlap another; iterations are cut at the outermost ones only"
            )
            occ = _outermost(occ)
        return (occ[0], occ[1], IterationMethod.KEY_NODE), key_node, True, note
    steps = _profiler_steps(run)
    if steps is not None:
        return (steps[1], steps[2], IterationMethod.PROFILER_STEP_RANGES), None, True, None
    outer, why = _repeating_outer_range(run)
    if outer is not None:
        occ = _occurrences(run, outer)
        assert occ is not None
        return (occ[0], occ[1], IterationMethod.REPEATING_RANGE), outer, True, why
    if why is not None:
        why += "; the whole run is aggregated as one iteration"
    return None, None, True, why
