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
"""

from __future__ import annotations

import re
from bisect import bisect_right
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tcreport.errors import InputError
from tcreport.ingest import _kineto_events as ev
from tcreport.ingest import _kineto_links as links
from tcreport.model import Gpu, Granularity, IterationInfo, Run, RunMeta, SourceFormat
from tcreport.schema import MemoryKind, TableKind, conform

PROFILER = "PyTorch Profiler (Kineto)"
_STEP = re.compile(r"ProfilerStep#(\d{1,9})$")
_VERSION = re.compile(r"[0-9][0-9A-Za-z.+_-]{0,40}")


def sniff(path: Path) -> bool:
    """A JSON object (gzipped or not) with a ``traceEvents`` key in its first MiB of text."""
    try:
        if not path.is_file():
            return False
        head = ev.read_prefix(path)
    except OSError:
        return False
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{") and b'"traceEvents"' in head


def read(path: Path) -> Run:
    doc = ev.load_document(path)
    events = doc.pop("traceEvents", None)
    if not isinstance(events, list):
        what = "no 'traceEvents' list" if events is None else "'traceEvents' is not a list"
        raise InputError(f"{what}; is this a PyTorch profiler trace?", path)
    base = doc.get("baseTimeNanoseconds")
    base_ns = base if type(base) is int and 0 <= base <= ev.MAX_BASE_NS else 0
    buckets = ev.bucket_events(events)
    del events
    return _Builder(path, doc, buckets, base_ns).run()


class _Builder:
    """Holds the per-category frames while the tables are derived from one another."""

    def __init__(self, path: Path, doc: dict[str, Any], b: ev.Buckets, base_ns: int) -> None:
        self.path, self.doc, self.legacy = path, doc, b.legacy
        lists = b.by_kind
        self.k = ev.frame(lists[ev.KERNEL], base_ns)
        self.mc = ev.frame(lists[ev.MEMCPY] + lists[ev.MEMSET], base_ns)
        self.rt = ev.frame(lists[ev.RUNTIME], base_ns)
        self.op = ev.frame(lists[ev.OP], base_ns)
        self.an = ev.frame(lists[ev.ANNOTATION], base_ns)
        self.mod = ev.frame(lists[ev.MODULE], base_ns)
        frames = (self.k, self.mc, self.rt, self.op, self.an, self.mod)
        self.dropped = b.malformed + sum(f.dropped for f in frames)
        self.steps: list[tuple[int, int, int]] = []
        self.notes: list[str] = []

    # ------------------------------------------------------------------ tables

    def run(self) -> Run:
        ranges = self._ranges()
        ops_table, op_ids = self._ops()
        gpu = self._attribute()
        nk = len(self.k.events)
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
        starts = [s[0] for s in self.steps]
        out: list[int | None] = []
        for t in times.to_pylist():
            i = bisect_right(starts, t) - 1 if t is not None else -1
            out.append(self.steps[i][2] if i >= 0 and t <= self.steps[i][1] else None)
        return pa.array(out, pa.int32())

    def _ops(self) -> tuple[pa.Table, pa.Array]:
        f = self.op
        eid = ev.external_ids(f.args)
        seen: dict[int, int] = {}
        ids: list[str] = []
        for row, x in enumerate(eid.to_pylist()):
            if x is None:
                ids.append(f"op{row}")
            elif x in seen:
                seen[x] += 1
                ids.append(f"{x}#{seen[x]}")
            else:
                seen[x] = 0
                ids.append(str(x))
        op_ids = pa.array(ids, pa.string())
        shapes = [ev.dims_json(a.get("Input Dims")) for a in f.args]
        table = pa.table(
            {
                "op_id": op_ids,
                "name": f.name,
                "type": pc.replace_substring_regex(f.name, "^aten::", ""),
                "scope": self._scopes(),
                "dtype": pa.array(
                    [ev.first_float_type(a.get("Input type")) for a in f.args], pa.string()
                ),
                "input_shapes": pa.array(shapes, pa.string()),
                "process_id": f.pid,
                "thread_id": f.tid,
                "start_ns": f.start_ns,
                "iteration": self._iteration(f.start_ns),
                "calls": pa.array([1] * len(ids), pa.int64()),
                "cpu_ns": f.dur_ns,
            }
        )
        self.op_index = pa.table(
            {
                "eid": eid,
                "o_row": pa.array(range(len(ids)), pa.int64()),
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
        if not m.events or not f.events:
            return pa.nulls(len(f.events), pa.string())
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
        gpu_args = self.k.args + self.mc.args
        r = self.rt
        runtime = pa.table(
            {
                "corr": ev.int_column([a.get("correlation") for a in r.args]),
                "r_ts": r.start_ns,
                "r_pid": r.pid,
                "r_tid": r.tid,
                "r_eid": ev.external_ids(r.args),
            }
        )
        corr = ev.int_column([a.get("correlation") for a in gpu_args])
        table, hits = links.attribute(corr, ev.external_ids(gpu_args), runtime, self.op_index)
        if hits:
            self.notes.append(
                f"{hits} GPU launches attributed to ops by time nesting (External ids did not match)"
            )
        return table

    def _gpu_columns(self, f: ev.Frame, at: pa.Table, op_ids: pa.Array) -> dict[str, Any]:
        corr = ev.int_column([a.get("correlation") for a in f.args])
        stream = ev.int_column([a.get("stream") for a in f.args])
        launch = at["launch_ns"].combine_chunks()
        return {
            "device_id": ev.int_column(
                [a.get("device") for a in f.args], lo=-(2**31), hi=2**31 - 1
            ),
            "process_id": at["pid"],
            "stream_id": pc.coalesce(stream, f.tid),
            "correlation_id": corr,
            "start_ns": f.start_ns,
            "duration_ns": f.dur_ns,
            "calls": pa.array([1] * len(f.events), pa.int64()),
            "iteration": self._iteration(launch),
            "op_id": pc.take(op_ids, at["op_row"]),
        }

    def _kernels(self, at: pa.Table, op_ids: pa.Array) -> pa.Table:
        f = self.k
        cols = self._gpu_columns(f, at, op_ids)
        cols.update(name=f.name, long_name=f.name, launch_ns=at["launch_ns"])
        for key in ("grid", "block"):
            values = [a.get(key) for a in f.args]
            for i, axis in enumerate("xyz"):
                cols[f"{key}_{axis}"] = ev.dims_column(values, i)
        return conform(cols, TableKind.KERNELS)

    def _memory(self, at: pa.Table, op_ids: pa.Array) -> pa.Table:
        f = self.mc
        cols = self._gpu_columns(f, at, op_ids)
        kinds = [
            MemoryKind.MEMSET if e.get("cat") in ev.MEMSET_CATEGORIES else ev.memcpy_kind(n)
            for e, n in zip(f.events, f.name.to_pylist(), strict=True)
        ]
        cols.update(kind=pa.array([k.value for k in kinds], pa.string()), name=f.name)
        cols["bytes"] = ev.int_column([a.get("bytes") for a in f.args], lo=0)
        return conform(cols, TableKind.MEMORY)

    def _op_gpu_time(self, ops: pa.Table, kernels: pa.Table, at: pa.Table) -> pa.Table:
        per_op = (
            pa.table({"op_row": at["op_row"], "d": kernels["duration_ns"]})
            .filter(pc.is_valid(at["op_row"]))
            .group_by("op_row")
            .aggregate([("d", "sum"), ("d", "count")])
        )
        m = links.lookup(pa.array(range(ops.num_rows), pa.int64()), per_op, "op_row")
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
                method="ProfilerStep",
            )
        else:
            its = IterationInfo(total=1, method="whole run")
        if self.legacy:
            self.notes.append("2021 legacy event categories (Operator/Runtime/Kernel)")
        if self.dropped:
            self.notes.append(
                f"{self.dropped} malformed events skipped (no name, time or duration)"
            )
        schema_v = self.doc.get("schemaVersion")
        return RunMeta(
            format=SourceFormat.KINETO_JSON,
            path=str(self.path),
            profiler=PROFILER,
            profiler_version=f"trace schema {schema_v}" if type(schema_v) is int else None,
            framework=self._torch_version(),
            cuda_version=self._cuda_version(),
            gpus=self._gpus(used),
            iterations=its,
            kernel_granularity=Granularity.LAUNCH,
            op_granularity=Granularity.LAUNCH,
            files=(self.path.name,),
            notes=tuple(self.notes),
        )

    def _torch_version(self) -> str | None:
        """Only the one named field some capture tools write (``metadata.system.torch_env_info``)."""
        node: Any = self.doc
        for key in ("metadata", "system", "torch_env_info", "torch_version"):
            node = node.get(key) if isinstance(node, dict) else None
        return f"PyTorch {node}" if isinstance(node, str) and _VERSION.fullmatch(node) else None

    def _cuda_version(self) -> str | None:
        v = self.doc.get("cuda_runtime_version")  # 12040 -> "12.4", CUDA's own encoding
        return f"{v // 1000}.{v % 1000 // 10}" if type(v) is int and 1000 <= v < 100000 else None

    def _gpus(self, used: set[int]) -> tuple[Gpu, ...]:
        """deviceProperties, limited to the devices the trace's GPU events ran on (a node lists all)."""
        props = self.doc.get("deviceProperties")
        gpus: dict[int, Gpu] = {}
        for p in props if isinstance(props, list) else ():
            if (
                not isinstance(p, dict)
                or type(p.get("id")) is not int
                or (used and p["id"] not in used)
            ):
                continue
            name, major, minor, sms = (
                p.get(k) for k in ("name", "computeMajor", "computeMinor", "numSms")
            )
            gpus.setdefault(
                p["id"],
                Gpu(
                    device_id=p["id"],
                    name=ev.clean_str(name[:200]) if isinstance(name, str) else None,
                    compute_capability=f"{major}.{minor}"
                    if type(major) is int and type(minor) is int
                    else None,
                    sm_count=sms if type(sms) is int else None,
                ),
            )
        for d in used - gpus.keys():
            gpus[d] = Gpu(device_id=d)
        return tuple(gpus[d] for d in sorted(gpus))
