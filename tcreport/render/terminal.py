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
from tcreport.analysis.figures import in_some_calls_only
from tcreport.analysis.result import Analysis
from tcreport.fmt import middle
from tcreport.job_report import JobReport
from tcreport.render.escape import terminal as plain
from tcreport.report import Report
from tcreport.rules.base import Finding

TOP = 10
#: Widest the op type column of a host table gets: the op name and the figures need the room.
HOST_TYPE_W = 20
#: Ranks of a job listed before "and N more" (the JSON has every one).
MAX_JOB_RANKS = 32
#: Narrowest the name column gets while the window holds every column; below it the columns of
#: :data:`GIVE_UP` go first.
MIN_NAME = 16
#: Room the name column is given, where the terminal has it, before a text column (an op's type,
#: a kernel's rule) is narrowed for it.
WANT_NAME = 32
#: Narrowest a text column is narrowed to (shortened in the middle, as the names are).
MIN_TEXT = 12
#: The columns that hold text and may be narrowed; the figures' columns are always whole.
TEXT_COLUMNS = frozenset({"type", "rule"})
#: The columns a narrow window gives up, first to last, where the name would get less than
#: :data:`MIN_NAME`: the text that explains a row, then the figures the GPU time implies. The GPU
#: time and the eligibility and verdict columns, what the report is about, are never given up.
GIVE_UP = ("rule", "type", "calls", "share")
#: Narrowest the name column gets once the columns of :data:`GIVE_UP` are gone; a window
#: narrower still gets lines that run past its edge, never a table cropped at it.
NAME_FLOOR = 8


def _names_type(name: str, typ: str | None) -> bool:
    """True when the op's name already says its type (or it has none)."""
    return not typ or name == typ or name.endswith((f"/{typ}", f"::{typ}"))


def _borders(columns: int) -> int:
    """Cells a heavy-box table of ``columns`` columns takes besides its cells' text: a bar and a
    space each side of every cell."""
    return 3 * columns + 1


def _fit(widths: list[int], text: list[bool], room: int, name_need: int) -> int:
    """What ``room`` leaves the name column (less than :data:`MIN_NAME`, or nothing, where it is
    too narrow), narrowing the text columns of ``widths`` (in place, widest first, to
    :data:`MIN_TEXT`) until the name has what it needs up to :data:`WANT_NAME`."""
    want = min(name_need, WANT_NAME)
    while room - sum(widths) < want:
        narrowable = [i for i, t in enumerate(text) if t and widths[i] > MIN_TEXT]
        if not narrowable:
            break
        i = max(narrowable, key=lambda j: widths[j])
        widths[i] -= min(widths[i] - MIN_TEXT, want - (room - sum(widths)))
    return room - sum(widths)


def _layout(
    heads: list[str], widths: list[int], room: int, name_need: int
) -> tuple[list[int], list[int], int]:
    """The columns of ``heads`` a window of ``room`` cells shows (their indexes), their widths and
    the name column's: where the name would get less than :data:`MIN_NAME` (or than it needs),
    the columns of :data:`GIVE_UP` go one at a time, so the verdict columns stay on screen at
    50 columns instead of rich cropping them off; the name is never under :data:`NAME_FLOOR`."""
    keep = list(range(len(heads)))
    droppable = [heads.index(h) for h in GIVE_UP if h in heads]
    while True:
        shown = [widths[i] for i in keep]
        text = [heads[i] in TEXT_COLUMNS for i in keep]
        name_w = _fit(shown, text, room - _borders(len(keep) + 1), name_need)
        if name_w >= min(MIN_NAME, name_need):
            return keep, shown, min(name_w, name_need)
        if not droppable:
            return keep, shown, min(max(NAME_FLOOR, name_w), name_need)
        keep.remove(droppable.pop(0))


