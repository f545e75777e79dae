"""``tcreport diff --format html``: the diff as one self-contained page, safe like the report.

The same structural safety as :mod:`tcreport.render.html`: Jinja2 autoescape, no script at all,
the one inline stylesheet (the report's ``report.css`` plus a few diff rules) pinned by sha256 in a
Content-Security-Policy that forbids every fetch, and no ``style=""`` attributes. The
stylesheet is shared with the batch index (:mod:`tcreport.render.index_html`).
"""

from __future__ import annotations

from tcreport.compare.model import Change, Diff, changed
from tcreport.render import diff_markdown as md
from tcreport.render import page
from tcreport.render.html import environment

MAX_ROWS = 200
EXTRA_CSS = (
    ".d-regressed{color:var(--miss);font-weight:600}.d-improved{color:var(--tc);font-weight:600}"
    ".d-noise,.d-no-change{color:var(--muted)}.forced{border-left:5px solid var(--miss);"
    "background:var(--card);padding:8px 12px}.trend{max-width:100%}.trend .pt{fill:var(--link)}"
    ".trend .ln{fill:none;stroke:var(--link);stroke-width:1.5}.trend .ax{stroke:var(--line)}"
    ".trend text{fill:var(--muted);font-size:11px}.err{color:var(--miss)}"
)


def style() -> str:
    return page.asset("report.css") + EXTRA_CSS


def render(d: Diff, tool_version: str) -> str:
    css = style()
    return (
        environment()
        .get_template("diff.html.j2")
        .render(
            d=d,
            csp=page.csp(css),
            style=css,
            tool_version=tool_version,
            value=md.value,
            delta=md.delta,
            side_ns=md.side_ns,
            row_delta=md.row_delta,
            tc=md.tc,
            miss=md.miss,
            regressed=Change.REGRESSED,
            tables=(
                ("Ops", d.ops, "op", len(changed(d.ops))),
                ("Op types", d.op_types, "type", len(changed(d.op_types))),
                ("Kernels", d.kernels, "kernel", len(changed(d.kernels))),
            ),
            max_rows=MAX_ROWS,
        )
    )
