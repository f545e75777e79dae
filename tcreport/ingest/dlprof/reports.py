"""DLProf's reports, whatever the container (CSV or JSON), turned into one canonical :class:`Run`.

Both readers hand over :class:`Section` s: a title plus either a header and rows, or the summary's
key/value rows. Reports are recognised by title, then by header (``--profile_name`` renames files),
and columns are found by normalised header name, because DLProf 0.x-1.8 added, dropped and respelt
columns (``Avg GPU Time`` vs ``Avg. GPU Time``; ``Op ID`` and ``Direction`` only in later versions).

How DLProf's numbers relate (checked on the v1.8 CNN run against its Viewer database):

- the iteration report has one row per *compute* kernel launch; the kernel report one row per
  (op, kernel name). Neither lists memcpy/memset: both total the summary's ``All other kernels`` +
  ``Kernels using TC`` GPU time (589,147 ns; 59 launches; 27 names). Memory time (66,690 ns) exists
  only as the summary figure, so ``memory`` stays None unless a report does list memory rows.
- the tensor core report's ``Total GPU Time`` of an op is the sum of its compute kernels (= the
  iteration / kernel report rows of that op). That is what ``ops.gpu_ns`` holds, for every op.
- the detailed report's ``Total GPU Time`` is different: the time between the op's first and last
  GPU activity (kernels *and* memcpy/memset) minus ``GPU Idle`` (positive gaps), i.e. the union of
  its busy intervals. It counts memory ops and counts overlapping kernels once (CONV2D_2: 230,559
  vs a 233,823 kernel sum). It goes to ``ops.gpu_total_ns``; the summary's ``All ops`` and
  ``Ops eligible for TC but not using`` GPU times (644,990; 572,668) are sums of it.
- the tensor core report's ``Total Kernel Count`` counts distinct kernel names, not launches.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from tcreport import schema
from tcreport._group_by import aggregate_by
from tcreport.errors import InputError, SchemaError
from tcreport.ingest.dlprof.sections import (
    SUMMARY_KV,
    SUMMARY_TABLES,
    Columns,
    ReportKind,
    Section,
    Table,
    is_title,
    kind_of,
    norm,
)
from tcreport.ingest.dlprof.summary import (
    Summary,
    gpus_of,
    iteration_info,
    reported_figures,
    source_findings,
)

__all__ = ["SUMMARY_KV", "SUMMARY_TABLES", "Section", "build_run", "is_title", "norm"]
from tcreport.model import (
    Granularity,
    Run,
    RunMeta,
    SourceFormat,
)

# --- kernels and ops ------------------------------------------------------------------------------

#: DLProf names memory operations after the CUDA call (``cudaMemcpyAsync_v3020``); Nsight-style
#: ``[CUDA memcpy HtoD]`` is accepted too. None appear in the v1.8 reports, but if a version lists
#: them they belong in ``memory``, never in ``kernels``.
_MEMORY_NAME = r"(?i)^\[?\s*cuda\s*mem(cpy|set)"
_MEM_KINDS = (
    ("memset", schema.MemoryKind.MEMSET),
    ("htod", schema.MemoryKind.HTOD),
    ("dtoh", schema.MemoryKind.DTOH),
    ("dtod", schema.MemoryKind.DTOD),
    ("htoh", schema.MemoryKind.HTOH),
    ("ptop", schema.MemoryKind.PEER),
)
_GEOMETRY = ("Grid X", "Grid Y", "Grid Z", "Block X", "Block Y", "Block Z")


def _kernel_columns(sec: Section, kind: ReportKind, op_of_name: dict[str, str]) -> Columns:
    t = Table(sec, kind)
    op_id = t.text(t.has("Op ID"))
    if t.has("Op ID") is None:  # older reports join by op name
        op_id = [None if n is None else op_of_name.get(str(n), n) for n in t.text(t.has("Op Name"))]
    cols: Columns = {
        "name": t.text(t.need("Kernel Name")),
        "op_id": op_id,
        "profiler_uses_tc": t.flags(t.has("Uses TC", "Using TC")),
        "device_id": t.ints(t.has("Device ID", "Device", "GPU ID")),
    }
    if kind is ReportKind.ITERATION:
        cols |= {
            "duration_ns": t.ints(t.need("GPU Duration (ns)", "GPU Time (ns)", "Duration (ns)")),
            "calls": [1] * t.n,
            "start_ns": t.ints(t.has("GPU Start Time (ns)", "Start Time (ns)")),
            "launch_ns": t.ints(t.has("API Call Start (ns)")),
            "iteration": t.ints(t.has("Iteration")),
            "long_name": t.text(t.has("Long Kernel Name")),
            "input_shapes": t.text(t.has("Input Shapes")),
            "output_shapes": t.text(t.has("Output Shapes")),
        }
        cols |= {g.lower().replace(" ", "_"): t.ints(t.has(g)) for g in _GEOMETRY}
    else:  # one row per (op, kernel): calls = total / average (the average has one decimal)
        total = t.ints(t.need("Total GPU Time (ns)", "GPU Time (ns)"))
        avg = t.floats(t.has("Avg GPU Time (ns)", "Average GPU Time (ns)"))
        calls: list[object] = [
            max(1, round(x / a)) if isinstance(x, int) and isinstance(a, float) and a > 0 else 1
            for x, a in zip(total, avg, strict=True)
        ]
        cols |= {"duration_ns": total, "calls": calls}
    return t.require(cols, "name", "duration_ns")


def _arrow(cols: Columns | pa.Table, kind: schema.TableKind | None, path: Path) -> pa.Table:
    """Values that parse but do not fit the schema (a device id beyond int32) are bad input too."""
    try:
        table = cols if isinstance(cols, pa.Table) else pa.table(cols)
        return table if kind is None else schema.conform(table, kind)
    except (SchemaError, pa.ArrowException, OverflowError) as exc:
        raise InputError(
            f"values do not fit the canonical {kind or 'table'} ({exc})", path
        ) from exc


def _split_memory(table: pa.Table, path: Path) -> tuple[pa.Table, pa.Table | None]:
    is_mem = pc.match_substring_regex(table["name"].cast(pa.string()), _MEMORY_NAME)
    if not pc.any(is_mem).as_py():
        return table, None
    mem = table.filter(is_mem)
    flat = [str(n).lower().replace(" ", "") for n in mem["name"].to_pylist()]
    kinds = [
        next((k for key, k in _MEM_KINDS if key in n), schema.MemoryKind.MEMCPY_OTHER) for n in flat
    ]
    mem = mem.append_column("kind", pa.array([k.value for k in kinds]))
    return table.filter(pc.invert(is_mem)), _arrow(mem, schema.TableKind.MEMORY, path)


def _scope(name: object) -> str | None:
    """``/module/net::forward/Conv2d::forward/conv2d`` ran in ``/module/net::forward/Conv2d::forward``."""
    text = str(name or "").rstrip("/")
    return text.rsplit("/", 1)[0] or None if "/" in text.lstrip("/") else None


def _ops_columns(sec: Section, kind: ReportKind) -> Columns:
    t = Table(sec, kind)
    if kind is ReportKind.OP_TYPE:  # op types stand in for ops when nothing finer exists
        types = t.text(t.need("Op Type"))
        cols: Columns = {
            "op_id": types,
            "name": types,
            "type": types,
            "calls": t.ints(t.need("# Calls")),
        }
        cols |= {
            "cpu_ns": t.ints(t.has("Total CPU Time (ns)")),
            "gpu_total_ns": t.ints(t.has("Total GPU Time (ns)")),
        }
        return t.require(cols, "op_id", "calls")
    name = t.text(t.need("Op Name", "Node Name"))
    cols = {
        "op_id": t.text(t.has("Op ID")) if t.has("Op ID") is not None else name,
        "name": name,
        "type": t.text(t.has("Op Type", "Node Op", "Node Type")),
        "scope": [_scope(n) for n in name],
        "direction": t.text(t.has("Direction")),
        "profiler_uses_tc": t.flags(t.has("Using TC", "Uses TC")),
    }
    if kind is ReportKind.TENSOR_CORE:  # lists TC-eligible ops; no call counts (build_run notes it)
        cols |= {"calls": [None] * t.n, "profiler_tc_eligible": [True] * t.n}
        return t.require(cols | {"gpu_ns": t.ints(t.need("Total GPU Time (ns)"))}, "op_id", "name")
    cols |= {
        "calls": t.ints(t.need("No. Calls", "# Calls", "Num Calls", "Calls")),
        "cpu_ns": t.ints(t.has("Total CPU Time (ns)")),
        "gpu_total_ns": t.ints(t.need("Total GPU Time (ns)")),
        "dtype": t.text(t.has("Data Type", "Data Types")),
        "profiler_tc_eligible": t.flags(t.has("TC Eligible")),
    }
    return t.require(cols, "op_id", "name", "calls")


def _per_op(kernels: pa.Table, ops: Columns, tc_gpu: dict[str, object]) -> list[str]:
    """Fill ``gpu_ns`` / ``kernel_calls`` / shapes / device of each op from its kernel rows (0 for
    an op with none: the reports list every compute kernel); note where the tensor core report
    disagrees."""
    shapes = "input_shapes" in kernels.column_names
    k = pa.table(
        {
            c: kernels[c].cast(pa.string())
            for c in ("op_id", "input_shapes", "output_shapes")
            if c in kernels.column_names
        }
    )
    k = k.append_column("ns", kernels["duration_ns"].cast(pa.int64())).append_column(
        "n", kernels["calls"].cast(pa.int64())
    )
    k = k.append_column("dev", kernels["device_id"].cast(pa.int64()))
    aggs = [("ns", "sum"), ("n", "sum"), ("dev", "min")]
    aggs += [("input_shapes", "first"), ("output_shapes", "first")] if shapes else []
    per = {r["op_id"]: r for r in aggregate_by(k, "op_id", aggs, use_threads=False).to_pylist()}
    ids = [str(x) for x in ops["op_id"]]
    for col, key, none in (
        ("gpu_ns", "ns_sum", 0),
        ("kernel_calls", "n_sum", 0),
        ("device_id", "dev_min", None),
    ):
        ops[col] = [per[i][key] if i in per else none for i in ids]
    if shapes:
        ops["input_shapes"] = [per[i]["input_shapes_first"] if i in per else None for i in ids]
        ops["output_shapes"] = [per[i]["output_shapes_first"] if i in per else None for i in ids]
    return [
        f"op {i}: tensor core report GPU time {tc_gpu[i]} ns, its kernels {g} ns"
        for i, g in zip(ids, ops["gpu_ns"], strict=True)
        if tc_gpu.get(i) is not None and i in per and tc_gpu[i] != g
    ]


# --- the run --------------------------------------------------------------------------------------


def _sort(files: dict[Path, list[Section]], path: Path) -> dict[ReportKind, list[Section]]:
    reports: dict[ReportKind, list[Section]] = {}
    owner: dict[ReportKind, Path] = {}
    for file, sections in files.items():
        for sec in sections:
            kind = kind_of(sec)
            if kind is None:
                raise InputError(
                    f"{sec.header_where}: {sec.title[:60]!r} is not a DLProf report title", file
                )
            if owner.setdefault(kind, file) != file:
                names = f"{owner[kind].name}, {file.name}"
                raise InputError(
                    f"two DLProf {kind} reports ({names}); point tcreport at one profile's files",
                    path,
                )
            reports.setdefault(kind, []).append(sec)
    return reports


def build_run(files: dict[Path, list[Section]], fmt: SourceFormat, path: Path) -> Run:
    """Map whichever reports are present onto the canonical run; absent reports leave None."""
    reports = _sort(files, path)
    s = Summary(reports.get(ReportKind.SUMMARY, []))
    notes = [f"DLProf build {b}"] if (b := s.text("DLProf Build")) else []

    op_src = next(
        (
            k
            for k in (ReportKind.DETAILED, ReportKind.TENSOR_CORE, ReportKind.OP_TYPE)
            if k in reports
        ),
        None,
    )
    op_cols = _ops_columns(reports[op_src][0], op_src) if op_src else None
    real_ops = op_cols if op_src in (ReportKind.DETAILED, ReportKind.TENSOR_CORE) else None
    op_of_name = (
        {str(n): str(i) for n, i in zip(real_ops["name"], real_ops["op_id"], strict=True)}
        if real_ops
        else {}
    )
    tc_gpu: dict[str, object] = {}
    if ReportKind.TENSOR_CORE in reports:  # keyed like the ops, even when only one has Op ID
        tc = _ops_columns(reports[ReportKind.TENSOR_CORE][0], ReportKind.TENSOR_CORE)
        for i, n, g in zip(tc["op_id"], tc["name"], tc["gpu_ns"], strict=True):
            tc_gpu[str(i) if i != n else op_of_name.get(str(n), str(n))] = g
    if op_src is ReportKind.TENSOR_CORE:
        notes.append("ops from the tensor core report only: call counts unknown")
    elif op_src is ReportKind.OP_TYPE:
        notes.append("ops are op types (only the op type summary report was read)")

    kernels = memory = None
    k_src = next((k for k in (ReportKind.ITERATION, ReportKind.KERNEL) if k in reports), None)
    if k_src:
        raw = _arrow(_kernel_columns(reports[k_src][0], k_src, op_of_name), None, path)
        raw, memory = _split_memory(raw, path)
        notes += _per_op(raw, real_ops, tc_gpu) if real_ops else []
        kernels = _arrow(raw, schema.TableKind.KERNELS, path)
    elif op_src is ReportKind.DETAILED and op_cols and tc_gpu:
        op_cols["gpu_ns"] = [tc_gpu.get(str(i)) for i in op_cols["op_id"]]
    elif op_src is ReportKind.DETAILED and op_cols:  # DLProf 0.x: figures.op_rows shows gpu_total
        notes.append("op GPU time is the detailed report's Total GPU Time (busy time, copies in)")
    ops = _arrow(op_cols, schema.TableKind.OPS, path) if op_cols else None

    device_ids = [] if kernels is None else pc.unique(kernels["device_id"].drop_null()).to_pylist()
    version = s.text("DLProf Version")
    granularity = {
        ReportKind.ITERATION: Granularity.LAUNCH,
        ReportKind.KERNEL: Granularity.AGGREGATE,
    }
    meta = RunMeta(
        format=fmt,
        path=str(path),
        profiler=f"DLProf {version}" if version else "DLProf",
        profiler_version=version,
        framework=s.text("Framework"),
        cuda_version=s.text("CUDA Version"),
        cudnn_version=s.text("cuDNN Version"),
        driver_version=s.text("GPU Driver Version", "Driver Version"),
        gpus=gpus_of(s, device_ids),
        iterations=iteration_info(s),
        reported=reported_figures(s),
        source_findings=source_findings(reports.get(ReportKind.EXPERT, [])),
        kernel_granularity=granularity.get(k_src, Granularity.NONE) if k_src else Granularity.NONE,
        op_granularity=Granularity.AGGREGATE if ops is not None else Granularity.NONE,
        files=tuple(sorted(p.name for p in files)),
        notes=tuple(notes),
    )
    return Run(meta=meta, kernels=kernels, memory=memory, ops=ops)