def _ranked(
    title: str,
    name_head: str,
    names: list[str],
    heads: list[str],
    cells: list[list[str]],
    out: Console,
) -> Table:
    """A ranked table that fits the terminal: the figures' columns are always whole, a text column
    (type, rule) is narrowed where the name needs the room, the name column gets the rest, and a
    window too narrow for every column gives up the least telling ones (:func:`_layout`, named in
    the caption). Names and text are shortened in the middle, two different names never to the
    same string (:func:`fmt.middles`). Widths are terminal cells of the strings as shown
    (controls made visible), and every column's width is set, so rich lays the table out at
    exactly the widths computed here and never cuts a name again; markup is escaped last."""
    names = [plain(n) for n in names]
    cells = [[plain(c) for c in row] for row in cells]
    widths = [max([fmt.cells(h), *(fmt.cells(r[i]) for r in cells)]) for i, h in enumerate(heads)]
    name_need = max([fmt.cells(name_head), *(fmt.cells(n) for n in names)])
    keep, widths, name_w = _layout(heads, widths, out.width, name_need)
    t = Table(title=title, title_justify="left")
    t.add_column(name_head, no_wrap=True, overflow="ellipsis", min_width=name_w, max_width=name_w)
    for i, w in zip(keep, widths, strict=True):
        t.add_column(heads[i], no_wrap=True, min_width=w, max_width=w)
    table_w = name_w + sum(widths) + _borders(len(keep) + 1)
    if table_w > out.width:  # laid out whole, the lines running past the edge (print crop=False)
        t.width = table_w
    gone = [h for h in heads if heads.index(h) not in keep]
    if gone:
        t.caption = f"not shown at {out.width} columns: {', '.join(gone)}"
        t.caption_justify = "left"
    for name, row in zip(fmt.middles(names, name_w), cells, strict=True):
        shown = (middle(row[i], w) for i, w in zip(keep, widths, strict=True))
        t.add_row(escape(name), *(escape(c) for c in shown))
    return t


def _cell(text: str) -> str:
    """A trace string for a place rich reads as markup: controls made visible, ``[`` escaped."""
    return escape(plain(text))


def render(view: Report, console: Console | None = None) -> None:
    out = console or Console(highlight=False)
    a = view.analysis
    m = a.meta
    gpus = a.gpu_names()
    out.print(
        f"[bold]{_cell(view.source_path)}[/bold]  ({_cell(m.format.value)}; "
        f"{_cell(m.profiler or 'unknown profiler')}; {_cell(gpus)})",
        soft_wrap=True,
    )
    _lead(out, view)
    out.print(_headline(view))

    if a.host.cpu_only:  # the model's findings first: they are what such a run can advise
        _findings(out, view)
        _host_tables(out, view, max(24, out.width - 56))
        if a.host.gpu_run_adds:
            out.print(a.host.gpu_run_adds, markup=False, soft_wrap=True)
    else:
        _ranked_tables(a, out)
        _findings(out, view)
    if m.notes or a.violations:
        out.print("[bold]Notes[/bold]", markup=True)
        for note in (*(f"check failed: {v}" for v in a.violations), *m.notes):
            out.print(plain(f"  - {note}"), markup=False, soft_wrap=True)


def _findings(out: Console, view: Report) -> None:
    if not view.findings:
        return
    out.print("[bold]Findings[/bold]", markup=True)
    for f in view.findings:
        _finding(out, f)


def _finding(out: Console, f: Finding) -> None:
    """A finding as the HTML shows it, less the links: title and saving, the detail that names
    what to change (the padding, the layers: a fix "as listed" lists nothing without it), the
    fix. The rules bound the detail's lists themselves ("and N more")."""
    saving = f" ({f.saving_words})" if f.saving_words else ""
    out.print(
        plain(f"  [{f.severity.value}] {f.id}: {f.title}{saving}"), markup=False, soft_wrap=True
    )
    if f.detail and f.detail != f.title:
        out.print(plain(f"      {f.detail}"), markup=False, soft_wrap=True)
    if f.fix:
        out.print(plain(f"      fix: {f.fix}"), markup=False, soft_wrap=True)


