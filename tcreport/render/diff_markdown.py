"""``tcreport diff --format markdown``: a GitHub-flavoured PR comment of what changed.

It must fit one comment (GitHub refuses bodies over 65,536 characters), so tables are capped and the
rendering shrinks the caps until it fits. Row tables list only what changed beyond noise (the
compare layer's verdicts) and count the rest; names are shortened in the middle (a kernel's family
and its tile shape both stay) and escaped so a hostile kernel name cannot break the table or the
comment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcreport import fmt
from tcreport.compare.model import Change, Diff, Figure, Presence, RowDiff, Unit, changed
from tcreport.render.escape import markdown as esc

if TYPE_CHECKING:
    from tcreport.analysis.sections.verdict import UnitWords

GITHUB_LIMIT = 65_536
BUDGET = 60_000  # leave room for a bot's own header around the comment
ROW_CAPS = (25, 10, 5, 0)
NAME_W = 80
MAX_FINDINGS = 30


def value(x: float | None, unit: Unit) -> str:
    if x is None:
        return "n/a"
    if unit == Unit.SHARE:
        return fmt.pct(x)
    if unit == Unit.COUNT:
        return fmt.count(int(x))
    return fmt.ns(x)


def side_ns(r: RowDiff, side: str) -> str:
    """A row's time on one side: a dash where the row is not on that side, n/a where unknown."""
    if r.presence is (Presence.NEW if side == "base" else Presence.GONE):
        return "–"
    return value(r.base_ns if side == "base" else r.head_ns, Unit.NS)


def row_delta(r: RowDiff) -> str:
    return "–" if r.presence is not Presence.BOTH else delta(r.delta_ns, Unit.NS, r.rel)


def delta(x: float | None, unit: Unit, rel: float | None = None) -> str:
    if x is None:
        return "n/a"
    if unit == Unit.SHARE:
        return f"{x * 100:+.1f} pt"
    sign = "+" if x > 0 else ""
    text = f"{sign}{int(x):,}" if unit == Unit.COUNT else f"{sign}{fmt.ns(x)}"
    if rel is not None and x != 0 and unit == Unit.NS:
        text += f" ({rel:+.1%})"
    return text


def verdict(v: Change) -> str:
    return f"**{v.value}**" if v in (Change.REGRESSED, Change.IMPROVED) else v.value


def row_verdict(r: RowDiff, words: UnitWords) -> str:
    """A row's verdict, with its matrix-unit move in the compare layer's words beside it."""
    note = r.tc_note(words)
    return verdict(r.verdict) + (f" ({note})" if note else "")


def tc(r: RowDiff, side: str, kind: str) -> str:
    """An op type shows its Tensor Core share; an op or kernel the report's own yes/no."""
    if kind == "type":
        x = r.base_tc_share if side == "base" else r.head_tc_share
        return "–" if x is None else fmt.pct(x, 0)
    if (r.base_missed_ns if side == "base" else r.head_missed_ns) is None:
        return "–"  # the row is not on this side
    return fmt.yes_no(r.base_uses_tc if side == "base" else r.head_uses_tc)


def miss(r: RowDiff, kind: str) -> str:
    """Eligible-not-TC time: an op-level idea, so kernels show a dash."""
    if kind == "kernel":
        return "–"
    b, h = r.base_missed_ns, r.head_missed_ns
    return f"{'–' if b is None else fmt.ns(b)} → {'–' if h is None else fmt.ns(h)}"


def _figure_row(f: Figure) -> str:
    return (
        f"| {f.label} | {value(f.base, f.unit)} | {value(f.head, f.unit)} "
        f"| {delta(f.delta, f.unit, f.rel)} | {verdict(f.verdict)} |"
    )


def _dtype(r: RowDiff) -> str:
    b, h = esc(r.base_dtype or "–"), esc(r.head_dtype or "–")
    return b if b == h else f"{b} → {h}"


