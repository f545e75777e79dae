"""The inline view of a run in Jupyter (``AnalysedRun._repr_html_``): the verdict and the findings.

A notebook output cell is a fragment inside someone else's page, where a ``<meta>`` CSP does
nothing, so the fragment obeys the report's CSP rules by what it contains: no ``<script>``, no
``<style>`` element (it would restyle the whole notebook), no link, image, font or anything else
that loads; inline ``style`` attributes only. Every string from the trace is escaped.
"""

from __future__ import annotations

from html import escape

from tcreport import fmt
from tcreport.render.escape import html as visible_html
from tcreport.report import Report

_SEVERITY_COLOURS = {
    "high": "#b3261e",
    "medium": "#a15c00",
    "low": "#3b6e22",
    "info": "#4a5a6a",
}
_CELL = "padding:2px 8px;text-align:left;vertical-align:top;border-bottom:1px solid #ddd"


def _e(text: object) -> str:
    return escape(visible_html(str(text)), quote=True)


def _head(view: Report) -> list[str]:
    a = view.analysis
    m = a.meta
    gpus = a.gpu_names()
    iters = a.iterations.phrase
    return [
        f'<div style="font-weight:bold">tcreport: {_e(view.source_path)}</div>',
        f'<div style="color:#555">{_e(m.profiler or m.format.value)} · {_e(gpus)} · '
        f"{_e(iters)}</div>",
        *(_cpu_only(view) if a.host.cpu_only else _verdict(view)),
    ]


def _cpu_only(view: Report) -> list[str]:
    """A CPU-only run: the verdict line, its host time and what stays unknown without a GPU."""
    a = view.analysis
    lead = a.verdict.sentence[0]  # its rest points at host tables this view leaves out
    total = fmt.ns(a.host.total.ns) if a.host.total else a.host.unknown
    return [
        f'<div style="margin:6px 0"><strong>{_e(lead)}</strong></div>',
        f"<div>Host time in ops: <strong>{_e(total)}</strong>; {_e(a.verdict.words.unit_one)} "
        f"use and GPU time: {_e(a.host.unknown)}.</div>",
        *(
            [f'<div style="color:#555">{_e(a.host.gpu_run_adds)}</div>']
            if a.host.gpu_run_adds
            else []
        ),
    ]


def _verdict(view: Report) -> list[str]:
    a = view.analysis
    w = a.verdict.words
    return [
        '<div style="margin:6px 0">',
        '<span style="font-size:1.6em;font-weight:bold">'
        f"{_e(fmt.pct(a.verdict.tc_share))}</span> of GPU kernel time on {_e(w.unit)} "
        f"({_e(fmt.ns(a.time.tc_kernel_ns))} of {_e(fmt.ns(a.time.gpu_kernel_ns))}); "
        f"eligible time not on {_e(w.unit)}: {_e(a.verdict.miss_card.value)} in "
        f"{_e(fmt.count(a.verdict.missed_op_count))} "
        f"{'op' if a.verdict.missed_op_count == 1 else 'ops'}",
        "</div>",
    ]


def _findings(view: Report) -> list[str]:
    if not view.findings:
        a = view.analysis
        return [f"<div>{_e(a.host.no_findings) if a.host.cpu_only else 'No findings.'}</div>"]
    rows = [
        '<table style="border-collapse:collapse;margin-top:4px">',
        "<thead><tr>"
        + "".join(
            f'<th style="{_CELL}">{h}</th>' for h in ("severity", "id", "finding", "saves", "fix")
        )
        + "</tr></thead><tbody>",
    ]
    for f in view.findings:
        colour = _SEVERITY_COLOURS.get(f.severity.value, "#333")
        saving = f.saving_amount or ""
        rows.append(
            "<tr>"
            f'<td style="{_CELL};color:{colour};font-weight:bold">{_e(f.severity.value)}</td>'
            f'<td style="{_CELL};font-family:monospace">{_e(f.id)}</td>'
            f'<td style="{_CELL}">{_e(f.title)}</td>'
            f'<td style="{_CELL};white-space:nowrap">{_e(saving)}</td>'
            f'<td style="{_CELL}">{_e(f.fix or "")}</td>'
            "</tr>"
        )
    rows.append("</tbody></table>")
    return rows


def _checks(view: Report) -> list[str]:
    """Figures that break an invariant (analysis.invariants), named, in red."""
    return [
        f'<div style="color:#b3261e;font-weight:bold">check failed: {_e(v)}</div>'
        for v in view.analysis.violations
    ]


def render(view: Report) -> str:
    parts = [
        '<div class="tcreport" style="font-family:system-ui,sans-serif;line-height:1.4">',
        *_head(view),
        *_checks(view),
        *_findings(view),
        '<div style="color:#777;margin-top:4px">.to_html() gives the full report; .kernels, '
        ".ops, .op_types, .iterations and .findings the rows as DataFrames.</div>",
        "</div>",
    ]
    return "\n".join(parts)