def _ranked_tables(a: Analysis, out: Console) -> None:
    """The top ops (a CPU-only run shows host time instead) and kernels by GPU time."""
    if a.breakdown.ops and not a.host.cpu_only:
        ops = a.breakdown.ops[:TOP]
        # Frameworks often name an op by its type (aten::mul is of type aten::mul, a DLProf op
        # path ends in /conv2d of type conv2d): a column repeating the name takes its room.
        types = ["" if _names_type(o.name, o.type) else (o.type or "") for o in ops]
        show_type = any(types)
        # a wrapper's 0 ns (its kernels count under the op it calls) gets the analysis' words
        marks, notes = fmt.footnotes([o.gpu_time_note for o in ops])
        cells = [
            [
                fmt.count(o.calls),
                f"{fmt.ns(o.gpu_ns)} {mark}".rstrip(),
                fmt.pct(o.share),
                fmt.yes_no(o.tc_eligible),
                fmt.yes_no(a.host.op_uses_tc(o)),
            ]
            for o, mark in zip(ops, marks, strict=True)
        ]
        heads = ["calls", "GPU time", "share", "elig.", a.verdict.words.short]
        if show_type:
            cells = [[t, *c] for t, c in zip(types, cells, strict=True)]
            heads = ["type", *heads]
        table = _ranked("Top ops by GPU time", "op", [o.name for o in ops], heads, cells, out)
        out.print(table, crop=False)
        for mark, note in notes:
            out.print(f"{mark} {note}", markup=False, soft_wrap=True)
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
        out.print(
            _ranked("Top kernels by GPU time", "kernel", names, heads, cells, out), crop=False
        )


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
    # each record titled by its first column where that names it (a job's "rank 0"), else "row N"
    firsts = [row[0] for row in rows if row]
    keyed = len(set(firsts)) == len(rows) and all(0 < len(v) <= 40 for v in firsts)
    for n, row in enumerate(rows, start=1):
        title = f"{columns[0]} {row[0]}" if keyed else f"row {n}"
        out.rule(Text(title), align="left", characters="─")
        t = Table(show_header=False, box=None, pad_edge=False)
        t.add_column(style="bold", no_wrap=True, min_width=key_w)
        t.add_column(overflow="fold")
        for name, value in zip(columns, row, strict=True):
            t.add_row(Text(name), Text(value))
        out.print(t)


