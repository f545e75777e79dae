"""``tcreport diff`` of two distributed jobs, in the three formats of a diff: the job's figures and
the ranks base -> head, then the diff of the rank shown in full, as for any two runs.

JSON is schema ``tcreport.job-diff/1``: ``job`` (figures, ranks, notes) and ``detail`` (the
``tcreport.diff/1`` document of the two detail ranks). Markdown and HTML show the same.
"""

from __future__ import annotations

from typing import Any

from tcreport import fmt
from tcreport.compare.job_diff import JobDiff
from tcreport.compare.model import Unit
from tcreport.render import diff_html, diff_json, diff_markdown, page
from tcreport.render.escape import markdown as esc
from tcreport.render.html import environment

SCHEMA = "tcreport.job-diff/1"


def job_dict(jd: JobDiff) -> dict[str, Any]:
    return {
        "base": {"path": jd.base_path, "presence": jd.base_presence},
        "head": {"path": jd.head_path, "presence": jd.head_presence},
        "forced": jd.forced,
        "not_comparable": list(jd.not_comparable),
        "noise_rule": jd.noise_rule,
        "figures": [diff_json._figure(f) for f in jd.figures],
        "ranks": [
            {
                "rank": r.rank,
                "base_step_ns": diff_json._num(r.base_step_ns, Unit.NS),
                "head_step_ns": diff_json._num(r.head_step_ns, Unit.NS),
                "base_own_ns": diff_json._num(r.base_own_ns, Unit.NS),
                "head_own_ns": diff_json._num(r.head_own_ns, Unit.NS),
                "base_wait_ns": diff_json._num(r.base_wait_ns, Unit.NS),
                "head_wait_ns": diff_json._num(r.head_wait_ns, Unit.NS),
                "base_tc_share": r.base_tc,
                "head_tc_share": r.head_tc,
                "verdict": r.verdict.value,
            }
            for r in jd.ranks
        ],
        "detail_rank": jd.detail_rank,
        "notes": list(jd.notes),
    }


def render_json(jd: JobDiff, tool_version: str) -> str:
    import json

    doc = {
        "schema": SCHEMA,
        "tcreport_version": tool_version,
        "job": job_dict(jd),
        "detail": diff_json.diff_dict(jd.detail, tool_version),
    }
    return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def _markdown_head(jd: JobDiff) -> list[str]:
    value, delta = diff_markdown.value, diff_markdown.delta
    lines = [
        f"### tcreport job diff: {esc(jd.base_path)} → {esc(jd.head_path)}",
        "",
        f"base {esc(jd.base_presence)} · head {esc(jd.head_presence)}",
        "",
    ]
    if jd.forced:
        lines += [f"**Forced comparison:** {esc('; '.join(jd.not_comparable))}", ""]
    lines += ["| job figure | base | head | Δ | verdict |", "|---|---:|---:|---:|---|"]
    lines += [
        f"| {f.label} | {value(f.base, f.unit)} | {value(f.head, f.unit)} "
        f"| {delta(f.delta, f.unit, f.rel)} | {diff_markdown.verdict(f.verdict)} |"
        for f in jd.figures
    ]
    lines += ["", "| rank | step | outside collectives | collective wait | TC share | verdict |"]
    lines += ["|---:|---|---|---|---|---|"]
    lines += [
        f"| {r.rank} | {fmt.ns(r.base_step_ns)} → {fmt.ns(r.head_step_ns)} "
        f"| {fmt.ns(r.base_own_ns)} → {fmt.ns(r.head_own_ns)} "
        f"| {fmt.ns(r.base_wait_ns)} → {fmt.ns(r.head_wait_ns)} "
        f"| {fmt.pct(r.base_tc)} → {fmt.pct(r.head_tc)} | {diff_markdown.verdict(r.verdict)} |"
        for r in jd.ranks[:64]
    ]
    lines += ["", jd.noise_rule, *(f"- {esc(n)}" for n in jd.notes), ""]
    return lines


def render_markdown(jd: JobDiff, tool_version: str) -> str:
    head = "\n".join(_markdown_head(jd))
    return (
        head + f"\n#### Rank {jd.detail_rank}\n\n" + diff_markdown.render(jd.detail, tool_version)
    )


def render_html(jd: JobDiff, tool_version: str) -> str:
    css = diff_html.style()
    d = jd.detail
    return (
        environment()
        .get_template("job_diff.html.j2")
        .render(
            jd=jd,
            d=d,
            csp=page.csp(css),
            style=css,
            tool_version=tool_version,
            value=diff_markdown.value,
            delta=diff_markdown.delta,
            tc=diff_markdown.tc,
            miss=diff_markdown.miss,
            tables=(
                ("Ops", d.ops, "op"),
                ("Op types", d.op_types, "type"),
                ("Kernels", d.kernels, "kernel"),
            ),
            max_rows=diff_html.MAX_ROWS,
        )
    )
