"""GitHub-flavoured Markdown for a PR comment: the verdict, findings and top rows, nothing more.

Every trace string goes through ``render.escape.markdown``, so a kernel called ``|</details>`` or
an op named ``x\r## All OK\r@maintainer https://evil.example`` cannot break the table or the
comment, start a heading, ping anyone or become a link.
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.render.escape import markdown as _esc
from tcreport.report import Report
from tcreport.rules.base import Finding

TOP = 10


def _host_tables(view: Report) -> list[str]:
    a = view.analysis
    lines = []
    if a.host.total is not None:
        lines += [f"Host time in ops: {fmt.ns(a.host.total.ns)} ({a.host.total.method}).", ""]
    top = a.host.top
    lines += ["| op | type | host time | share |", "|---|---|---:|---:|"]
    lines += [
        f"| {_esc(r.name)} | {_esc(r.type or '')} | {fmt.ns(r.cpu_ns)} | {fmt.pct(r.share)} |"
        for r in a.host.ops[:top]
    ]
    if a.host.more_ops:
        lines += ["", f"and {fmt.count(a.host.more_ops)} more {fmt.noun(a.host.more_ops, 'op')}"]
    lines += ["", "| op type | ops | host time | share |", "|---|---:|---:|---:|"]
    lines += [
        f"| {_esc(r.name)} | {r.ops} | {fmt.ns(r.cpu_ns)} | {fmt.pct(r.share)} |"
        for r in a.host.op_types[:top]
    ]
    if a.host.more_op_types:
        lines += [
            "",
            f"and {fmt.count(a.host.more_op_types)} more op "
            f"{fmt.noun(a.host.more_op_types, 'type')}",
        ]
    if a.host.gpu_run_adds:
        lines += ["", a.host.gpu_run_adds]
    return [*lines, ""]


def _verdict_table(view: Report) -> list[str]:
    """The matrix-unit figures; a CPU-only run has none, and says so in words, not as 0 ns."""
    a = view.analysis
    w = a.verdict.words
    if a.host.cpu_only:
        return [f"{w.unit_one} use and GPU time: {a.host.unknown}.", ""]
    n = a.verdict.missed_op_count  # the ops the missed time is spread over, partly-missed too
    share = f"; {a.verdict.miss_share_words}" if a.verdict.miss_share_words else ""
    return [
        f"| {w.unit_one} share | eligible not on {w.short} | GPU kernel time | classified |",
        "|---:|---:|---:|---:|",
        f"| {fmt.pct(a.verdict.tc_share)} | {a.verdict.miss_card.value} "
        f"({fmt.count(n)} {fmt.noun(n, 'op')}{share}) | {fmt.ns(a.time.gpu_kernel_ns)} "
        f"| {fmt.pct(a.verdict.classified_share)} |",
        "",
    ]


def finding(f: Finding) -> list[str]:
    """A finding's list item as the HTML shows it, less the links: title and saving, the detail
    that names what to change (a fix "as listed" lists nothing without it; the rules bound its
    lists), the fix. Every trace string escaped."""
    saving = f" — {f.saving_words}" if f.saving_words else ""
    lines = [f"- **{f.severity.value}** `{f.id}` {_esc(f.title)}{saving}"]
    if f.detail and f.detail != f.title:
        lines.append(f"  - {_esc(f.detail)}")
    if f.fix:
        lines.append(f"  - fix: {_esc(f.fix)}")
    return lines


def _fix_first(view: Report) -> str:
    ff = view.fix_first
    if ff is None:
        return f"**Fix first:** {_esc(view.no_fix_first or '')}"
    saving = f" — {ff.saving_words}" if ff.saving_words else ""
    return f"**Fix first:** `{ff.id}` {_esc(ff.title)}{saving}"


def render(view: Report, heading: str = "###") -> str:
    """The report as Markdown for a PR comment; ``heading``: the level of its title (a job's
    page nests the rank shown in full one level below its own)."""
    a = view.analysis
    w = a.verdict.words
    m = a.meta
    gpus = a.gpu_names()
    lines = [
        f"{heading} tcreport: {_esc(view.source_path)}",
        "",
        f"{_esc(m.profiler or m.format.value)} · {_esc(gpus)} · {a.iterations.phrase}",
        "",
        *(
            [f"**CPU-only run: no GPU kernels**, so no {w.unit_one} verdict; host time below.", ""]
            if a.host.cpu_only
            else []
        ),
        _fix_first(view),
        "",
        *_verdict_table(view),
        *([a.verdict.op_level_sentence, ""] if a.verdict.op_level_sentence is not None else []),
    ]
    if view.findings:
        lines += ["**Findings**", ""]
        for f in view.findings:
            lines += finding(f)
        lines.append("")
    if a.host.cpu_only:
        lines += _host_tables(view)
    elif a.breakdown.ops:
        lines += [
            f"| op | type | GPU time | share | eligible | uses {w.short} |",
            "|---|---|---:|---:|:-:|:-:|",
        ]
        ops = a.breakdown.ops[:TOP]
        marks, footnotes = fmt.footnotes([o.gpu_time_note for o in ops])
        for o, mark in zip(ops, marks, strict=True):
            gpu = f"{fmt.ns(o.gpu_ns)} {mark}".rstrip()
            lines.append(
                f"| {_esc(o.name)} | {_esc(o.type or '')} | {gpu} | {fmt.pct(o.share)} "
                f"| {fmt.yes_no(o.tc_eligible)} | {fmt.yes_no(a.host.op_uses_tc(o))} |"
            )
        lines.append("")
        for mark, note in footnotes:
            lines += [f"{mark} {_esc(note)}", ""]
    if m.notes or a.violations:
        notes = (*(f"check failed: {v}" for v in a.violations), *m.notes)
        lines += ["**Notes**", "", *(f"- {_esc(n)}" for n in notes), ""]
    lines.append(f"<sub>tcreport {view.tool_version}</sub>")
    return "\n".join(lines) + "\n"