def _host_tables(out: Console, view: Report, name_w: int) -> None:
    """A CPU-only run's view: host time by op and by op type (analysis.host.total)."""
    a = view.analysis
    for title, rows, first, more in (
        ("Top ops by host time", a.host.ops, "op", a.host.more_ops),
        ("Op types by host time", a.host.op_types, "type", a.host.more_op_types),
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
            # a PyTorch op type can be a long autograd node name: it is cut, the figures never
            wide = col == "type"
            t.add_column(
                col,
                no_wrap=True,
                min_width=len(col),
                max_width=HOST_TYPE_W if wide else None,
                overflow="ellipsis" if wide else "fold",
            )
        for r in rows[: a.host.top]:
            lead = _cell(r.type or "") if first == "op" else str(r.ops)
            t.add_row(
                _cell(fmt.tail(r.name, name_w)),
                lead,
                fmt.count(r.calls),
                fmt.ns(r.cpu_ns),
                fmt.pct(r.share),
            )
        if more:
            word = fmt.noun(more, "op" if first == "op" else "op type")
            t.caption = f"and {fmt.count(more)} more {word}"
            t.caption_justify = "left"
        out.print(t)


def _lead(out: Console, view: Report) -> None:
    """The lines a reviewer reads first: a CPU-only run, or one without kernel times, says so
    (the verdict section's sentence: the share card below says only n/a), then the one fix."""
    if view.analysis.host.cpu_only or view.analysis.verdict.tc_share is None:
        out.print(plain("".join(view.analysis.verdict.sentence)), markup=False, soft_wrap=True)
    ff = fix_first_text(view)
    line = f"Fix first: {ff}" if ff else f"Fix first: {view.no_fix_first}"
    out.print(plain(line), markup=False, soft_wrap=True)


def fix_first_text(view: Report) -> str | None:
    """``ID: title (saves ~…)`` of the report's fix-first finding, None without one: how every
    terminal output (``summary``, ``profile``) names it. Not escaped."""
    ff = view.fix_first
    if ff is None:
        return None
    saving = f" ({ff.saving_words})" if ff.saving_words else ""
    return f"{ff.id}: {ff.title}{saving}"


def _headline(view: Report) -> Table:
    a = view.analysis
    v, w, c = a.verdict, a.verdict.words, a.communication.collectives
    head = Table(show_header=False, box=None, pad_edge=False)
    head.add_column(style="bold")
    head.add_column()
    if a.host.cpu_only:
        head.add_row("Host time (ops)", fmt.ns(a.host.total.ns if a.host.total else None))
        head.add_row("Wall time (aggregated)", fmt.ns(a.time.wall_ns))
        head.add_row(f"{w.unit_one} use, GPU time", a.host.unknown)
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
        # the using ops that used them only in some calls: the analysis' one wording
        partly = in_some_calls_only(v.partly_using_op_count or 0, v.using_op_count or 0)
        head.add_row(
            f"{w.eligible} ops / using {w.short}",
            f"{fmt.count(v.eligible_op_count)} / {fmt.count(v.using_op_count)}{partly}",
        )
        # the analysis' one figure, as the card shows it (per iteration over several)
        share = f" ({v.miss_share_words})" if v.miss_share_words else ""
        head.add_row(f"Eligible GPU time not on {w.short}", v.miss_card.value + share)
    it = a.iterations.info
    head.add_row(
        "Iterations",
        f"{fmt.count(it.aggregated)} of {fmt.count(it.total)} aggregated "
        f"({_cell(a.iterations.how or 'as reported')})",
    )
    return head


def render_job(jr: JobReport, console: Console | None = None) -> None:
    """A distributed job: its verdict with the spread, the straggler and the job's findings, the
    per-rank table (:data:`MAX_JOB_RANKS` of them), then the rank shown in full."""
    out = console or Console(highlight=False)
    sec = jr.section
    i = sec.identity
    backend = f", {i.backend}" if i.backend else ""
    out.print(
        plain(f"{jr.source_path}  (distributed job: {i.presence}{backend}; by {i.detected_by})"),
        markup=False,
        soft_wrap=True,
    )
    out.print(plain(sec.verdict.text), markup=False, soft_wrap=True)
    if sec.straggler is not None:
        out.print(plain(f"Straggler: {sec.straggler.text}"), markup=False, soft_wrap=True)
    for f in jr.findings:
        _finding(out, f)
    rows = [
        [
            str(r.rank),
            fmt.pct(r.tc_share),
            fmt.ns(r.step_ns),
            fmt.ns(r.compute_ns),
            fmt.ns(r.communication_ns),
            fmt.ns(r.idle_ns),
            fmt.ns(r.own_ns),
            fmt.ns(r.wait_ns),
            f"{r.straggler_in}/{r.iterations}",
        ]
        for r in sec.ranks[:MAX_JOB_RANKS]
    ]
    heads = [
        "rank",
        "TC share",
        "step",
        "compute",
        "collectives",
        "idle",
        "outside collectives",
        "wait",
        "straggler",
    ]
    rows_table(heads, rows, out)
    if len(sec.ranks) > MAX_JOB_RANKS:
        out.print(
            f"  and {len(sec.ranks) - MAX_JOB_RANKS} more ranks (summary --json has them all)"
        )
    out.print(plain(f"Collective bandwidth: {sec.bandwidth.note}"), markup=False, soft_wrap=True)
    for note in (*(f"check failed: {v}" for v in sec.violations), *sec.notes):
        out.print(plain(f"  - {note}"), markup=False, soft_wrap=True)
    out.print(plain(f"Rank {jr.detail_rank} ({jr.detail_why}) in full:"), markup=False)
    render(jr.detail, out)
