"""The terminal summary: the verdict first, then the few tables worth reading in a shell.

Every trace string passes ``_cell`` (rich markup) or ``render.escape.terminal`` (plain prints): a
GPU or op name holding ESC/OSC/CSI sequences is shown as ``\x1b...``, never sent to the terminal.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tcreport import fmt
from tcreport.render.escape import terminal as plain
from tcreport.report import Report

TOP = 10


def _cell(text: str) -> str:
    """A trace string for a place rich reads as markup: controls made visible, ``[`` escaped."""
    return escape(plain(text))


def render(view: Report, console: Console | None = None) -> None:
    out = console or Console(highlight=False)
    a = view.analysis
    m = a.meta
    gpus = ", ".join(sorted({g.name or "unknown GPU" for g in m.gpus})) or "unknown GPU"
    out.print(
        f"[bold]{_cell(view.source_path)}[/bold]  ({_cell(m.format.value)}; "
        f"{_cell(m.profiler or 'unknown profiler')}; {_cell(gpus)})",
        soft_wrap=True,
    )
    _lead(out, view)
    out.print(_headline(view))

    name_w = max(24, out.width - 56)
    if a.cpu_only:
        _host_tables(out, view, name_w)
    elif a.ops:
        t = Table(title="Top ops by GPU time", title_justify="left")
        t.add_column("op", no_wrap=True, overflow="ellipsis", ratio=1)
        for col in ("type", "calls", "GPU time", "share", "elig.", "TC"):
            t.add_column(col, no_wrap=True, min_width=len(col))
        for o in a.ops[:TOP]:
            t.add_row(
                _cell(fmt.tail(o.name, name_w)),
                _cell(o.type or ""),
                fmt.count(o.calls),
                fmt.ns(o.gpu_ns),
                fmt.pct(o.share),
                fmt.yes_no(o.tc_eligible),
                fmt.yes_no(o.uses_tc),
            )
        out.print(t)
    if a.kernels:
        t = Table(title="Top kernels by GPU time", title_justify="left")
        t.add_column("kernel", no_wrap=True, overflow="ellipsis", ratio=1)
        for col in ("calls", "GPU time", "share", "TC", "rule"):
            t.add_column(col, no_wrap=True, min_width=len(col))
        for k in a.kernels[:TOP]:
            t.add_row(
                _cell(fmt.tail(k.name, name_w)),
                str(k.calls),
                fmt.ns(k.gpu_ns),
                fmt.pct(k.share),
                fmt.yes_no(k.uses_tc),
                _cell(k.tc_rule or ""),
            )
        out.print(t)
    if view.findings:
        out.print("[bold]Findings[/bold]", markup=True)
        for f in view.findings:
            saving = f" (saves ~{fmt.ns(f.estimated_saving_ns)})" if f.estimated_saving_ns else ""
            out.print(
                plain(f"  [{f.severity.value}] {f.id}: {f.title}{saving}"),
                markup=False,
                soft_wrap=True,
            )
            if f.fix:
                out.print(plain(f"      fix: {f.fix}"), markup=False, soft_wrap=True)
    if m.notes:
        out.print("[bold]Notes[/bold]", markup=True)
        for note in m.notes:
            out.print(plain(f"  - {note}"), markup=False, soft_wrap=True)


def _host_tables(out: Console, view: Report, name_w: int) -> None:
    """A CPU-only run's view: host time by op and by op type (analysis.host_time)."""
    a = view.analysis
    for title, rows, first in (
        ("Top ops by host time", a.host_ops, "op"),
        ("Op types by host time", a.host_op_types, "type"),
    ):
        if not rows:
            continue
        t = Table(title=title, title_justify="left")
        t.add_column(first, no_wrap=True, overflow="ellipsis", ratio=1)
        cols = (
            ("type", "calls", "host time", "share")
            if first == "op"
            else ("ops", "calls", "host time", "share")
        )
        for col in cols:
            t.add_column(col, no_wrap=True, min_width=len(col))
        for r in rows[:TOP]:
            lead = _cell(r.type or "") if first == "op" else str(r.ops)
            t.add_row(
                _cell(fmt.tail(r.name, name_w)),
                lead,
                fmt.count(r.calls),
                fmt.ns(r.cpu_ns),
                fmt.pct(r.share),
            )
        out.print(t)


def _lead(out: Console, view: Report) -> None:
    """The lines a reviewer reads first: a CPU-only run says so, then the one fix to make."""
    a = view.analysis
    if a.cpu_only:
        out.print(
            "CPU-only run: no GPU kernels, so no Tensor Core verdict; host time by op and op "
            "type below.",
            markup=False,
            soft_wrap=True,
        )
    ff = view.fix_first
    if ff is not None:
        saving = f" (saves ~{fmt.ns(ff.estimated_saving_ns)})" if ff.estimated_saving_ns else ""
        out.print(plain(f"Fix first: {ff.id}: {ff.title}{saving}"), markup=False, soft_wrap=True)
    else:
        out.print("Fix first: no actionable finding", markup=False)


def _headline(view: Report) -> Table:
    a = view.analysis
    head = Table(show_header=False, box=None, pad_edge=False)
    head.add_column(style="bold")
    head.add_column()
    if a.cpu_only:
        head.add_row("Host time (ops)", fmt.ns(sum(r.cpu_ns for r in a.host_ops)))
        head.add_row("Wall time (aggregated)", fmt.ns(a.time.wall_ns))
    else:
        head.add_row(f"{a.matrix_unit_one} share of kernel time", fmt.pct(a.tc.kernel_time_share))
        head.add_row("Kernel time with a known verdict", fmt.pct(a.tc.classified_kernel_time_share))
        head.add_row("GPU kernel time", fmt.ns(a.time.gpu_kernel_ns))
        head.add_row(f"{a.matrix_unit_one} kernel time", fmt.ns(a.time.tc_kernel_ns))
        head.add_row("Memory (memcpy + memset)", fmt.ns(a.time.memory_ns))
        if a.communication is not None and a.communication.kernel_ns:
            head.add_row(
                "Collective communication",
                f"{fmt.ns(a.communication.kernel_ns)} ({fmt.pct(a.communication.kernel_share)})",
            )
        head.add_row("Wall time (aggregated)", fmt.ns(a.time.wall_ns))
        head.add_row(
            "TC-eligible ops / using TC",
            f"{fmt.count(a.tc.eligible_op_count)} / {fmt.count(a.tc.using_op_count)}"
            + (
                f" ({a.tc.partly_using_op_count} in some calls only)"
                if a.tc.partly_using_op_count
                else ""
            ),
        )
        head.add_row("Eligible GPU time not on TC", fmt.ns(a.tc.eligible_not_using_gpu_ns))
    it = a.selection.info
    head.add_row(
        "Iterations",
        f"{fmt.count(it.aggregated)} of {fmt.count(it.total)} aggregated "
        f"({_cell(it.method or 'as reported')})",
    )
    return head