def _rows(
    title: str, rows: tuple[RowDiff, ...], kind: str, cap: int, words: UnitWords, clock: str = "GPU"
) -> list[str]:
    """Only the rows that changed beyond noise (the compare layer's verdict), then a count of the
    rest: a self-diff lists none."""
    moved = changed(rows)
    rest = len(rows) - len(moved)
    host = clock == "host" and kind != "kernel"
    what = f"{title}{' (host time)' if host else ''}"
    quiet = f"{rest} unchanged or within noise, not listed"
    if not moved:
        return [f"{what} — none of {len(rows)} changed beyond noise", ""] if rows else []
    if cap <= 0:
        return [
            f"{what}: {len(moved)} changed beyond noise (table omitted to fit one comment)",
            "",
        ]
    shown = moved[:cap]
    top = f"top {len(shown)} by |Δ|" if len(shown) < len(moved) else "by |Δ|"
    first = "op type" if kind == "type" else kind
    short = words.short
    out = [
        f"{what} — {len(moved)} of {len(rows)} changed beyond noise, {top}; {quiet}",
        "",
        f"| {first} | on | base | head | Δ | {'precision' if host else short} | "
        f"{'–' if host else 'eligible not on ' + short} | verdict |",
        "|---|---|---:|---:|---:|:-:|---:|---|",
    ]
    out += [
        f"| {esc(fmt.middle(r.key, NAME_W))} | {r.presence.value} | {side_ns(r, 'base')} "
        f"| {side_ns(r, 'head')} | {row_delta(r)} "
        f"| {_dtype(r) if host else tc(r, 'base', kind) + ' → ' + tc(r, 'head', kind)} "
        f"| {'–' if host else miss(r, kind)} "
        f"| {row_verdict(r, words)} |"
        for r in shown
    ]
    out.append("")
    return out


def _render(d: Diff, cap: int, tool_version: str) -> str:
    b, h = d.base, d.head
    lines = [
        "### tcreport diff",
        "",
        f"**Verdict: {esc(d.verdict)}**",
        "",
        "| | base | head |",
        "|---|---|---|",
        f"| input | {esc(b.path)} | {esc(h.path)} |",
        f"| format | {b.format} | {h.format} |",
        f"| GPU | {esc(b.gpu or 'unknown')} | {esc(h.gpu or 'unknown')} |",
        f"| framework | {esc(b.framework or 'unknown')} | {esc(h.framework or 'unknown')} |",
        f"| iterations aggregated | {fmt.count(b.aggregated)} | {fmt.count(h.aggregated)} |",
        "",
    ]
    if d.forced:
        lines += [
            f"> **Forced comparison (--force):** {esc('; '.join(d.not_comparable))}. "
            "The figures below may not be comparable.",
            "",
        ]
    lines += [
        "**Headline figures** (times per aggregated iteration)",
        "",
        "| figure | base | head | Δ | verdict |",
        "|---|---:|---:|---:|---|",
        *(_figure_row(f) for f in d.figures),
        "",
        f"**Findings:** {d.findings_line}",
        "",
    ]
    for label, items in (("added", d.added), ("resolved", d.resolved), ("moved", d.moved)):
        lines += [
            f"- {label}: **{f.severity}** `{esc(f.id)}` {esc(f.title)}"
            + (f" (was: {esc(f.base_title)})" if f.base_title else "")
            for f in items[:MAX_FINDINGS]
        ]
        if len(items) > MAX_FINDINGS:
            lines.append(f"- … {len(items) - MAX_FINDINGS} more {label}")
    if d.added or d.resolved or d.moved:
        lines.append("")
    lines += [f"Matching: {esc(d.matching)}.", ""]
    lines += _rows("**Ops**", d.ops, "op", cap, d.words, d.op_clock)
    lines += _rows("**Op types**", d.op_types, "type", cap, d.words, d.op_clock)
    lines += _rows("**Kernels**", d.kernels, "kernel", cap, d.words)
    lines += [f"- {esc(n)}" for n in d.notes]
    if d.notes:
        lines.append("")
    lines.append(f"<sub>{esc(d.noise_rule)} · tcreport {esc(tool_version)}</sub>")
    return "\n".join(lines) + "\n"


def render(d: Diff, tool_version: str) -> str:
    """The comment, with row caps shrunk until it fits GitHub's limit."""
    text = ""
    for cap in ROW_CAPS:
        text = _render(d, cap, tool_version)
        if len(text) <= BUDGET:
            return text
    return text[: BUDGET - 40] + "\n\n… (truncated to fit one comment)\n"
