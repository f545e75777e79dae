"""The self-contained HTML report: one file, no network, safe against hostile names.

Safety is structural: Jinja2 autoescape on, the only script and style are inline and pinned by
sha256 in a Content-Security-Policy that forbids every network fetch, and the embedded summary JSON
is escaped so that ``</script>`` inside a kernel name cannot close the block. Output is
deterministic: no timestamp unless asked, sorted rows, no dict-order dependence.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import jinja2

from tcreport.render import fmt, summary_json
from tcreport.render.view import ReportView

MAX_ROWS = 200  # longer tables are capped; the full data is in `tcreport ingest` Parquet


@dataclass(frozen=True)
class Bar:
    label: str
    value: int
    width: float  # 0-100, share of the longest bar
    share: str
    css: str


@dataclass(frozen=True)
class IterBar:
    label: str
    x: float
    width: float
    segments: tuple[tuple[str, float, float], ...]  # (css class, y, height) in a 0-100 box
    title: str
    aggregated: bool


def _template_dir() -> Path:
    packaged = resources.files("tcreport").joinpath("templates")
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "templates"  # source checkout


@cache
def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_template_dir())),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["ns"] = fmt.ns
    env.filters["pct"] = fmt.pct
    env.filters["yesno"] = fmt.yes_no
    env.filters["count"] = fmt.count
    return env


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode(
        "ascii"
    )


def _json_for_script(data: object) -> str:
    """JSON that cannot end its <script> block or open a comment, whatever the names hold."""
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _op_bars(view: ReportView, limit: int = 15) -> list[Bar]:
    ops = [o for o in view.analysis.ops if o.gpu_ns][:limit]
    top = max((o.gpu_ns or 0 for o in ops), default=0)
    return [
        Bar(
            label=o.name,
            value=o.gpu_ns or 0,
            width=100.0 * (o.gpu_ns or 0) / top if top else 0.0,
            share=fmt.pct(o.share),
            css="tc" if o.uses_tc else ("miss" if o.tc_eligible else "other"),
        )
        for o in ops
    ]


def _iter_bars(view: ReportView) -> list[IterBar]:
    rows = view.analysis.iterations
    if len(rows) < 2:
        return []
    top = max(r.duration_ns for r in rows) or 1
    n = len(rows)
    width = 100.0 / n
    bars = []
    for i, r in enumerate(rows):
        busy = r.tc_ns + r.non_tc_ns + r.memory_ns
        idle = max(0, r.duration_ns - busy)
        y = 100.0
        segs = []
        for css, v in (
            ("tc", r.tc_ns),
            ("other", r.non_tc_ns),
            ("mem", r.memory_ns),
            ("idle", idle),
        ):
            h = 100.0 * v / top
            y -= h
            segs.append((css, round(y, 3), round(h, 3)))
        bars.append(
            IterBar(
                label=str(r.iteration),
                x=round(i * width, 3),
                width=round(width * 0.85, 3),
                segments=tuple(segs),
                title=f"iteration {r.iteration}: {fmt.ns(r.duration_ns)}, TC {fmt.ns(r.tc_ns)}, "
                f"other kernels {fmt.ns(r.non_tc_ns)}, memory {fmt.ns(r.memory_ns)}, {r.kernel_count} kernels"
                + ("" if r.aggregated else " (not aggregated)"),
                aggregated=r.aggregated,
            )
        )
    return bars


def render(view: ReportView) -> str:
    env = _env()
    script = env.get_template("report.js").render()
    style = env.get_template("report.css").render()
    a = view.analysis
    data = _json_for_script(summary_json.summary_dict(view))
    csp = (
        "default-src 'none'; "
        f"script-src '{_sha256(script)}'; style-src '{_sha256(style)}'; "
        "img-src data:; font-src 'none'; connect-src 'none'; form-action 'none'; "
        "frame-ancestors 'none'; base-uri 'none'"
    )
    eligible = [o for o in a.ops if o.tc_eligible]
    why = {w.op_name: w for w in a.why_not}
    return env.get_template("report.html.j2").render(
        view=view,
        a=a,
        meta=a.meta,
        csp=csp,
        script=script,
        style=style,
        data_json=data,
        op_bars=_op_bars(view),
        iter_bars=_iter_bars(view),
        eligible=eligible,
        why=why,
        ops=a.ops[:MAX_ROWS],
        ops_capped=len(a.ops) > MAX_ROWS,
        kernels=a.kernels[:MAX_ROWS],
        kernels_capped=len(a.kernels) > MAX_ROWS,
        max_rows=MAX_ROWS,
    )
