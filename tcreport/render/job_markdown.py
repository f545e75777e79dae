"""Markdown of a distributed job for a PR comment: the job section, then the rank shown in full.

The figures are the job section's (:mod:`tcreport.analysis.job`), the same object the JSON and HTML
show; this only formats them. Every trace string goes through ``render.escape.markdown``.
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis.job import JobSection
from tcreport.job_report import JobReport
from tcreport.kernel_names import short_name
from tcreport.render import markdown
from tcreport.render.escape import markdown as _esc

TOP = 10
#: Ranks listed in the per-rank table (the straggler and the extremes first beyond this).
MAX_RANKS = 64


def _ranks(sec: JobSection) -> list[str]:
    lines = [
        f"| rank | {sec.share_head} | step | compute | collectives | memory | idle | outside collectives | collective wait | straggler in |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r.rank} | {fmt.pct(r.tc_share)} | {fmt.ns(r.step_ns)} | {fmt.ns(r.compute_ns)} "
        f"| {fmt.ns(r.communication_ns)} | {fmt.ns(r.memory_ns)} | {fmt.ns(r.idle_ns)} "
        f"| {fmt.ns(r.own_ns)} | {fmt.ns(r.wait_ns)} | {r.straggler_in} of {r.iterations} |"
        for r in sec.ranks[:MAX_RANKS]
    ]
    if len(sec.ranks) > MAX_RANKS:
        lines.append(f"| … {len(sec.ranks) - MAX_RANKS} more ranks in the JSON | | | | | | | | | |")
    return [*lines, ""]


def _iterations(sec: JobSection) -> list[str]:
    if not sec.iterations:
        return []
    lines = [
        f"Iterations ({_esc(sec.matching)}):",
        "",
        "| iteration | job step | straggler | its excess | median wait | max wait |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in sec.iterations[:TOP]:
        slow = "—" if r.straggler is None else str(r.straggler)
        lines.append(
            f"| {_esc(r.label)} | {fmt.ns(r.step_ns)} | {slow} | {fmt.ns(r.excess_ns)} "
            f"| {fmt.ns(r.median_wait_ns)} | {fmt.ns(r.max_wait_ns)} |"
        )
    return [*lines, ""]


def _bandwidth(sec: JobSection) -> list[str]:
    b = sec.bandwidth
    lines = ["**Collective bandwidth**", "", _esc(b.note), ""]
    if not b.rows:
        return lines
    lines += [
        "| collective | dtype | message | ranks in group | calls | time | algbw | busbw |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in b.rows[:TOP]:
        size = fmt.nbytes(r.message_bytes) if r.message_bytes is not None else "n/a"
        alg = f"{r.algbw_gbs:.1f} GB/s" if r.algbw_gbs is not None else "n/a"
        bus = f"{r.busbw_gbs:.1f} GB/s" if r.busbw_gbs is not None else "n/a"
        lines.append(
            f"| {_esc(r.collective)} | {_esc(r.dtype or '')} | {size} | {fmt.count(r.group_size)} "
            f"| {r.calls} | {fmt.ns(r.time_ns)} | {alg} | {bus} |"
        )
    return [*lines, ""]


def section(jr: JobReport) -> list[str]:
    sec = jr.section
    i = sec.identity
    backend = f" · {_esc(i.backend)}" if i.backend else ""
    lines = [
        f"### tcreport job: {_esc(jr.source_path)}",
        "",
        f"{i.presence}{backend} · found by {_esc(i.detected_by)} · figures are of the ranks read, "
        "never extrapolated",
        "",
        f"**{_esc(sec.verdict.text)}**",
        "",
    ]
    if sec.straggler is not None:
        wait = f" The other ranks wait a median {fmt.ns(sec.wait_ns)} per iteration in collectives."
        lines += [f"**Straggler:** {_esc(sec.straggler.text)}{wait}", ""]
        if sec.straggler.kernels:
            lines += [
                "| straggler's kernel | beyond the others' median, per iteration |",
                "|---|---:|",
            ]
            lines += [
                f"| {_esc(short_name(k.name))} | {fmt.ns(k.excess_ns)} |"
                for k in sec.straggler.kernels
            ]
            lines.append("")
    if jr.findings:
        lines += ["**Job findings**", ""]
        for f in jr.findings:
            lines += markdown.finding(f)
        lines.append("")
    lines += _ranks(sec) + _iterations(sec) + _bandwidth(sec)
    lines += [f"- **check failed:** {_esc(str(v))}" for v in sec.violations]
    lines += [f"- {_esc(n)}" for n in sec.notes]
    return lines


def render(jr: JobReport) -> str:
    head = section(jr)
    detail = markdown.render(jr.detail, heading="#####")
    title = f"#### Rank {jr.detail_rank} ({_esc(jr.detail_why)}) in full"
    return "\n".join([*head, "", title, "", detail])
