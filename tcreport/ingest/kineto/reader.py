"""Reader for PyTorch profiler (Kineto) JSON traces, ``.json`` or ``.json.gz``, 2021 format included.

Why the choices below (the canonical tables leave them to the reader):

* Kernel names: Kineto writes only the demangled signature. ``name`` and ``long_name`` both hold it
  unchanged: a short name cut from it would lose what Tensor Core rules look for
  (``cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_...>`` would become ``Kernel2``).
* Kernel -> op: the kernel's ``correlation`` finds the launching runtime/driver call, whose
  ``External id`` names the innermost op that was open at launch. The match is trusted only when
  that op encloses the launch in time on the same thread: some traces (the A100 sample) write the
  correlation number as External id, which collides with unrelated ops. Otherwise the innermost
  ``cpu_op`` enclosing the launch on its thread is used. Several ops sharing one External id: the
  innermost (latest start) wins. GPU time goes to that innermost op only, like DLProf; parents
  (``aten::linear`` above ``aten::addmm``) get none, so op GPU times add up to kernel time.
* Ops: every ``cpu_op`` instance is a row (``gpu_ns`` 0 when it launched nothing); ``op_id`` is its
  External id as text (``<id>#<n>`` for repeats, ``op<row>`` without one). ``type`` is the name
  without ``aten::`` (``aten::mm`` -> ``mm``), other namespaces kept; ``scope`` is the path of
  ``nn.Module`` Python events enclosing the op, when the trace was recorded ``with_modules``.
* ``ProfilerStep#N`` (a ``user_annotation``, an ``Operator`` in 2021) defines iteration N; kernels
  and copies belong to the step that encloses their launch, ops to the step enclosing their start.
* Times are int64 ns; ``baseTimeNanoseconds`` is added when present so that traces of several
  ranks share a clock. GPU events' ``pid`` is a device index, so kernels take ``process_id`` from
  the launching call.
* Privacy: trace metadata and environment are never copied; only named fields are read (GPU
  name / capability / SM count, schema version, CUDA runtime version, torch version).
* Parsing: with msgspec (the ``[fast]`` extra) the trace is streamed into typed structs piece by
  piece (:mod:`.fast`, 4-5x faster at a quarter of the memory of ``json`` on a 230 MiB
  trace); without it, or for what msgspec would read differently, the standard library
  parses it (:mod:`.stdlib`). Both fill the same columns (:mod:`.events`), so the
  Run does not depend on which one ran.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport._group_by import aggregate_by
from tcreport.ingest.common import capture, started
from tcreport.ingest.common.distributed import distributed_from
from tcreport.ingest.kineto import columns as col
from tcreport.ingest.kineto import devices, graphs, links, ranges, stdlib
from tcreport.ingest.kineto import events as ev
from tcreport.ingest.kineto.collectives import collective_table
from tcreport.model import Granularity, IterationInfo, IterationMethod, Run, RunMeta, SourceFormat
from tcreport.schema import MemoryKind, TableKind, conform

try:
    # Re-exported: callers and tests ask `reader.fast is None` to learn whether msgspec is there.
    from tcreport.ingest.kineto import fast as fast
except ModuleNotFoundError as exc:  # msgspec comes with the [fast] extra
    if exc.name != "msgspec":
        raise
    fast = None  # type: ignore[assignment]

PROFILER = "PyTorch Profiler (Kineto)"
_STEP = re.compile(r"ProfilerStep#(\d{1,9})$")
_VERSION = re.compile(r"[0-9][0-9A-Za-z.+_-]{0,40}")
_log = logging.getLogger(__name__)


def sniff(path: Path) -> bool:
    """A JSON object (gzipped or not) with a ``traceEvents`` key in its first MiB of text."""
    try:
        if not path.is_file():
            return False
        head = stdlib.read_prefix(path)
    except OSError:
        return False
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{") and b'"traceEvents"' in head


def read(path: Path) -> Run:
    """msgspec when installed (several times faster, a fraction of the memory), else ``json``."""
    return read_with(path, use_msgspec=fast is not None)


def read_with(path: Path, use_msgspec: bool) -> Run:
    """Both parsers give the same Run; msgspec hands over to ``json`` for what it would read
    differently, so errors are always worded by the ``json`` parser."""
    parsed = None
    if use_msgspec and fast is not None:
        try:
            parsed = fast.parse(path)
        except fast.FastPathError as exc:
            _log.debug("%s: msgspec parser gave up (%s); parsing again with json", path, exc)
    if parsed is None:
        parsed = stdlib.parse(path)
    return capture.applied(_Builder(path, parsed).run(), path)  # tcreport profile's sidecar


class _Builder:
    """Holds the per-category frames while the tables are derived from one another."""

    def __init__(self, path: Path, parsed: ev.Parsed) -> None:
        self.path, self.header, self.legacy = path, parsed.header, parsed.legacy
        frames = parsed.frames
        self.k = frames[ev.KERNEL]
        self.n_memcpy = len(frames[ev.MEMCPY])
        memory = [frames[ev.MEMCPY].table, frames[ev.MEMSET].table]
        self.mc = ev.Frame(pa.concat_tables(memory).combine_chunks())
        self.rt = frames[ev.RUNTIME]
        self.op = frames[ev.OP]
        self.an = frames[ev.ANNOTATION]
        self.mod = frames[ev.MODULE]
        self.dropped = parsed.malformed + parsed.dropped
        self.steps: list[tuple[int, int, int]] = []
        self.notes: list[str] = []
        self.unread = parsed.unread_device
        self.counters: pa.Array | None = None  # tensor-pipe verdicts of range-profiler kernels
        if len(frames[ev.RANGE]) and not len(self.k):
            self.k, self.counters, notes = ranges.as_kernels(frames[ev.RANGE], self.rt)
            self.notes += notes

    # ------------------------------------------------------------------ tables

    def run(self) -> Run:
        ranges = self._ranges()
        ops_table, op_ids = self._ops()
        gpu = self._attribute()
        ops_table, op_ids, gpu = self._graph_replays(ops_table, op_ids, gpu)
        nk = len(self.k)
        kernels = self._kernels(gpu.slice(0, nk), op_ids)
        memory = self._memory(gpu.slice(nk), op_ids)
        ops_table = self._op_gpu_time(ops_table, kernels, gpu.slice(0, nk))
        used = {d for t in (kernels, memory) for d in pc.unique(t["device_id"]).to_pylist()}
        used.discard(None)
        return Run(
            meta=self._meta(used),
            kernels=kernels,
            memory=memory,
            ops=ops_table,
            iterations=self._iterations(),
            ranges=ranges,
            collectives=collective_table(self.k.table, kernels),
        )

    def _iterations(self) -> pa.Table | None:
        if not self.steps:
            return None  # the trace has no iteration marks; meta says "whole run"
        start, end, number = zip(*self.steps, strict=True)
        return conform(
            {
                "iteration": number,
                "start_ns": pa.array(start, pa.int64()),
                "end_ns": pa.array(end, pa.int64()),
            },
            TableKind.ITERATIONS,
        )

    def _ranges(self) -> pa.Table:
        f = self.an
        ends = pc.add(f.start_ns, f.dur_ns)
        pid, tid = links.thread_key(f.pid), links.thread_key(f.tid)
        starts, stops = f.start_ns.to_pylist(), ends.to_pylist()
        _, depth, _ = links.nest(list(zip(pid, tid, starts, stops, strict=True)))
        steps: dict[int, tuple[int, int, int]] = {}
        for i, name in enumerate(f.name.to_pylist()):
            m = _STEP.match(name)
            if m and int(m.group(1)) not in steps:
                steps[int(m.group(1))] = (starts[i], stops[i], int(m.group(1)))
        self.steps = sorted(steps.values())
        return conform(
            {
                "name": f.name,
                "process_id": f.pid,
                "thread_id": f.tid,
                "start_ns": f.start_ns,
                "end_ns": ends,
                "depth": pa.array(depth, pa.int32()),
            },
            TableKind.RANGES,
        )

    def _iteration(self, times: pa.Array) -> pa.Array:
        """Step number of the ``ProfilerStep`` enclosing each time (the later step at a boundary)."""
        if not self.steps:
            return pa.nulls(len(times), pa.int32())
        starts, ends, numbers = (np.array(c, np.int64) for c in zip(*self.steps, strict=True))
        t = pc.fill_null(times, 0).to_numpy(zero_copy_only=False)
        i = np.searchsorted(starts, t, side="right") - 1
        j = np.maximum(i, 0)
        ok = (i >= 0) & (t <= ends[j]) & pc.is_valid(times).to_numpy(zero_copy_only=False)
        return pa.array(numbers[j], pa.int32(), mask=~ok)

    def _ops(self) -> tuple[pa.Table, pa.Array]:
        f = self.op
        eid = f.col(ev.EID)
        op_ids = _op_ids(eid)
        table = pa.table(
            {
                "op_id": _op_id_column(op_ids, pa.array(np.arange(len(op_ids), dtype=np.int32))),
                "name": f.name,
                "type": _op_types(f.name),
                "scope": self._scopes(),
                "dtype": f.col(ev.DTYPE),
                "input_shapes": f.col(ev.DIMS),
                "concrete_inputs": f.col(ev.CONCRETE),
                "process_id": f.pid,
                "thread_id": f.tid,
                "start_ns": f.start_ns,
                "iteration": self._iteration(f.start_ns),
                "calls": _ones(len(f)),
                "cpu_ns": f.dur_ns,
            }
        )
        self.op_index = pa.table(
            {
                "eid": eid,
                "o_row": pa.array(np.arange(len(f), dtype=np.int64)),
                "o_start": f.start_ns,
                "o_end": pc.add(f.start_ns, f.dur_ns),
                "o_pid": f.pid,
                "o_tid": f.tid,
            }
        )
        return table, op_ids

    def _scopes(self) -> pa.Array:
        """``Outer_0/Inner_1`` path of the ``nn.Module`` events around each op's start."""
        m, f = self.mod, self.op
        if not len(m) or not len(f):
            return pa.nulls(len(f), pa.string())
        iv = links.intervals(m.pid, m.tid, m.start_ns, pc.add(m.start_ns, m.dur_ns))
        names = [n[len(ev.MODULE_PREFIX) :] for n in m.name.to_pylist()]
        pts = list(
            zip(
                links.thread_key(f.pid),
                links.thread_key(f.tid),
                f.start_ns.to_pylist(),
                strict=True,
            )
        )
        return links.module_paths(iv, names, pts)

    def _attribute(self) -> pa.Table:
        """Launch time, process and op row of every kernel then every memcpy/memset."""
        r = self.rt
        runtime = pa.table(
            {
                "corr": r.col(ev.CORR),
                "r_ts": r.start_ns,
                "r_pid": r.pid,
                "r_tid": r.tid,
                "r_eid": r.col(ev.EID),
            }
        )
        corr = pa.concat_arrays([self.k.col(ev.CORR), self.mc.col(ev.CORR)])
        eid = pa.concat_arrays([self.k.col(ev.EID), self.mc.col(ev.EID)])
        table, nested = links.attribute(corr, eid, runtime, self.op_index)
        if nested.size:
            self.notes.append(links.nesting_note(nested, len(self.k)))
        return table

    def _graph_replays(
        self, ops: pa.Table, op_ids: pa.Array, at: pa.Table
    ) -> tuple[pa.Table, pa.Array, pa.Table]:
        """CUDA-graph replays no op owns become op rows of what replayed them (:mod:`.graphs`)."""
        corr = pa.concat_arrays([self.k.col(ev.CORR), self.mc.col(ev.CORR)])
        o = graphs.owners(corr, at["op_row"].combine_chunks(), self.rt, self.an, ops.num_rows)
        if o is None:
            return ops, op_ids, at
        merged, ids = graphs.append_ops(ops, op_ids, o, self._iteration)
        merged = merged.add_column(
            0, "op_id", _op_id_column(ids, pa.array(np.arange(merged.num_rows, dtype=np.int32)))
        )
        self.notes.append(graphs.note(o))
        return merged, ids, at.set_column(2, "op_row", o.op_row)

    def _gpu_columns(self, f: ev.Frame, at: pa.Table, op_ids: pa.Array) -> dict[str, Any]:
        launch = at["launch_ns"].combine_chunks()
        return {
            "device_id": f.col(ev.DEVICE),
            "process_id": at["pid"],
            "stream_id": pc.coalesce(f.col(ev.STREAM), f.tid),
            "correlation_id": f.col(ev.CORR),
            "start_ns": f.start_ns,
            "duration_ns": f.dur_ns,
            "calls": _ones(len(f)),
            "iteration": self._iteration(launch),
            "op_id": _op_id_column(op_ids, at["op_row"]),
        }

    def _kernels(self, at: pa.Table, op_ids: pa.Array) -> pa.Table:
        f = self.k
        cols = self._gpu_columns(f, at, op_ids)
        cols.update(name=f.name, long_name=f.name, launch_ns=at["launch_ns"])
        if self.counters is not None:
            cols["counter_uses_tc"] = self.counters
        for key in (ev.GRID, ev.BLOCK):
            for axis in "xyz":
                cols[f"{key}_{axis}"] = f.col(f"{key}_{axis}")
        return conform(cols, TableKind.KERNELS)

    def _memory(self, at: pa.Table, op_ids: pa.Array) -> pa.Table:
        f = self.mc
        cols = self._gpu_columns(f, at, op_ids)
        names = f.name.to_pylist()
        kinds = [col.memcpy_kind(n).value for n in names[: self.n_memcpy]]
        kinds += [MemoryKind.MEMSET.value] * (len(names) - self.n_memcpy)
        cols.update(kind=pa.array(kinds, pa.string()), name=f.name, launch_ns=at["launch_ns"])
        cols["bytes"] = f.col(ev.BYTES)
        return conform(cols, TableKind.MEMORY)

    def _op_gpu_time(self, ops: pa.Table, kernels: pa.Table, at: pa.Table) -> pa.Table:
        linked = pa.table({"op_row": at["op_row"], "d": kernels["duration_ns"]}).filter(
            pc.is_valid(at["op_row"])
        )
        per_op = aggregate_by(linked, "op_row", [("d", "sum"), ("d", "count")])
        m = links.lookup(pa.array(np.arange(ops.num_rows, dtype=np.int64)), per_op, "op_row")
        ops = ops.append_column("gpu_ns", pc.fill_null(m["d_sum"], 0))
        ops = ops.append_column("kernel_calls", pc.fill_null(m["d_count"], 0))
        return conform(ops, TableKind.OPS)

    # ------------------------------------------------------------------ metadata

    def _meta(self, used: set[int]) -> RunMeta:
        if self.steps:
            nums = [s[2] for s in self.steps]
            its = IterationInfo(
                key_node="ProfilerStep",
                total=len(nums),
                start=min(nums),
                stop=max(nums),
                aggregated=len(nums),
                method=IterationMethod.PROFILER_STEP,
            )
        else:
            its = IterationInfo(total=1, method=IterationMethod.WHOLE_RUN)
        if self.legacy:
            self.notes.append("2021 legacy event categories (Operator/Runtime/Kernel)")
        if self.dropped:
            self.notes.append(
                f"{self.dropped} malformed events skipped (no name, time or duration, or one out of range)"
            )
        schema_v = self.header.schema_version
        started_at, started_source = self._started()
        gpus, note = devices.gpus(self.header.devices, used)
        self.notes += [note] if note else []
        unread = sum(self.unread.values())
        if unread and not used:
            cats = ", ".join(f"{c} {n:,}" for c, n in sorted(self.unread.items()))
            self.notes.append(
                f"device events tcreport does not read ({cats}): the run used an accelerator, "
                "but there are no kernels to judge"
            )
        return RunMeta(
            format=SourceFormat.KINETO_JSON,
            path=str(self.path),
            profiler=PROFILER,
            profiler_version=f"trace schema {schema_v}" if type(schema_v) is int else None,
            framework=self._torch_version(),
            cuda_version=self._cuda_version(),
            gpus=gpus,
            iterations=its,
            kernel_granularity=Granularity.LAUNCH,
            op_granularity=Granularity.LAUNCH,
            files=(self.path.name,),
            notes=tuple(self.notes),
            started_at=started_at,
            started_at_source=started_source,
            device_events_unread=unread,
            distributed=distributed_from(self.header.distributed),
        )

    def _started(self) -> tuple[str | None, str | None]:
        """``baseTimeNanoseconds`` (recent PyTorch: the wall clock at the profiler's start, while
        event times may run on another clock); else the earliest event time, which 2021-2023
        traces write as epoch microseconds. Neither when it is not a plausible date."""
        base = self.header.base_time_ns
        if started.plausible(base):
            assert isinstance(base, int)
            return started.iso(base), "PyTorch profiler baseTimeNanoseconds"
        firsts = [pc.min(f.start_ns).as_py() for f in (self.op, self.k) if len(f)]
        first = min((x for x in firsts if x is not None), default=None)
        if started.plausible(first):
            assert isinstance(first, int)
            return started.iso(first), "PyTorch profiler event timestamps"
        return None, None

    def _torch_version(self) -> str:
        """Only the one named field some capture tools write (``metadata.system.torch_env_info``),
        else plain "PyTorch"."""
        node = self.header.torch_version
        if isinstance(node, str) and _VERSION.fullmatch(node):
            return f"PyTorch {node}"
        # Kineto is torch.profiler's tracer: the trace is PyTorch's even when no version is
        # recorded, and saying so lets fixes use PyTorch's API and diff check comparability.
        return "PyTorch"

    def _cuda_version(self) -> str | None:
        v = self.header.cuda_runtime_version  # 12040 -> "12.4", CUDA's own encoding
        return f"{v // 1000}.{v % 1000 // 10}" if type(v) is int and 1000 <= v < 100000 else None


