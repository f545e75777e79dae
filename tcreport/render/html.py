"""The self-contained HTML report: one file, no network, safe against hostile names.

Safety is structural: Jinja2 autoescape on, the only script and style are inline and pinned by
sha256 in a Content-Security-Policy that forbids every network fetch (and no ``style=""``
attribute anywhere, because hashes do not cover those), and the embedded summary JSON is escaped
so that ``</script>`` inside a kernel name cannot close the block. Output is deterministic: no
timestamp unless asked, rows in a fixed order, numbers formatted here rather than in the browser.

Everything the template shows is prepared here as small frozen rows (charts as coordinates,
anchors as strings), so the template stays declarative and every link is built by the same
function as the id it points to. Tables are capped at :data:`MAX_ROWS` so that a trace with
millions of launches still gives a report of a few hundred kilobytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import jinja2

from tcreport import fmt
from tcreport.job_report import JobReport
from tcreport.render import html_parts as parts
from tcreport.render import job_html, page, roofline_html, summary_json, timeline_html
from tcreport.render.html_parts import (
    CHART_W,
    MAX_ROWS,
    anchor,
    bars,
    capped,
    cards,
    evidence_targets,
    findings,
    iter_chart,
    stack,
    tc_miss,
)
from tcreport.render.html_tables import eligibility, run_header
from tcreport.report import Report
from tcreport.rules.base import EvidenceKind


def environment() -> jinja2.Environment:
    """The report's Jinja2 environment (:func:`tcreport.render.page.environment` with its filters)."""
    return page.environment(_FILTERS)


_FILTERS: tuple[tuple[str, Callable[..., str]], ...] = (
    ("ns", fmt.ns),
    ("pct", fmt.pct),
    ("yesno", fmt.yes_no),
    ("count", fmt.count),
    ("tail", fmt.tail),
    ("noun", fmt.noun),
    ("anchor", lambda key, kind: anchor(kind, str(key))),
)


#: What json.dumps leaves raw with ensure_ascii=False but no page should hold raw: DEL and C1.
_RAW_CONTROL = re.compile("[\x7f-\x9f]")


def _json_for_script(data: object) -> str:
    """JSON that cannot end its <script> block or open a comment, whatever the names hold, and
    holds no raw control character (escaped as ``\\u009b``: the same string to a JSON parser)."""
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    text = _RAW_CONTROL.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def render(view: Report, job: JobReport | None = None) -> str:
    """The report of ``view``; with ``job``, the page of that distributed job, ``view`` being the
    rank it shows in full (:mod:`tcreport.render.job_html`)."""
    env = environment()
    script = page.asset("report.js")
    style = page.asset("report.css") + (job_html.EXTRA_CSS if job is not None else "")
    a = view.analysis
    csp = page.csp(style, script)
    keep = evidence_targets(view)
    ops = capped(a.breakdown.ops, lambda o: o.name, keep[EvidenceKind.OP])
    kernels = capped(a.breakdown.kernels, lambda k: k.name, keep[EvidenceKind.KERNEL])
    op_ids = {o.name for o in ops}
    elig = eligibility(a, keep[EvidenceKind.OP], op_ids)
    iter_rows = parts.iter_rows(a, keep[EvidenceKind.ITERATION])
    ids: dict[EvidenceKind, dict[str, str]] = {
        # a CPU-only run shows its ops in the host table alone (no GPU op or eligibility table)
        EvidenceKind.OP: {r.name: anchor("op", r.name) for r in a.host.ops}
        if a.host.cpu_only
        else {o.name: anchor("op", o.name) for o in ops}
        | {e.op.name: e.id for e in elig},  # the eligibility row holds the "why not"
        EvidenceKind.KERNEL: {k.name: anchor("kernel", k.name) for k in kernels},
        EvidenceKind.ITERATION: {str(r.row.iteration): r.id for r in iter_rows},
    }
    types = list(a.breakdown.op_types)
    scopes = list(a.breakdown.scopes)
    precision, precision_bar = parts.precision(a)
    w = a.verdict.words
    t = a.time  # the kernel mix is the headline's: TC, unknown, and the rest
    k_tc, k_no, k_unk = t.tc_kernel_ns or 0, t.non_tc_kernel_ns, t.unknown_kernel_ns or 0
    return env.get_template("report.html.j2").render(
        view=view,
        tool_version=view.tool_version,
        a=a,
        w=w,
        meta=a.meta,
        it=a.iterations.info,
        it_how=a.iterations.how,
        csp=csp,
        script=script,
        style=style,
        data_json=_json_for_script(summary_json.summary_dict(view)),
        run_header=run_header(view),
        cards=cards(a),
        findings=findings(view, ids),
        chart_w=CHART_W,
        op_bars=bars(
            (o.name, o.gpu_ns or 0, o.share, *tc_miss(o), "#" + anchor("op", o.name)) for o in ops
        ),
        type_bars=bars((g.name, g.gpu_ns, g.share, g.tc_ns, g.miss_ns, None) for g in types),
        scope_bars=bars((g.name, g.gpu_ns, g.share, g.tc_ns, g.miss_ns, None) for g in scopes),
        types=types[:MAX_ROWS],
        scopes=scopes[:MAX_ROWS],
        scopes_total=len(scopes),
        ops=ops,
        elig=elig,
        elig_total=a.verdict.eligible_listed,
        elig_untimed=a.verdict.eligible_untimed,
        kernels=kernels,
        kernel_mix=stack(
            [
                ("tc", k_tc, w.unit_one),
                ("other", k_no, f"not {w.unit_one}"),
                ("unk", k_unk, "unknown"),
            ]
        ),
        kernel_mix_ns=(k_tc, k_no, k_unk),
        iter_chart=iter_chart(a, {r.row.iteration for r in iter_rows}),
        iter_rows=iter_rows,
        precision=precision,
        precision_bar=precision_bar,
        max_rows=MAX_ROWS,
        outlier_factor=f"{a.iterations.outlier_factor:g}",
        steps=timeline_html.section(a),
        step_parts=timeline_html.step_parts(w),
        tl_w=timeline_html.TL_W,
        roofline=roofline_html.section(a),
        job=job_html.view(job) if job is not None else None,
    )
