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

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from tcreport import schema
from tcreport.errors import InputError, SchemaError
from tcreport.model import (
    Gpu,
    Granularity,
    IterationInfo,
    ReportedFigures,
    Run,
    RunMeta,
    SourceFinding,
    SourceFormat,
)

Columns = dict[str, list[object]]  # column name -> values, on their way into Arrow


class ReportKind(StrEnum):
    SUMMARY = "summary"
    DETAILED = "detailed"
    ITERATION = "iteration"
    KERNEL = "kernel"
    TENSOR_CORE = "tensor core"
    OP_TYPE = "op type"
    GROUP = "group op"
    EXPERT = "expert systems"


@dataclass(frozen=True)
class Section:
    """A titled block of one file. ``header`` is None for the summary's key/value blocks, whose
    rows are ``(key, value, ...)`` (a multi-GPU ``GPU Name(s)`` row has several values)."""

    title: str
    header: tuple[str, ...] | None
    rows: list[tuple[str, ...]]
    where: list[str]  # "line 12" / "record 3" for each row, for error messages
    header_where: str
    source: Path


_TITLES = {
    "kernel report": ReportKind.KERNEL,
    "tensor core report": ReportKind.TENSOR_CORE,
    "iteration report": ReportKind.ITERATION,
    "op type summary report": ReportKind.OP_TYPE,
    "group op report": ReportKind.GROUP,
    "group node report": ReportKind.GROUP,
    "expert systems feedback": ReportKind.EXPERT,
    "all iterations": ReportKind.DETAILED,
}
SUMMARY_KV = frozenset({"system config", "summary report", "iterations"})
SUMMARY_TABLES = frozenset({"all ops", "all kernels"})
_RANGE_TITLE = re.compile(r"^(aggregated )?iterations? \d+( \d+)?$")  # a detailed report's range
_BY_HEADER = (
    (ReportKind.TENSOR_CORE, {"tc gpu time ns"}),
    (ReportKind.ITERATION, {"kernel name", "gpu start time ns"}),
    (ReportKind.KERNEL, {"kernel name", "total gpu time ns"}),
    (ReportKind.DETAILED, {"tc eligible", "total gpu time ns"}),
    (ReportKind.OP_TYPE, {"op type", "# ops"}),
    (ReportKind.GROUP, {"num tc eligible ops"}),
    (ReportKind.EXPERT, {"problem", "recommendation"}),
)


def norm(name: str) -> str:
    """Header / key spelling that survives DLProf's respellings: case, dots, brackets, spaces."""
    return re.sub(r"[^a-z0-9#%]+", " ", name.lower()).strip()


def is_title(text: str) -> bool:
    t = norm(text)
    return t in _TITLES or t in SUMMARY_KV or t in SUMMARY_TABLES or bool(_RANGE_TITLE.match(t))


def _kind(sec: Section) -> ReportKind | None:
    t = norm(sec.title)
    if t in SUMMARY_KV or t in SUMMARY_TABLES:
        return ReportKind.SUMMARY
    header = {norm(x) for x in sec.header or ()}
    return _TITLES.get(t) or next((k for k, need in _BY_HEADER if need <= header), None)


# --- values ---------------------------------------------------------------------------------------


def to_float(text: str | None, what: str, where: str, path: Path) -> float | None:
    t = (text or "").strip().rstrip("%").strip()
    if not t:
        return None
    try:
        f = float(t)
    except ValueError:
        f = math.nan
    if not math.isfinite(f):
        raise InputError(f"{where}: {what!r} is {t[:40]!r}, not a number", path)
    return f


def to_int(text: str | None, what: str, where: str, path: Path) -> int | None:
    t = (text or "").strip()
    if 0 < len(t) < 19 and (t.isdigit() or (t[:1] == "-" and t[1:].isdigit())):
        return int(t)
    f = to_float(t, what, where, path)
    if f is not None and abs(f) >= 2.0**63:
        raise InputError(f"{where}: {what!r} is {t[:40]!r}, out of range", path)
    return None if f is None else round(f)


def to_bool(text: str | None, what: str, where: str, path: Path) -> bool | None:
    t = (text or "").strip().lower()
    if t in ("yes", "true", "1", "no", "false", "0", ""):
        return None if not t else t in ("yes", "true", "1")
    raise InputError(f"{where}: {what!r} is {t[:40]!r}, expected yes or no", path)


def _stripped(text: str, *_: object) -> str | None:
    return text.strip() or None


