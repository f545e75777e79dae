"""``OUT/index.html`` of ``tcreport batch``: the runs table first, then small-multiple trends.

Self-contained like the report: the one stylesheet and the report's own progressive-enhancement
script (``report.js``: sortable headers; without it the table reads in full, newest first) pinned
by sha256 in a CSP that forbids every fetch, autoescaped names, links only to the relative
``reports/<name>.html`` files beside it. What the page says is decided before it gets here: each
run's verdict sentence, tone and matrix-unit name come from its analysis (the dataset's
``runs.verdict*`` columns), and which GPU models get a trend from :mod:`tcreport.batch.index`.
This module only lays out: the charts' SVG coordinates, on one time axis shared by every chart.
"""

from __future__ import annotations

from dataclasses import dataclass

from tcreport import fmt
from tcreport.render import diff_html, html, page

CHART_W = 1000
CHART_H = 96
PAD_L, PAD_R, PAD_T, PAD_B = 50, 20, 8, 8
AXIS_H = 22  # the shared time axis under the last chart
EXTRA_CSS = (
    ".tone-good{color:var(--tc)}.tone-bad{color:var(--miss)}"
    ".multiples h3{margin:10px 0 0;font-size:13px}.multiples svg{display:block}"
    "#t-runs td.v{min-width:22em}#t-runs td.d{white-space:nowrap}"
)


@dataclass(frozen=True)
class IndexRow:
    run_id: str
    ok: bool
    error: str | None
    source: str
    format: str | None
    gpu: str | None
    date: str | None  # YYYY-MM-DD
    timestamp: float | None
    tc_share: float | None
    miss_share: float | None  # eligible-not-TC GPU time / kernel time
    miss_ns: int | None  # eligible-not-TC GPU time per aggregated iteration (the card's)
    fix_first: str | None  # "ID: title" of the finding the run's report says to fix first
    report: str | None  # relative link
    date_from_mtime: bool = False  # the trace records no start time: the file's mtime stands in
    verdict: str | None = None  # the report's one-line verdict (None: archived before it was kept)
    tone: str | None = None  # good / neutral / bad / unknown, the verdict section's
    unit: str | None = None  # the run's matrix units in its vendor's words


@dataclass(frozen=True)
class IndexPage:
    """What the index shows, decided by :mod:`tcreport.batch.index`."""

    rows: tuple[IndexRow, ...]  # newest first
    unit: str  # the matrix units the column heads name: the archive's one unit, else generic
    series: tuple[tuple[str, tuple[IndexRow, ...]], ...]  # GPU model -> its trend's runs
    trend_rule: str  # why the charts that are there are there, in words


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    title: str


@dataclass(frozen=True)
class Trend:
    gpu: str
    points: tuple[Point, ...]
    line: str  # SVG polyline points


@dataclass(frozen=True)
class Axis:
    """The one time axis every chart shares: its span and the labels under the last chart."""

    t0: float
    t1: float
    labels: tuple[tuple[float, str, str], ...]  # x, date, SVG text-anchor (kept inside)
    y_labels: tuple[tuple[float, str], ...]


def _x(t: float, t0: float, t1: float) -> float:
    w = CHART_W - PAD_L - PAD_R
    return round(PAD_L + (w * (t - t0) / (t1 - t0) if t1 > t0 else w / 2), 2)


def axis(series: tuple[tuple[str, tuple[IndexRow, ...]], ...]) -> Axis | None:
    stamps = [(r.timestamp, r.date or "") for _, rs in series for r in rs if r.timestamp]
    if not stamps:
        return None
    (t0, first), (t1, last) = min(stamps), max(stamps)
    mid = (t0 + t1) / 2
    mid_date = min(stamps, key=lambda s: abs(s[0] - mid))[1]
    labels = [(t0, first, "start"), (t1, last, "end")] if t1 > t0 else [(t0, first, "middle")]
    if mid_date not in (first, last):
        labels.insert(1, (mid, mid_date, "middle"))
    h = CHART_H - PAD_T - PAD_B
    y_labels = tuple((round(PAD_T + h * (1 - v), 2), f"{v:.0%}") for v in (0.0, 0.5, 1.0))
    return Axis(t0, t1, tuple((_x(t, t0, t1), d, a) for t, d, a in labels), y_labels)


def trend(gpu: str, runs: tuple[IndexRow, ...], ax: Axis) -> Trend:
    """One GPU model's shares, oldest left, placed on the shared axis."""
    h = CHART_H - PAD_T - PAD_B
    pts = sorted(runs, key=lambda r: (r.timestamp or 0.0, r.source))
    points = tuple(
        Point(
            x=_x(r.timestamp or 0.0, ax.t0, ax.t1),
            y=round(PAD_T + h * (1.0 - (r.tc_share or 0.0)), 2),
            title=f"{r.date}  {r.source}: {fmt.pct(r.tc_share)}",
        )
        for r in pts
    )
    return Trend(gpu, points, " ".join(f"{p.x},{p.y}" for p in points))


def render(index: IndexPage, tool_version: str) -> str:
    css = diff_html.style() + EXTRA_CSS
    script = page.asset("report.js")
    ax = axis(index.series)
    trends = tuple(trend(g, rs, ax) for g, rs in index.series) if ax else ()
    return (
        html.environment()
        .get_template("index.html.j2")
        .render(
            rows=index.rows,
            unit=index.unit,
            failed=sum(1 for r in index.rows if not r.ok),
            trends=trends,
            trend_rule=index.trend_rule,
            axis=ax,
            chart_w=CHART_W,
            chart_h=CHART_H,
            axis_h=AXIS_H,
            pad_l=PAD_L,
            pad_r=PAD_R,
            base_y=CHART_H - PAD_B,
            csp=page.csp(css, script),
            style=css,
            script=script,
            tool_version=tool_version,
            share_number=fmt.pct_number,
            ms_number=fmt.ms_number,
        )
    )
