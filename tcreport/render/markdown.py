"""GitHub-flavoured Markdown for a PR comment: the verdict, findings and top rows, nothing more.

Every trace string goes through ``render.escape.markdown``, so a kernel called ``|</details>`` or
an op named ``x\r## All OK\r@maintainer https://evil.example`` cannot break the table or the
comment, start a heading, ping anyone or become a link.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcreport import fmt
from tcreport.render.escape import markdown as _esc
from tcreport.report import Report

if TYPE_CHECKING:
    from tcreport.model import IterationInfo

TOP = 10


def _iterations(it: IterationInfo) -> str:
    """``iterations 2–9 of 10`` reads naturally only for a real range; say the rest plainly."""
    total, start, stop = it.total, it.start, it.stop
    if not total:
        return "whole run (no iterations found)"
    if total == 1:
        return "1 iteration"
    if start is None or stop is None or (start == 0 and stop == total - 1):
        return f"all {total} iterations"
    if start == stop:
        return f"iteration {start} of {total}"
    return f"iterations {start}–{stop} of {total}"


def _host_tables(view: Report) -> list[str]:
    a = view.analysis
    lines = []
    if a.host_time is not None:
        lines += [f"Host time in ops: {fmt.ns(a.host_time.ns)} ({a.host_time.method}).", ""]
    lines += ["| op | type | host time | share |", "|---|---|---:|---:|"]
    lines += [
        f"| {_esc(r.name)} | {_esc(r.type or '')} | {fmt.ns(r.cpu_ns)} | {fmt.pct(r.share)} |"
        for r in a.host_ops[:TOP]
    ]
    lines += ["", "| op type | ops | host time | share |", "|---|---:|---:|---:|"]
    lines += [
        f"| {_esc(r.name)} | {r.ops} | {fmt.ns(r.cpu_ns)} | {fmt.pct(r.share)} |"
        for r in a.host_op_types[:TOP]
    ]
    return [*lines, ""]


def _fix_first(view: Report) -> str:
    ff = view.fix_first
    if ff is None:
        return "**Fix first:** no actionable finding"
    saving = f" — saves ~{fmt.ns(ff.estimated_saving_ns)}" if ff.estimated_saving_ns else ""
    return f"**Fix first:** `{ff.id}` {_esc(ff.title)}{saving}"


def render(view: Report) -> str:
    a = view.analysis
    m = a.meta
    it = a.selection.info
    gpus = fmt.gpus(m.gpus)
    lines = [
        f"### tcreport: {_esc(view.source_path)}",
        "",
        f"{_esc(m.profiler or m.format.value)} · {_esc(gpus)} · {_iterations(it)}",
        "",
        *(
            ["**CPU-only run: no GPU kernels**, so no Tensor Core verdict; host time below.", ""]
            if a.cpu_only
            else []
        ),
        _fix_first(view),
        "",
        f"| {a.matrix_unit_one} share | eligible not on TC | GPU kernel time | classified |",
        "|---:|---:|---:|---:|",
        f"| {fmt.pct(a.tc.kernel_time_share)} | {fmt.ns(a.tc.eligible_not_using_gpu_ns)} "
        f"({fmt.count(a.tc.eligible_not_using_op_count)} ops) | {fmt.ns(a.time.gpu_kernel_ns)} "
        f"| {fmt.pct(a.tc.classified_kernel_time_share)} |",
        "",
        *(
            [
                f"Op-level (the input has no kernel table): {fmt.pct(a.tc.op_level_tc_share)} of "
                f"{fmt.ns(a.tc.op_level_gpu_ns)} op GPU time is in ops using {a.matrix_unit}.",
                "",
            ]
            if a.tc.op_level_gpu_ns is not None
            else []
        ),
    ]
    if view.findings:
        lines += ["**Findings**", ""]
        for f in view.findings:
            saving = f" — saves ~{fmt.ns(f.estimated_saving_ns)}" if f.estimated_saving_ns else ""
            lines.append(f"- **{f.severity.value}** `{f.id}` {_esc(f.title)}{saving}")
            if f.fix:
                lines.append(f"  - fix: {_esc(f.fix)}")
        lines.append("")
    if a.cpu_only:
        lines += _host_tables(view)
    elif a.ops:
        lines += [
            "| op | type | GPU time | share | eligible | uses TC |",
            "|---|---|---:|---:|:-:|:-:|",
        ]
        for o in a.ops[:TOP]:
            lines.append(
                f"| {_esc(o.name)} | {_esc(o.type or '')} | {fmt.ns(o.gpu_ns)} | {fmt.pct(o.share)} "
                f"| {fmt.yes_no(o.tc_eligible)} | {fmt.yes_no(o.uses_tc)} |"
            )
        lines.append("")
    if m.notes:
        lines += ["**Notes**", "", *(f"- {_esc(n)}" for n in m.notes), ""]
    lines.append(f"<sub>tcreport {view.tool_version}</sub>")
    return "\n".join(lines) + "\n"
