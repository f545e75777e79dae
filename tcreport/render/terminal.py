"""The terminal summary: the verdict first, then the few tables worth reading in a shell.

Every trace string passes ``_cell`` (rich markup) or ``render.escape.terminal`` (plain prints): a
GPU or op name holding ESC/OSC/CSI sequences is shown as ``\x1b...``, never sent to the terminal.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.render.escape import terminal as plain
from tcreport.report import Report

TOP = 10
#: Narrowest a name column gets before the table is allowed to overflow the terminal instead.
MIN_NAME = 16


def middle(text: str, width: int) -> str:
    """Shorten ``text`` to ``width`` in the middle, keeping both ends: kernel and op names differ
    at the start (family, library) and at the end (tile shape, layout, the op's own name)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def _names_type(name: str, typ: str | None) -> bool:
    """True when the op's name already says its type (or it has none)."""
    return not typ or name == typ or name.endswith((f"/{typ}", f"::{typ}"))


def _ranked(
    title: str,
    name_head: str,
    names: list[str],
    heads: list[str],
    cells: list[list[str]],
    out: Console,
) -> Table:
    """A ranked table whose small columns are always whole; the name column gets what is left of
    the terminal and names are shortened in the middle to fit it. Widths are measured on the
    strings as shown (controls made visible); markup is escaped last."""
    names = [plain(n) for n in names]
    cells = [[plain(c) for c in row] for row in cells]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(heads)]
    borders = 3 * (len(heads) + 1) + 1  # heavy box: a bar and a space each side of every cell
    name_w = max(MIN_NAME, out.width - borders - sum(widths))
    t = Table(title=title, title_justify="left")
    t.add_column(name_head, no_wrap=True, overflow="ellipsis", max_width=name_w)
    for h, w in zip(heads, widths, strict=True):
        t.add_column(h, no_wrap=True, min_width=w)
    for name, row in zip(names, cells, strict=True):
        t.add_row(escape(middle(name, name_w)), *(escape(c) for c in row))
    return t


def _cell(text: str) -> str:
    """A trace string for a place rich reads as markup: controls made visible, ``[`` escaped."""
    return escape(plain(text))


def render(view: Report, console: Console | None = None) -> None:
    out = console or Console(highlight=False)
    a = view.analysis
    m = a.meta
    gpus = fmt.gpus(m.gpus)
    out.print(
        f"[bold]{_cell(view.source_path)}[/bold]  ({_cell(m.format.value)}; "
        f"{_cell(m.profiler or 'unknown profiler')}; {_cell(gpus)})",
        soft_wrap=True,
    )
    _lead(out, view)
    out.print(_headline(view))

    if a.host.cpu_only:
        _host_tables(out, view, max(24, out.width - 56))
    _ranked_tables(a, out)
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
    if m.notes or a.violations:
        out.print("[bold]Notes[/bold]", markup=True)
        for note in (*(f"check failed: {v}" for v in a.violations), *m.notes):
            out.print(plain(f"  - {note}"), markup=False, soft_wrap=True)


def _ranked_tables(a: Analysis, out: Console) -> None:
    """The top ops (a CPU-only run shows host time instead) and kernels by GPU time."""
    if a.breakdown.ops and not a.host.cpu_only:
        ops = a.breakdown.ops[:TOP]
        # Frameworks often name an op by its type (aten::mul is of type aten::mul, a DLProf op
        # path ends in /conv2d of type conv2d): a column repeating the name takes its room.
        types = ["" if _names_type(o.name, o.type) else (o.type or "") for o in ops]
        show_type = any(types)
        cells = [
            [
                fmt.count(o.calls),
                fmt.ns(o.gpu_ns),
                fmt.pct(o.share),
                fmt.yes_no(o.tc_eligible),
                fmt.yes_no(o.uses_tc),
            ]
            for o in ops
        ]
        heads = ["calls", "GPU time", "share", "elig.", a.verdict.words.short]
        if show_type:
            cells = [[t, *c] for t, c in zip(types, cells, strict=True)]
            heads = ["type", *heads]
        out.print(_ranked("Top ops by GPU time", "op", [o.name for o in ops], heads, cells, out))
    if a.breakdown.kernels:
        kernels = a.breakdown.kernels[:TOP]
        cells = [
            [
                str(k.calls),
                fmt.ns(k.gpu_ns),
                fmt.pct(k.share),
                fmt.yes_no(k.uses_tc),
                k.tc_rule or "",
            ]
            for k in kernels
        ]
        heads = ["calls", "GPU time", "share", a.verdict.words.short, "rule"]
        names = [k.name for k in kernels]
        out.print(_ranked("Top kernels by GPU time", "kernel", names, heads, cells, out))