class _Table:
    """A table section's columns, looked up by any of several spellings, parsed into lists."""

    def __init__(self, sec: Section, kind: ReportKind) -> None:
        self.sec, self.kind, self.n = sec, kind, len(sec.rows)
        self._idx: dict[str, int] = {}
        for i, h in enumerate(sec.header or ()):
            self._idx.setdefault(norm(h), i)

    def has(self, *names: str) -> int | None:
        return next((self._idx[norm(n)] for n in names if norm(n) in self._idx), None)

    def need(self, *names: str) -> int | None:
        i = self.has(*names)
        if i is None and (self.sec.header or self.sec.rows):  # a JSON report with no records has
            raise InputError(  # no header either: that is an empty table, not a missing column
                f"{self.sec.header_where}: no {names[0]!r} column; is this a DLProf {self.kind} report?",
                self.sec.source,
            )
        return i

    def _map(self, i: int | None, conv: Callable[[str, str, str, Path], object]) -> list[object]:
        if i is None:
            return [None] * self.n
        what, src = (self.sec.header or ())[i], self.sec.source
        return [
            conv(r[i], what, w, src) for r, w in zip(self.sec.rows, self.sec.where, strict=True)
        ]

    def text(self, i: int | None) -> list[object]:
        return self._map(i, _stripped)

    def ints(self, i: int | None) -> list[object]:
        return self._map(i, to_int)

    def floats(self, i: int | None) -> list[object]:
        return self._map(i, to_float)

    def flags(self, i: int | None) -> list[object]:
        return self._map(i, to_bool)

    def require(self, cols: Columns, *fields: str) -> Columns:
        for f in fields:
            if None in cols[f]:
                where = self.sec.where[cols[f].index(None)]
                raise InputError(f"{where}: empty {f} in a {self.kind} report row", self.sec.source)
        return cols


# --- summary and expert systems -> metadata -------------------------------------------------------


class _Summary:
    """Key/value lookups over ``dlprof_summary``'s sections; every figure optional."""

    def __init__(self, sections: list[Section]) -> None:
        self.kv: dict[str, tuple[tuple[str, ...], str, Path]] = {}
        self.tables: dict[str, tuple[dict[str, dict[str, str]], str, Path]] = {}
        for sec in sections:
            if sec.header is None:
                for row, where in zip(sec.rows, sec.where, strict=True):
                    vals = tuple(x.strip() for x in row[1:] if x.strip())
                    self.kv.setdefault(norm(row[0]) if row else "", (vals, where, sec.source))
            else:
                heads = [norm(h) for h in sec.header]
                rows = {norm(r[0]): dict(zip(heads, r, strict=True)) for r in sec.rows if r}
                self.tables[norm(sec.title)] = (rows, sec.header_where, sec.source)

    def values(self, *keys: str) -> tuple[str, ...]:
        return next((hit[0] for k in keys if (hit := self.kv.get(norm(k))) and hit[0]), ())

    def text(self, *keys: str) -> str | None:
        return ",".join(self.values(*keys)) or None

    def num(self, *keys: str) -> float | None:
        hit = next(((k, h) for k in keys if (h := self.kv.get(norm(k)))), None)
        return None if hit is None else to_float(",".join(hit[1][0]), hit[0], hit[1][1], hit[1][2])

    def duration(self, *keys: str) -> float | None:
        """A time: a negative one is damage, not a figure to pass on (found by fuzzing)."""
        f = self.num(*keys)
        if f is not None and f < 0:
            _, where, path = next(h for k in keys if (h := self.kv.get(norm(k))))
            raise InputError(f"{where}: {keys[0]!r} is negative ({f:g})", path)
        return f

    def whole(self, *keys: str) -> int | None:
        f = self.num(*keys)
        return None if f is None else round(f)

    def cell(self, table: str, row: str, col: str = "GPU Time (ns)") -> int | None:
        rows, where, path = self.tables.get(norm(table), ({}, "", Path()))
        text = rows.get(norm(row), {}).get(norm(col))
        return to_int(text, f"{row}/{col}", f"{where} ({table})", path)


def _add(*xs: int | None) -> int | None:
    return None if None in xs else sum(x for x in xs if x is not None)


