"""The job section of the HTML report: a rank × iteration heatmap, the per-rank table, the straggler,
collective bandwidth and the job's findings, laid out for ``templates/_job.html.j2``.

Figures and words come from the job section (:mod:`tcreport.analysis.job`); this module only turns
them into coordinates and display strings. The rank shown in full below it (with its timeline) is
the ordinary report of that rank (:func:`tcreport.render.html.render`).
"""

from __future__ import annotations

from dataclasses import dataclass

from tcreport import fmt
from tcreport.analysis.collectives import BandwidthRow
from tcreport.analysis.job import Excess, JobSection, RankRow
from tcreport.analysis.job_cells import PARTS, IterationRow
from tcreport.job_report import JobReport
from tcreport.kernel_names import short_name
from tcreport.rules.base import Finding

#: Heatmap geometry (SVG user units): a label column, then one column per iteration.
LABEL_W = 70
HEAT_W = 930
ROW_H_MAX = 22
ROW_H_MIN = 4
LEVELS = 5
#: Iterations drawn at most (the first ones; the JSON has every cell).
MAX_COLUMNS = 60
MAX_ROWS = 100
#: The job section's own rules, appended to report.css on a job's page only (a single trace's
#: report keeps its bytes and its CSP hash).
EXTRA_CSS = (
    ".heat text.hm-t{font-size:10.5px;fill:#fff;pointer-events:none}"
    ".hm-compute,.l-hm-compute{fill:var(--p0);background:var(--p0)}"
    ".hm-communication,.l-hm-communication{fill:var(--p2);background:var(--p2)}"
    ".hm-memory,.l-hm-memory{fill:var(--mem);background:var(--mem)}"
    ".hm-idle,.l-hm-idle{fill:var(--muted);background:var(--muted)}"
    ".hm-1{fill-opacity:.35}.hm-2{fill-opacity:.5}.hm-3{fill-opacity:.65}.hm-4{fill-opacity:.8}"
    ".hm-5{fill-opacity:1}.hm-slow{stroke:var(--miss);stroke-width:2}"
)
PART_LEGEND = {
    "compute": "compute",
    "communication": "communication (not hidden)",
    "memory": "memory copies/sets",
    "idle": "idle (in and between steps)",
}


@dataclass(frozen=True)
class HeatCell:
    x: float
    y: float
    w: float
    h: float
    css: str  # the dominant part
    level: int  # 1..LEVELS: the step time against the longest
    slow: bool
    text: str  # shown in the cell when it is wide and tall enough
    title: str


@dataclass(frozen=True)
class BandwidthLine:
    row: BandwidthRow
    size: str
    algbw: str
    busbw: str
    nvlink: str


@dataclass(frozen=True)
class JobView:
    title: str
    presence: str
    backend: str | None
    detected_by: str
    verdict: str
    tone: str  # the verdict's tone as the analysis judged it (JobVerdict.tone)
    share_head: str  # the per-rank share's column head in the ranks' words
    matching: str
    cells: tuple[HeatCell, ...]
    heat_h: float
    columns: tuple[tuple[float, str], ...]  # (x centre, label)
    rows: tuple[tuple[float, str], ...]  # (y baseline, "rank N")
    heat_note: str | None
    legend: tuple[tuple[str, str], ...]
    ranks: tuple[RankRow, ...]
    iterations: tuple[IterationRow, ...]
    straggler_text: str | None
    excess: tuple[tuple[str, Excess], ...]  # (shown name, row)
    wait_ns: float | None
    bandwidth_note: str
    bandwidth: tuple[BandwidthLine, ...]
    findings: tuple[Finding, ...]
    notes: tuple[str, ...]
    detail_heading: str


