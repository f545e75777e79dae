"""The eligibility table and the run header of the HTML report: rows prepared from the
analysis, nothing computed (split from :mod:`tcreport.render.html_parts` to keep each module
about one part of the page)."""

from __future__ import annotations

from dataclasses import dataclass

from tcreport.analysis.figures import OpRow
from tcreport.analysis.result import Analysis
from tcreport.analysis.why_not import WhyNot
from tcreport.render.html_parts import anchor, capped
from tcreport.report import Report


@dataclass(frozen=True)
class EligRow:
    op: OpRow
    id: str
    op_href: str | None
    reasons: tuple[WhyNot, ...]  # distinct messages, first one shown in full
    timed: bool  # False: a wrapper op whose kernels are attributed to the op it calls


def _why_by_name(a: Analysis) -> dict[str, tuple[WhyNot, ...]]:
    """Why-not rows per op name (they come per instance), distinct messages in first-seen order."""
    acc: dict[str, dict[str, WhyNot]] = {}
    for w in a.verdict.why_not:
        acc.setdefault(w.op_name, {}).setdefault(w.message, w)
    return {k: tuple(v.values()) for k, v in acc.items()}


def eligibility(a: Analysis, keep: set[str], op_ids: set[str]) -> list[EligRow]:
    why = _why_by_name(a)
    # Misses first, by time; wrapper ops with no GPU time of their own (aten::conv2d around
    # aten::cudnn_convolution) last, since their "no" says nothing about the kernels.
    rows = sorted(
        (o for o in a.breakdown.ops if o.tc_eligible),
        key=lambda o: (not o.gpu_ns, o.uses_tc, -(o.gpu_ns or 0), o.name),
    )
    return [
        EligRow(
            op=o,
            id=anchor("elig", o.name),
            op_href=("#" + anchor("op", o.name)) if o.name in op_ids else None,
            reasons=why.get(o.name, ()),
            timed=o.gpu_time_note is None,
        )
        for o in capped(rows, lambda o: o.name, keep)
    ]


def run_header(view: Report) -> tuple[tuple[str, str], ...]:
    """Whitelisted run facts for the header: nothing from the trace's environment."""
    m, it = view.analysis.meta, view.analysis.iterations.info
    profiler = m.profiler or ""
    if m.profiler_version and m.profiler_version not in profiler:
        profiler = f"{profiler} {m.profiler_version}".strip()
    versions = ", ".join(
        f"{k} {v}"
        for k, v in (
            ("CUDA", m.cuda_version),
            ("cuDNN", m.cudnn_version),
            ("driver", m.driver_version),
        )
        if v
    )
    gpus = view.analysis.gpu_names(per_device=True)
    rng = view.analysis.iterations.phrase  # the headings' words ("iterations 2–9 of 10")
    if it.key_node:
        rng += f", key node {it.key_node}"
    elif how := view.analysis.iterations.how:
        rng += f", {how}"
    items = [
        ("Format", m.format.value),
        ("Profiler", profiler),
        ("Software", ", ".join(x for x in (m.framework, versions) if x)),
        ("Device" if view.analysis.host.device else f"GPU{'s' if len(m.gpus) != 1 else ''}", gpus),
        ("Matrix units", view.analysis.verdict.words.header),
        ("Iterations", rng),
    ]
    return tuple((k, v) for k, v in items if v)
