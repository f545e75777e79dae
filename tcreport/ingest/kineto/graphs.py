"""Kernels replayed from a CUDA graph, owned by what replayed them.

CUPTI gives every kernel (and copy) of one ``cudaGraphLaunch`` the correlation id of that launch,
so the trace links each replayed kernel to the launch call. But a replay is not an ATen op: vLLM,
SGLang and ``torch.cuda.CUDAGraph.replay()`` launch graphs from Python, usually inside a
``record_function`` range (a ``user_annotation``) or no range at all, so no ``cpu_op`` encloses
the launch and the kernels, often most of an inference trace's GPU time, belong to no op.

Where the trace links a graph launch to something, that becomes the kernels' op: the annotation
whose External id the launch carries (or, failing that, the innermost annotation enclosing the
launch on its thread; ``ProfilerStep#N`` marks iterations and is never an owner), else the launch
call itself. Each owner is an op row of type ``CUDA graph replay`` named after it; kernels an
ordinary op already owns are left alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.ingest.kineto import events as ev
from tcreport.ingest.kineto import links

_GRAPH_LAUNCH = r"^(?:cuda|cu|hip)GraphLaunch"
OP_TYPE = "CUDA graph replay"


@dataclass(frozen=True)
class Owners:
    """The op rows graph replays add and each GPU activity's op row afterwards."""

    op_row: pa.Array  # int64, per GPU activity (kernels then copies)
    name: list[str]
    pid: list[int | None]
    tid: list[int | None]
    start_ns: list[int]
    dur_ns: list[int]
    activities: int  # GPU activities given an owner


def _launches(runtime: ev.Frame) -> pa.Table:
    r = runtime.table
    mask = pc.fill_null(pc.match_substring_regex(r.column("name"), _GRAPH_LAUNCH), False)
    g = r.filter(mask)
    g = pa.table(
        {
            "corr": g.column(ev.CORR),
            "name": g.column("name"),
            "ts": g.column("start_ns"),
            "dur": g.column("dur_ns"),
            "pid": g.column("pid"),
            "tid": g.column("tid"),
            "eid": g.column(ev.EID),
        }
    )
    return links.unique(g, "corr", [("ts", "ascending")])


def _owner_of(launches: pa.Table, ann: ev.Frame) -> list[int | None]:
    """Per launch, the annotation row that owns it: by External id when that annotation
    encloses it on its thread, else the innermost enclosing one; ``None`` without either."""
    names = ann.name.to_pylist()
    keep = [not (isinstance(n, str) and n.startswith(ev.STEP_PREFIX)) for n in names]
    starts, durs = ann.start_ns.to_pylist(), ann.dur_ns.to_pylist()
    a_pid, a_tid = links.thread_key(ann.pid), links.thread_key(ann.tid)
    rows = [i for i, k in enumerate(keep) if k]
    by_eid: dict[int, int] = {}
    for i, e in zip(
        rows, pc.take(ann.col(ev.EID), pa.array(rows, pa.int64())).to_pylist(), strict=True
    ):
        if e is not None:
            by_eid.setdefault(e, i)
    l_pid, l_tid = links.thread_key(launches["pid"]), links.thread_key(launches["tid"])
    l_ts, l_eid = launches["ts"].to_pylist(), launches["eid"].to_pylist()
    iv = [(a_pid[i], a_tid[i], starts[i], starts[i] + durs[i]) for i in rows]
    _, _, found = links.nest(iv, list(zip(l_pid, l_tid, l_ts, strict=True)))
    out: list[int | None] = []
    for j, hit in enumerate(found):
        linked = by_eid.get(l_eid[j]) if l_eid[j] is not None else None
        if (
            linked is not None
            and (a_pid[linked], a_tid[linked]) == (l_pid[j], l_tid[j])
            and (starts[linked] <= l_ts[j] <= starts[linked] + durs[linked])
        ):
            out.append(linked)
        else:
            out.append(rows[hit] if hit is not None else None)
    return out


def owners(
    corr: pa.Array, op_row: pa.Array, runtime: ev.Frame, ann: ev.Frame, first_row: int
) -> Owners | None:
    """Op rows for the graph replays no op owns (numbered from ``first_row``), or ``None``."""
    if not len(runtime) or not len(corr):
        return None
    launches = _launches(runtime)
    if launches.num_rows == 0:
        return None
    need = pc.and_(pc.is_null(op_row), pc.fill_null(pc.is_in(corr, launches["corr"]), False))
    if not pc.any(need).as_py():
        return None
    wanted = pc.unique(pc.filter(corr, need))
    launches = launches.filter(pc.is_in(launches["corr"], wanted))
    owner = _owner_of(launches, ann) if len(ann) else [None] * launches.num_rows
    keys: dict[tuple[str, int], int] = {}
    o = Owners(op_row, [], [], [], [], [], 0)
    new_row = np.empty(launches.num_rows, dtype=np.int64)
    for j, a in enumerate(owner):  # one per graph launch: replays are few, kernels many
        key = ("ann", a) if a is not None else ("launch", j)
        if key not in keys:
            keys[key] = first_row + len(keys)
            src, i = (ann.table, a) if a is not None else (launches, j)
            o.name.append(str(src.column("name")[i].as_py()))
            o.pid.append(src.column("pid")[i].as_py())
            o.tid.append(src.column("tid")[i].as_py())
            ts_col, dur_col = ("start_ns", "dur_ns") if a is not None else ("ts", "dur")
            o.start_ns.append(int(src.column(ts_col)[i].as_py()))
            o.dur_ns.append(int(src.column(dur_col)[i].as_py()))
        new_row[j] = keys[key]
    mapping = pa.table({"corr": launches["corr"], "new_row": pa.array(new_row)})
    looked = links.lookup(corr, mapping, "corr")["new_row"].combine_chunks()
    rows = pc.if_else(need, looked, op_row.cast(pa.int64()))
    return Owners(rows, o.name, o.pid, o.tid, o.start_ns, o.dur_ns, int(pc.sum(need).as_py() or 0))


def append_ops(
    ops: pa.Table, op_ids: pa.Array, o: Owners, iteration: Callable[[pa.Array], pa.Array]
) -> tuple[pa.Table, pa.Array]:
    """The ops table (without its ``op_id`` column) with the owners appended, and the op ids
    extended with theirs (``graph<i>``)."""
    n = len(o.name)
    start = pa.array(o.start_ns, pa.int64())
    extra = {
        "name": o.name,
        "type": [OP_TYPE] * n,
        "process_id": o.pid,
        "thread_id": o.tid,
        "start_ns": start,
        "iteration": iteration(start),
        "calls": [1] * n,
        "cpu_ns": o.dur_ns,
    }
    rest = ops.drop(["op_id"])
    cols = {f.name: pa.array(extra.get(f.name, [None] * n), f.type) for f in rest.schema}
    merged = pa.concat_tables([rest, pa.table(cols, rest.schema)])
    return merged, pa.concat_arrays([op_ids, pa.array([f"graph{i}" for i in range(n)])])


def note(o: Owners) -> str:
    return (
        f"{o.activities:,} GPU activities replayed from CUDA graphs, launched outside every op: "
        f"attributed to the {len(o.name)} range(s) or graph launch(es) that replayed them "
        f"(op type '{OP_TYPE}')"
    )
