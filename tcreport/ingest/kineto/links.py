"""How Kineto events link up: correlation ids, External ids, and time nesting on a thread.

Kept apart from table building because the rules are subtle and each has a real trace behind it:
the A100 sample writes correlation numbers as External ids (they collide with unrelated ops), so
an External-id match is only trusted when the op encloses the launch; otherwise the innermost op
around the launch on its thread is taken, as HTA does. Joins run in Arrow; only the nesting sweep is
a Python loop, and it runs only over the launches that need it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_NULL_I64 = pa.scalar(None, pa.int64())


def lookup(keys: pa.Array, right: pa.Table, key: str) -> pa.Table:
    """Left join of ``keys`` with ``right`` (unique keys), rows in the order of ``keys``:
    ``right``'s other columns, null where no key matches.

    int64 keys (ids, rows: every caller's) are found by binary search in the sorted right keys,
    which costs a fraction of Acero's hash join and the sort back into the keys' order (most of
    the time the reader spent linking the V100 x8 trace). Other keys go through Acero,
    single-threaded: on the 2-core machines this runs on, its thread pool added 30-40 MiB of peak
    memory on a 230 MiB trace and no speed."""
    rk = right[key]
    if not (keys.type == pa.int64() and rk.type == pa.int64()):
        left = pa.table({"__k": keys, "__row": pa.array(range(len(keys)), type=pa.int64())})
        joined = left.join(
            right, keys="__k", right_keys=key, join_type="left outer", use_threads=False
        )
        return joined.sort_by("__row").drop_columns(["__k", "__row"])
    rest = right.drop_columns([key])
    if rk.null_count:  # a null key matches nothing
        rest = rest.filter(pc.is_valid(rk))
        rk = rk.filter(pc.is_valid(rk))
    if not len(rk):
        return rest.take(pa.nulls(len(keys), pa.int64()))
    right_keys = np.asarray(rk.to_numpy(), np.int64)
    order = np.argsort(right_keys, kind="stable")
    ordered = right_keys[order]
    left_keys = np.asarray(pc.fill_null(keys, 0).to_numpy(zero_copy_only=False), np.int64)
    pos = np.minimum(np.searchsorted(ordered, left_keys), len(ordered) - 1)
    hit = ordered[pos] == left_keys
    if keys.null_count:
        hit &= np.asarray(pc.is_valid(keys).to_numpy(zero_copy_only=False), bool)
    return rest.take(pa.array(order[pos], pa.int64(), mask=~hit))


def unique(table: pa.Table, key: str, order: list[tuple[str, str]]) -> pa.Table:
    """Rows of ``table`` with a non-null ``key``, the first per key after sorting by ``order``."""
    table = table.filter(pc.is_valid(table[key])).sort_by([(key, "ascending"), *order])
    keys = table[key].combine_chunks()
    if len(keys) < 2:
        return table
    first = pc.not_equal(keys.slice(1), keys.slice(0, len(keys) - 1))
    return table.filter(pa.concat_arrays([pa.array([True]), first]))


def thread_key(values: pa.Array | pa.ChunkedArray) -> list[int]:
    """pid/tid values for the sweep, null as -1 (sorting needs comparable keys)."""
    return pc.fill_null(values, -1).to_pylist()  # type: ignore[no-any-return]


def intervals(
    pid: pa.Array, tid: pa.Array, start: pa.Array, end: pa.Array
) -> list[tuple[int, int, int, int]]:
    return list(
        zip(thread_key(pid), thread_key(tid), start.to_pylist(), end.to_pylist(), strict=True)
    )


def nest(
    intervals: Sequence[tuple[int, int, int, int]], points: Sequence[tuple[int, int, int]] = ()
) -> tuple[list[int | None], list[int], list[int | None]]:
    """Time nesting on each thread, in one sorted sweep.

    ``intervals`` are ``(pid, tid, start, end)``, ``points`` ``(pid, tid, t)``. Returns each
    interval's parent (innermost interval enclosing its start) and depth, and each point's innermost
    enclosing interval. An interval encloses times ``start <= t <= end`` (Kineto rounds to whole
    microseconds in older traces, so a launch can share the op's last microsecond); at equal starts
    the longer one is the outer, as the profiler nests them.
    """
    items: list[tuple[int, int, int, int, int, int]] = [
        (p, t, s, 0, -e, i) for i, (p, t, s, e) in enumerate(intervals)
    ]
    items.extend((p, t, x, 1, 0, j) for j, (p, t, x) in enumerate(points))
    items.sort()
    parents: list[int | None] = [None] * len(intervals)
    depths = [0] * len(intervals)
    found: list[int | None] = [None] * len(points)
    stack: list[tuple[int, int]] = []  # (end, interval index)
    key: tuple[int, int] | None = None
    for pid, tid, t, kind, neg_end, idx in items:
        if key != (pid, tid):
            key = (pid, tid)
            stack.clear()
        # an interval that starts where another ends follows it (ProfilerStep#4 after #3),
        # unless it has no length; a point at the end still belongs to the interval
        while stack and (stack[-1][0] < t or (kind == 0 and stack[-1][0] == t < -neg_end)):
            stack.pop()
        top = stack[-1][1] if stack else None
        if kind == 0:
            parents[idx] = top
            depths[idx] = len(stack)
            stack.append((-neg_end, idx))
        else:
            found[idx] = top
    return parents, depths, found


def attribute(
    corr: pa.Array, own_eid: pa.Array, runtime: pa.Table, ops: pa.Table
) -> tuple[pa.Table, np.ndarray]:
    """Launch time, launching process and op row of each GPU activity, and the positions of
    those whose op was found only by time nesting (so the caller can say which kinds they are).

    ``runtime`` has ``corr, r_ts, r_pid, r_tid, r_eid``; ``ops`` has ``eid, o_row, o_start,
    o_end, o_pid, o_tid``. The activity's own External id is used when no runtime call matches.
    Several ops with one External id: the innermost (latest start, then shortest) is the one.
    """
    rt = unique(runtime, "corr", [("r_ts", "ascending")])
    j = lookup(corr, rt, "corr")
    launch = j["r_ts"].combine_chunks()
    eid = pc.coalesce(j["r_eid"].combine_chunks(), own_eid)
    by_eid = unique(ops, "eid", [("o_start", "descending"), ("o_end", "ascending")])
    m = lookup(eid, by_eid, "eid")
    inside = pc.and_kleene(
        pc.and_kleene(pc.equal(m["o_pid"], j["r_pid"]), pc.equal(m["o_tid"], j["r_tid"])),
        pc.and_kleene(pc.less_equal(m["o_start"], launch), pc.less_equal(launch, m["o_end"])),
    )
    no_launch = pc.and_(pc.is_null(launch), pc.is_valid(m["o_row"]))
    valid = pc.or_(pc.fill_null(inside, False), no_launch)
    op_row = pc.if_else(valid, m["o_row"], _NULL_I64).combine_chunks()
    need = pc.indices_nonzero(pc.and_(pc.is_null(op_row), pc.is_valid(launch)))
    hits = np.zeros(0, np.int64)
    if len(need) and ops.num_rows:
        iv = intervals(ops["o_pid"], ops["o_tid"], ops["o_start"], ops["o_end"])
        pts = list(
            zip(
                thread_key(pc.take(j["r_pid"], need)),
                thread_key(pc.take(j["r_tid"], need)),
                pc.take(launch, need).to_pylist(),
                strict=True,
            )
        )
        _, _, found = nest(iv, pts)
        o_rows = ops["o_row"].to_pylist()
        rows = op_row.to_pylist()
        for i, hit in zip(need.to_pylist(), found, strict=True):
            rows[i] = None if hit is None else o_rows[hit]
        nested = np.array([h is not None for h in found], bool)
        hits = need.to_numpy()[nested] if nested.size else hits
        op_row = pa.array(rows, pa.int64())
    return pa.table({"launch_ns": launch, "pid": j["r_pid"], "op_row": op_row}), hits


def nesting_note(nested: np.ndarray, kernels: int) -> str:
    """The reader's note on the activities :func:`attribute` found only by time nesting, given
    their positions (kernels first, then ``kernels``.. the memory copies and sets), split by
    kind: a bare count of "GPU launches" beside the report's count of kernel launches reads as
    two figures of one thing that disagree (98 against 79 on the A100 AlexNet trace, whose 98
    are its 79 kernels and 19 copies)."""
    k = int(np.count_nonzero(nested < kernels))
    m = int(nested.size) - k
    parts = [f"{k:,} kernel launch{'es' if k != 1 else ''}"] if k else []
    parts += [f"{m:,} memory cop{'ies' if m != 1 else 'y'}/set{'s' if m != 1 else ''}"] if m else []
    n = int(nested.size)
    return (
        f"{n:,} GPU activit{'ies' if n != 1 else 'y'} ({' and '.join(parts)}) attributed to ops "
        "by time nesting (External ids did not match)"
    )


def module_paths(
    modules: list[tuple[int, int, int, int]], names: list[str], points: list[tuple[int, int, int]]
) -> pa.Array:
    """``Outer_0/Inner_1`` path of the module intervals enclosing each point (null outside all)."""
    parents, _, found = nest(modules, points)
    paths: dict[int, str] = {}

    def path_of(i: int) -> str:
        chain: list[int] = []
        j: int | None = i
        while j is not None and j not in paths:
            chain.append(j)
            j = parents[j]
        prefix = paths[j] if j is not None else ""
        for k in reversed(chain):
            prefix = f"{prefix}/{names[k]}" if prefix else names[k]
            paths[k] = prefix
        return paths[i]

    return pa.array([None if i is None else path_of(i) for i in found], pa.string())
