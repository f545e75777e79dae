"""``tcreport diff`` read in a shell: the verdict, the headline figures and what changed, as plain
tables that fit the window.

The Markdown is a PR comment, escaped for GitHub (``&lt;`` for ``<``, ``\\_`` for ``_``): on a
terminal that escaping is noise, and a kernel name is unreadable behind it. This shows the same
model (the compare layer's figures, verdicts and changed rows; nothing is judged here) with each
trace string passed through :func:`tcreport.render.escape.terminal` (controls shown as ``\\x1b``,
never sent) and put in a :class:`rich.text.Text`, so no ``[`` in a name is read as markup. The
text carries no colour codes: it is the same in a pipe, a file and a window, only as wide as the
window (:data:`DEFAULT_WIDTH` where there is none).
"""

from __future__ import annotations

import io
import shutil

from rich.console import Console
from rich.table import Table
from rich.text import Text

from tcreport import fmt
from tcreport.compare.job_diff import JobDiff
from tcreport.compare.model import Diff, RowDiff, changed
from tcreport.render.diff_markdown import MAX_FINDINGS, delta, miss, row_delta, side_ns, tc, value
from tcreport.render.escape import terminal as plain

#: Changed rows listed per table; the JSON (``-f json``) and HTML list every one.
MAX_ROWS = 25
#: The width when the output is no window (a pipe, a file).
DEFAULT_WIDTH = 100
#: Narrowest a name column gets before the table may overflow the window instead.
MIN_NAME = 16


def width() -> int:
    """The window's width (``COLUMNS`` first, as every shell tool reads it), else the default."""
    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns


def _console(cols: int) -> Console:
    return Console(
        file=io.StringIO(),
        width=cols,
        highlight=False,
        color_system=None,
        force_terminal=False,
        emoji=False,
    )


def _text(out: Console) -> str:
    """What was printed onto :func:`_console`'s buffer, without the cells' trailing blanks."""
    text = out.file.getvalue()  # type: ignore[attr-defined]  # the StringIO _console made
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def _table(heads: list[str], rows: list[list[str]], right: set[int], name_w: int) -> Table:
    """Cells as :class:`Text` (never markup) with their controls shown; the first column, the
    name, shortened in the middle to ``name_w`` cells (a kernel's family and its tile shape both
    stay, and names that would shorten alike keep where they differ: :func:`fmt.middles`, as the
    summary's tables do), the figures always whole (:func:`_print_table`)."""
    t = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for i, h in enumerate(heads):
        t.add_column(h, justify="right" if i in right else "left", no_wrap=True)
    names = fmt.middles([plain(row[0]) for row in rows], name_w)
    for name, row in zip(names, rows, strict=True):
        t.add_row(Text(name), *(Text(plain(c)) for c in row[1:]))
    return t


def _print_table(out: Console, table: Table) -> None:
    """``table`` at its own width: the name column is already cut to what the window leaves
    (:func:`_name_width`), and where even the figures alone are wider than the window (80
    columns, a job's rank table) the lines run past its edge instead of rich cutting every
    figure to fit."""
    wide = _console(100_000)
    wide.print(table)
    out.file.write(wide.file.getvalue())  # type: ignore[attr-defined]  # both are StringIOs


def _name_width(heads: list[str], rows: list[list[str]], cols: int) -> int:
    """What the window leaves the name column once the figure columns have their whole width."""
    widths = [
        max([fmt.cells(h), *(fmt.cells(plain(r[i])) for r in rows)]) for i, h in enumerate(heads)
    ]
    return max(MIN_NAME, cols - sum(widths[1:]) - 2 * (len(heads) - 1))  # 2: a cell's padding


def _line(out: Console, text: str) -> None:
    out.print(Text(plain(text)), soft_wrap=True)


def _sides(d: Diff, out: Console) -> None:
    b, h = d.base, d.head
    rows = [
        ["input", b.path, h.path],
        ["format", b.format, h.format],
        ["GPU", b.gpu or "unknown", h.gpu or "unknown"],
        ["framework", b.framework or "unknown", h.framework or "unknown"],
        ["iterations aggregated", fmt.count(b.aggregated), fmt.count(h.aggregated)],
    ]
    t = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    t.add_column("")
    t.add_column("base", overflow="fold")
    t.add_column("head", overflow="fold")
    for label, base, head in rows:
        t.add_row(Text(label), Text(plain(base)), Text(plain(head)))
    out.print(t)


def _figures(d: Diff, out: Console, cols: int) -> None:
    heads = ["figure", "base", "head", "Δ", "verdict"]
    rows = [
        [
            f.label,
            value(f.base, f.unit),
            value(f.head, f.unit),
            delta(f.delta, f.unit, f.rel),
            f.verdict.value,
        ]
        for f in d.figures
    ]
    out.print(Text("Headline figures (times per aggregated iteration)", style="bold"))
    _print_table(out, _table(heads, rows, {1, 2, 3}, _name_width(heads, rows, cols)))


def _findings(d: Diff, out: Console) -> None:
    _line(out, f"Findings: {d.findings_line}")
    for label, items in (("added", d.added), ("resolved", d.resolved), ("moved", d.moved)):
        for f in items[:MAX_FINDINGS]:
            was = f" (was: {f.base_title})" if f.base_title else ""
            _line(out, f"  {label}: [{f.severity}] {f.id} {f.title}{was}")
        if len(items) > MAX_FINDINGS:
            _line(out, f"  … {len(items) - MAX_FINDINGS} more {label}")


