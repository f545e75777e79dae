"""``tcreport diff --format html``: the diff as one self-contained page, safe like the report.

The same structural safety as :mod:`tcreport.render.html`: Jinja2 autoescape, no script at all,
the one inline stylesheet (the report's ``report.css`` plus a few diff rules) pinned by sha256 in a
Content-Security-Policy that forbids every fetch, and no ``style=""`` attributes. The environment
and CSP helpers here are shared with the batch index (:mod:`tcreport.render.index_html`).
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from importlib import resources
from pathlib import Path

import jinja2

from tcreport.compare import Diff, Verdict
from tcreport.render import diff_markdown as md
from tcreport.render import fmt

MAX_ROWS = 200
EXTRA_CSS = (
    ".d-regressed{color:var(--miss);font-weight:600}.d-improved{color:var(--tc);font-weight:600}"
    ".d-noise,.d-no-change{color:var(--muted)}.forced{border-left:5px solid var(--miss);"
    "background:var(--card);padding:8px 12px}.trend{max-width:100%}.trend .pt{fill:var(--link)}"
    ".trend .ln{fill:none;stroke:var(--link);stroke-width:1.5}.trend .ax{stroke:var(--line)}"
    ".trend text{fill:var(--muted);font-size:11px}.err{color:var(--miss)}"
)


def template_dir() -> Path:
    packaged = resources.files("tcreport").joinpath("templates")
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "templates"  # source checkout


@cache
def env() -> jinja2.Environment:
    e = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir())),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    e.filters["ns"] = fmt.ns
    e.filters["pct"] = fmt.pct
    e.filters["count"] = fmt.count
    e.filters["tail"] = fmt.tail
    return e


def sha256(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


def style() -> str:
    return env().get_template("report.css").render() + EXTRA_CSS


def csp(css: str) -> str:
    """No script, one hashed stylesheet, no fetches (as the report's CSP, without script-src)."""
    return (
        "default-src 'none'; script-src 'none'; "
        f"style-src '{sha256(css)}'; img-src 'none'; font-src 'none'; connect-src 'none'; "
        "media-src 'none'; object-src 'none'; frame-src 'none'; worker-src 'none'; "
        "form-action 'none'; base-uri 'none'"
    )


def render(d: Diff, tool_version: str) -> str:
    css = style()
    return (
        env()
        .get_template("diff.html.j2")
        .render(
            d=d,
            csp=csp(css),
            style=css,
            tool_version=tool_version,
            value=md.value,
            delta=md.delta,
            tc=md.tc,
            miss=md.miss,
            regressed=Verdict.REGRESSED,
            tables=(
                ("Ops", d.ops, "op"),
                ("Op types", d.op_types, "type"),
                ("Kernels", d.kernels, "kernel"),
            ),
            max_rows=MAX_ROWS,
        )
    )