def _op_types(names: pa.Array) -> pa.Array:
    """Op names without ``aten::``, the regex run once per distinct name (a few hundred over
    190,000 ops), as plain strings like the names."""
    enc = names.dictionary_encode()
    return pc.replace_substring_regex(enc.dictionary, "^aten::", "").take(enc.indices)


def _ones(n: int) -> pa.Array:
    return pa.array(np.ones(n, dtype=np.int64))


def _op_id_column(op_ids: pa.Array, rows: pa.Array | pa.ChunkedArray) -> pa.DictionaryArray:
    """``op_ids[rows]`` as indices into ``op_ids`` (distinct by construction): the ops, kernels
    and memory tables share one dictionary, and analysis joins them on the indices."""
    if isinstance(rows, pa.ChunkedArray):
        rows = rows.combine_chunks()
    return pa.DictionaryArray.from_arrays(rows.cast(pa.int32()), op_ids)


def _op_ids(eid: pa.Array) -> pa.Array:
    """External id as text, ``<id>#<n>`` for its n-th repeat in file order, ``op<row>`` without."""
    n = len(eid)
    valid = pc.is_valid(eid).to_numpy(zero_copy_only=False)
    rank = np.zeros(n, dtype=np.int64)
    rows = np.flatnonzero(valid)
    if len(rows):
        values = pc.drop_null(eid).to_numpy()  # int64, exact (with nulls numpy would use float)
        order = np.lexsort((rows, values))  # by id, then row
        sorted_ids = values[order]
        first = np.r_[True, sorted_ids[1:] != sorted_ids[:-1]]
        group_start = np.maximum.accumulate(np.where(first, np.arange(len(rows)), 0))
        rank[rows[order]] = np.arange(len(rows)) - group_start
    ids = eid.cast(pa.string())
    if rank.any():  # a repeated id: ``#<n>`` on its repeats
        rank_arr = pa.array(rank)
        suffix = pc.if_else(
            pc.greater(rank_arr, 0),
            pc.binary_join_element_wise("#", rank_arr.cast(pa.string()), ""),
            "",
        )
        ids = pc.binary_join_element_wise(ids, suffix, "")
    if len(rows) == n:  # every op has an id: no ``op<row>`` needed
        return ids
    row_ids = pc.binary_join_element_wise("op", pa.array(np.arange(n)).cast(pa.string()), "")
    return pc.coalesce(ids, row_ids)
