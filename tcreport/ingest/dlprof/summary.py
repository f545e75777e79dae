"""DLProf's summary report and expert systems, turned into run metadata: the profiler's own figures
(kept so tcreport can fall back on them and be checked against them), the iteration range, the GPUs
and the findings DLProf emitted.
"""

from __future__ import annotations

import re
from pathlib import Path

from tcreport.errors import InputError
from tcreport.ingest.dlprof.sections import ReportKind, Section, Table, norm, to_float, to_int
from tcreport.model import (
    Gpu,
    IterationInfo,
    IterationMethod,
    ReportedFigures,
    SourceFinding,
)

# --- summary and expert systems -> metadata -------------------------------------------------------


class Summary:
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


def reported_figures(s: Summary) -> ReportedFigures:
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


def iteration_info(s: Summary) -> IterationInfo:
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
        method=IterationMethod.DLPROF,
    )


def gpus_of(s: Summary, device_ids: list[int]) -> tuple[Gpu, ...]:
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


def source_findings(secs: list[Section]) -> tuple[SourceFinding, ...]:
    out: list[SourceFinding] = []
    for sec in secs:
        t = Table(sec, ReportKind.EXPERT)
        for p, r in zip(t.text(t.need("Problem")), t.text(t.need("Recommendation")), strict=True):
            problem = str(p or "")
            fid = next((i for rx, i in _DETECTORS if rx.search(problem)), None)
            out.append(
                SourceFinding(fid or f"dlprof_feedback_{len(out) + 1}", problem, str(r or ""))
            )
    return tuple(out)