def _rows(
    d: Diff, title: str, rows: tuple[RowDiff, ...], kind: str, out: Console, cols: int
) -> None:
    """The rows that changed beyond noise (the compare layer's verdict), then a count of the rest,
    as the Markdown lists them."""
    if not rows:
        return
    moved = changed(rows)
    host = d.op_clock == "host" and kind != "kernel"
    what = f"{title}{' (host time)' if host else ''}"
    if not moved:
        _line(out, f"{what}: none of {len(rows)} changed beyond noise")
        out.print()
        return
    shown = moved[:MAX_ROWS]
    top = f"top {len(shown)} by |Δ|" if len(shown) < len(moved) else "by |Δ|"
    rest = len(rows) - len(moved)
    _line(
        out,
        f"{what}: {len(moved)} of {len(rows)} changed beyond noise, {top}; "
        f"{rest} unchanged or within noise, not listed",
    )
    short = d.words.short
    heads = ["op type" if kind == "type" else kind, "on", "base", "head", "Δ"]
    # eligible-not-TC time is an op-level idea: a kernel row would show a dash in every line
    heads += (
        ["precision"]
        if host
        else [short]
        if kind == "kernel"
        else [short, f"eligible not on {short}"]
    )
    heads.append("verdict")
    cells = []
    for r in shown:
        row = [r.key, r.presence.value, side_ns(r, "base"), side_ns(r, "head"), row_delta(r)]
        if host:
            b, h = r.base_dtype or "–", r.head_dtype or "–"
            row.append(b if b == h else f"{b} → {h}")
        else:
            row.append(f"{tc(r, 'base', kind)} → {tc(r, 'head', kind)}")
            row += [] if kind == "kernel" else [miss(r, kind)]
        note = r.tc_note(d.words)
        cells.append([*row, r.verdict.value + (f" ({note})" if note else "")])
    _print_table(out, _table(heads, cells, {2, 3, 4}, _name_width(heads, cells, cols)))
    out.print()


def write(d: Diff, tool_version: str, out: Console, cols: int) -> None:
    """The diff onto ``out``: the verdict first, as every tcreport output opens."""
    _line(out, f"Verdict: {d.verdict}")
    out.print()
    _sides(d, out)
    out.print()
    if d.forced:
        _line(
            out,
            f"Forced comparison (--force): {'; '.join(d.not_comparable)}. "
            "The figures below may not be comparable.",
        )
        out.print()
    _figures(d, out, cols)
    out.print()
    _findings(d, out)
    out.print()
    _line(out, f"Matching: {d.matching}.")
    out.print()
    _rows(d, "Ops", d.ops, "op", out, cols)
    _rows(d, "Op types", d.op_types, "type", out, cols)
    _rows(d, "Kernels", d.kernels, "kernel", out, cols)
    if d.notes:
        out.print(Text("Notes", style="bold"))
        for n in d.notes:
            _line(out, f"  - {n}")
        out.print()
    _line(out, f"{d.noise_rule} · tcreport {tool_version}")


def render(d: Diff, tool_version: str) -> str:
    """The diff as terminal text (``tcreport diff`` on a terminal, or ``-f terminal``)."""
    cols = width()
    out = _console(cols)
    write(d, tool_version, out, cols)
    return _text(out)


def render_job(jd: JobDiff, tool_version: str) -> str:
    """Two distributed jobs: the job's figures and its ranks base → head, then the diff of the
    rank shown in full, as the Markdown and HTML show them."""
    cols = width()
    out = _console(cols)
    _line(out, f"tcreport job diff: {jd.base_path} → {jd.head_path}")
    _line(out, f"base {jd.base_presence} · head {jd.head_presence}")
    if jd.forced:
        _line(out, f"Forced comparison: {'; '.join(jd.not_comparable)}")
    out.print()
    heads = ["job figure", "base", "head", "Δ", "verdict"]
    rows = [
        [f.label, value(f.base, f.unit), value(f.head, f.unit), delta(f.delta, f.unit, f.rel)]
        + [f.verdict.value]
        for f in jd.figures
    ]
    _print_table(out, _table(heads, rows, {1, 2, 3}, _name_width(heads, rows, cols)))
    heads = ["rank", "step", "outside collectives", "collective wait", "TC share", "verdict"]
    rows = [
        [
            str(r.rank),
            f"{fmt.ns(r.base_step_ns)} → {fmt.ns(r.head_step_ns)}",
            f"{fmt.ns(r.base_own_ns)} → {fmt.ns(r.head_own_ns)}",
            f"{fmt.ns(r.base_wait_ns)} → {fmt.ns(r.head_wait_ns)}",
            f"{fmt.pct(r.base_tc)} → {fmt.pct(r.head_tc)}",
            r.verdict.value,
        ]
        for r in jd.ranks[:64]
    ]
    out.print()
    _print_table(out, _table(heads, rows, {0}, MIN_NAME))
    out.print()
    _line(out, jd.noise_rule)
    for n in jd.notes:
        _line(out, f"  - {n}")
    out.print()
    out.print(Text(f"Rank {jd.detail_rank}", style="bold"))
    write(jd.detail, tool_version, out, cols)
    return _text(out)