#: A query column wider than this wraps inside its cell rather than pushing the table off-screen.
WRAP_AT = 40


def rows_table(columns: list[str], rows: list[list[str]], console: Console | None = None) -> None:
    """A query result a person reads: a table when its columns fit the terminal (long cells
    wrapped), else one record at a time, ``name  value`` per line, like psql's ``\\x``."""
    out = console or Console(highlight=False)
    columns = [plain(c) for c in columns]  # data, never markup; controls shown, not sent
    rows = [[plain(v) for v in row] for row in rows]
    natural = [max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]
    needed = sum(min(w, WRAP_AT) for w in natural) + 3 * len(columns) + 1
    if needed <= out.width:
        t = Table()
        for name, w in zip(columns, natural, strict=True):
            t.add_column(Text(name), overflow="fold", min_width=min(w, WRAP_AT, len(name)))
        for row in rows:
            t.add_row(*(Text(v) for v in row))
        out.print(t)
        return
    key_w = max(len(c) for c in columns)
    for n, row in enumerate(rows, start=1):
        out.rule(Text(f"row {n}"), align="left", characters="─")
        t = Table(show_header=False, box=None, pad_edge=False)
        t.add_column(style="bold", no_wrap=True, min_width=key_w)
        t.add_column(overflow="fold")
        for name, value in zip(columns, row, strict=True):
            t.add_row(Text(name), Text(value))
        out.print(t)


def _host_tables(out: Console, view: Report, name_w: int) -> None:
    """A CPU-only run's view: host time by op and by op type (analysis.host.total)."""
    a = view.analysis
    for title, rows, first in (
        ("Top ops by host time", a.host.ops, "op"),
        ("Op types by host time", a.host.op_types, "type"),
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
    if a.host.cpu_only:
        out.print(
            f"CPU-only run: no GPU kernels, so no {a.verdict.words.unit_one} verdict; host time "
            "by op and op type below.",
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
    v, w, c = a.verdict, a.verdict.words, a.communication.collectives
    head = Table(show_header=False, box=None, pad_edge=False)
    head.add_column(style="bold")
    head.add_column()
    if a.host.cpu_only:
        head.add_row("Host time (ops)", fmt.ns(a.host.total.ns if a.host.total else None))
        head.add_row("Wall time (aggregated)", fmt.ns(a.time.wall_ns))
    else:
        head.add_row(f"{w.unit_one} share of kernel time", fmt.pct(v.tc_share))
        if v.op_level_gpu_ns is not None:  # no kernel table: the op-level figures, labelled
            head.add_row(
                f"{w.unit_one} share of op GPU time (op-level)", fmt.pct(v.op_level_tc_share)
            )
            head.add_row("Op GPU time (op-level)", fmt.ns(v.op_level_gpu_ns))
        head.add_row("Kernel time with a known verdict", fmt.pct(v.classified_share))
        head.add_row("GPU kernel time", fmt.ns(a.time.gpu_kernel_ns))
        head.add_row(f"{w.unit_one} kernel time", fmt.ns(a.time.tc_kernel_ns))
        head.add_row("Memory (memcpy + memset)", fmt.ns(a.time.memory_ns))
        if c is not None and c.kernel_ns:
            head.add_row(
                "Collective communication", f"{fmt.ns(c.kernel_ns)} ({fmt.pct(c.kernel_share)})"
            )
        head.add_row("Wall time (aggregated)", fmt.ns(a.time.wall_ns))
        partly = (
            f" ({v.partly_using_op_count} in some calls only)" if v.partly_using_op_count else ""
        )
        head.add_row(
            f"{w.eligible} ops / using {w.short}",
            f"{fmt.count(v.eligible_op_count)} / {fmt.count(v.using_op_count)}{partly}",
        )
        head.add_row(f"Eligible GPU time not on {w.short}", fmt.ns(v.eligible_not_using_gpu_ns))
    it = a.iterations.info
    head.add_row(
        "Iterations",
        f"{fmt.count(it.aggregated)} of {fmt.count(it.total)} aggregated "
        f"({_cell(a.iterations.how or 'as reported')})",
    )
    return head