def _heat(
    sec: JobSection,
) -> tuple[
    tuple[HeatCell, ...],
    float,
    tuple[tuple[float, str], ...],
    tuple[tuple[float, str], ...],
    str | None,
]:
    ranks = [r.rank for r in sec.ranks][:MAX_ROWS]
    iters = list(sec.iterations)[:MAX_COLUMNS]
    if not ranks or not iters:
        return (), 0.0, (), (), None
    row_h = max(ROW_H_MIN, min(ROW_H_MAX, 600 // len(ranks)))
    col_w = HEAT_W / len(iters)
    longest = max(c.step.step_ns for c in sec.cells) or 1
    y_of = {r: 18 + i * row_h for i, r in enumerate(ranks)}
    cells = []
    for c in sec.cells:  # ranks × iterations, capped above
        if c.rank not in y_of or c.iteration >= len(iters):
            continue
        parts = ", ".join(f"{p} {fmt.ns(c.part_ns(p))}" for p in PARTS)
        title = (
            f"rank {c.rank}, {c.label}: step {fmt.ns(c.step.step_ns)} ({parts}); "
            f"collective wait {fmt.ns(c.wait_ns)}" + ("; the straggler" if c.straggler else "")
        )
        cells.append(
            HeatCell(
                x=round(LABEL_W + c.iteration * col_w + 1, 2),
                y=y_of[c.rank],
                w=round(max(1.0, col_w - 2), 2),
                h=row_h - 2,
                css=c.dominant,
                level=max(1, min(LEVELS, round(LEVELS * c.step.step_ns / longest))),
                slow=c.straggler,
                text=fmt.ns(c.step.step_ns) if col_w >= 70 and row_h >= 16 else "",
                title=title,
            )
        )
    columns = tuple(
        (round(LABEL_W + (i + 0.5) * col_w, 2), r.label if col_w >= 90 else str(r.iteration))
        for i, r in enumerate(iters)
    )
    rows = tuple((y_of[r] + row_h / 2 + 3, f"rank {r}") for r in ranks) if row_h >= 10 else ()
    hidden = []
    if len(sec.ranks) > MAX_ROWS:
        hidden.append(f"the first {MAX_ROWS} of {len(sec.ranks)} ranks")
    if len(sec.iterations) > MAX_COLUMNS:
        hidden.append(f"the first {MAX_COLUMNS} of {len(sec.iterations)} iterations")
    note = ("Showing " + " and ".join(hidden) + "; the JSON has every cell.") if hidden else None
    return tuple(cells), 18 + len(ranks) * row_h + 4, columns, rows, note


def _bandwidth(rows: tuple[BandwidthRow, ...]) -> tuple[BandwidthLine, ...]:
    def gbs(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.1f} GB/s"

    return tuple(
        BandwidthLine(
            row=r,
            size=fmt.nbytes(r.message_bytes) if r.message_bytes is not None else "n/a",
            algbw=gbs(r.algbw_gbs),
            busbw=gbs(r.busbw_gbs),
            nvlink=fmt.pct(r.nvlink_share),
        )
        for r in rows
    )


def view(jr: JobReport) -> JobView:
    sec = jr.section
    cells, height, columns, rows, note = _heat(sec)
    s = sec.straggler
    excess: list[tuple[str, Excess]] = []
    if s is not None:
        excess += [(e.name, e) for e in s.parts]
        excess += [(short_name(e.name), e) for e in s.kernels]
        excess += [(e.name, e) for e in s.ops]
    return JobView(
        title=jr.source_path,
        presence=sec.identity.presence,
        backend=sec.identity.backend,
        detected_by=sec.identity.detected_by,
        verdict=sec.verdict.text,
        tone=sec.verdict.tone.value,
        share_head=sec.share_head,
        matching=sec.matching,
        cells=cells,
        heat_h=height,
        columns=columns,
        rows=rows,
        heat_note=note,
        legend=tuple((p, PART_LEGEND[p]) for p in PARTS),
        ranks=sec.ranks,
        iterations=sec.iterations,
        straggler_text=s.text if s is not None else None,
        excess=tuple(excess),
        wait_ns=sec.wait_ns,
        bandwidth_note=sec.bandwidth.note,
        bandwidth=_bandwidth(sec.bandwidth.rows),
        findings=jr.findings,
        notes=(
            *(f"Check failed (a bug; please report it): {v}" for v in sec.violations),
            *sec.notes,
        ),
        detail_heading=f"Rank {jr.detail_rank} ({jr.detail_why}) in full",
    )