def _reported(s: _Summary) -> ReportedFigures:
    ops, ker, not_using = "All Ops", "All Kernels", "Ops eligible for TC but not using"
    using_n, not_using_n = s.cell(ops, "Ops using TC", "# Ops"), s.cell(ops, not_using, "# Ops")
    tc_k, other_k = s.cell(ker, "Kernels using TC"), s.cell(ker, "All other kernels")
    gpu_util = s.num("GPU Utilization %", "GPU Utilization")
    tc_util = s.num("Tensor Core Kernel Utilization %", "Tensor Core Utilization %")
    return ReportedFigures(
        wall_ns=s.whole("Wall Clock Time (ns)", "Wall Clock Time"),
        all_kernel_ns=s.cell(ker, "All kernels"),
        gpu_kernel_ns=_add(tc_k, other_k),
        tc_kernel_ns=tc_k,
        memory_ns=s.cell(ker, "Memory"),
        unique_kernels=_add(
            s.cell(ker, "Kernels using TC", "# Kernels"),
            s.cell(ker, "All other kernels", "# Kernels"),
        ),
        op_count=s.cell(ops, "All ops", "# Ops"),
        op_gpu_ns=s.cell(ops, "All ops"),
        eligible_op_count=_add(using_n, not_using_n),
        using_op_count=using_n,
        using_gpu_ns=s.cell(ops, "Ops using TC"),
        eligible_not_using_op_count=not_using_n,
        eligible_not_using_gpu_ns=s.cell(ops, not_using),
        gpu_utilization=None if gpu_util is None else gpu_util / 100,
        tc_kernel_utilization=None if tc_util is None else tc_util / 100,
    )


def _iteration_info(s: _Summary) -> IterationInfo:
    if not s.kv:
        return IterationInfo()
    return IterationInfo(
        key_node=s.text("Key Node", "Key Op"),
        total=s.whole("Total Iterations"),
        start=s.whole("Start Iteration"),
        stop=s.whole("Stop Iteration"),
        aggregated=s.whole("Aggregated Iterations"),
        mean_ns=s.duration("Average Iteration Time (ns)", "Average Iteration Time"),
        std_ns=s.duration(
            "Iteration Time Standard Deviation", "Iteration Time Standard Deviation (ns)"
        ),
        method="dlprof",
    )


def _gpus(s: _Summary, device_ids: list[int]) -> tuple[Gpu, ...]:
    """Names as the summary lists them (one per device, unquoted commas in multi-GPU runs)."""
    names = list(s.values("GPU Name(s)", "GPU Names", "GPU Name"))
    if len(names) == 1 and "," in names[0]:  # a writer that did quote the list
        names = [n.strip() for n in names[0].split(",") if n.strip()]
    count = s.num("GPU Count")
    n = max(len(names), round(count) if count is not None and 0 <= count <= 4096 else 0)
    ids = sorted(set(range(n)) | set(device_ids))
    return tuple(Gpu(device_id=d, name=names[d] if 0 <= d < len(names) else None) for d in ids)


#: Problem text -> DLProf detector id as the Viewer database stores it (``exp_sys_id``). Only ids
#: seen in a real database are listed; any other problem gets ``dlprof_feedback_N``.
_DETECTORS = (
    (re.compile(r"eligible to use tensor cores", re.I), "amp_detector"),
    (re.compile(r"^the gpu is underutilized", re.I), "underutilized_gpu_detector"),
    (re.compile(r"no dali ops detected|spent in the dataloader", re.I), "dataloader_detector"),
    (re.compile(r"unable to split profile into training iter", re.I), "no_iterations_detector"),
)


def _findings(secs: list[Section]) -> tuple[SourceFinding, ...]:
    out: list[SourceFinding] = []
    for sec in secs:
        t = _Table(sec, ReportKind.EXPERT)
        for p, r in zip(t.text(t.need("Problem")), t.text(t.need("Recommendation")), strict=True):
            problem = str(p or "")
            fid = next((i for rx, i in _DETECTORS if rx.search(problem)), None)
            out.append(
                SourceFinding(fid or f"dlprof_feedback_{len(out) + 1}", problem, str(r or ""))
            )
    return tuple(out)


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
    t = _Table(sec, kind)
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
    t = _Table(sec, kind)
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
    per = {
        r["op_id"]: r for r in k.group_by("op_id", use_threads=False).aggregate(aggs).to_pylist()
    }
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
            kind = _kind(sec)
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
    s = _Summary(reports.get(ReportKind.SUMMARY, []))
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
    elif op_src is ReportKind.DETAILED and op_cols:
        op_cols["gpu_ns"] = [tc_gpu.get(str(i)) for i in op_cols["op_id"]]
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
        gpus=_gpus(s, device_ids),
        iterations=_iteration_info(s),
        reported=_reported(s),
        source_findings=_findings(reports.get(ReportKind.EXPERT, [])),
        kernel_granularity=granularity.get(k_src, Granularity.NONE) if k_src else Granularity.NONE,
        op_granularity=Granularity.AGGREGATE if ops is not None else Granularity.NONE,
        files=tuple(sorted(p.name for p in files)),
        notes=tuple(notes),
    )
    return Run(meta=meta, kernels=kernels, memory=memory, ops=ops)
