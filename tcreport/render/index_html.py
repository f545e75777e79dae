"""``OUT/index.html`` of ``tcreport batch``: every archived run and a Tensor Core share trend.

Self-contained like the report (no script, the one stylesheet pinned by sha256 in a CSP that forbids
every fetch, autoescaped names); links go only to the relative ``reports/<run_id>.html`` files beside
it. The trend chart is inline SVG whose coordinates are computed here, so the template only draws.
"""

from __future__ import annotations

from dataclasses import dataclass

from tcreport import fmt
from tcreport.render import diff_html, html, page

CHART_W = 1000
CHART_H = 220
PAD_L, PAD_R, PAD_T, PAD_B = 50, 20, 12, 28


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
    miss_ns: int | None
    fix_first: str | None  # "ID: title" of the finding the run's report says to fix first
    report: str | None  # relative link
    date_from_mtime: bool = False  # the trace records no start time: the file's mtime stands in


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    title: str


@dataclass(frozen=True)
class Trend:
    points: tuple[Point, ...]
    line: str  # SVG polyline points
    x_labels: tuple[tuple[float, str], ...]
    y_labels: tuple[tuple[float, str], ...]


def trend(rows: tuple[IndexRow, ...]) -> Trend | None:
    """TC share of each successful run over time (oldest left); None with fewer than one point."""
    pts = sorted(
        (r for r in rows if r.ok and r.tc_share is not None and r.timestamp is not None),
        key=lambda r: (r.timestamp or 0.0, r.source),
    )
    if not pts:
        return None
    t0, t1 = pts[0].timestamp or 0.0, pts[-1].timestamp or 0.0
    span = t1 - t0
    w, h = CHART_W - PAD_L - PAD_R, CHART_H - PAD_T - PAD_B

    def x_of(i: int, t: float) -> float:
        if span > 0:
            return round(PAD_L + w * (t - t0) / span, 2)
        return round(PAD_L + w * (i + 0.5) / len(pts), 2)  # one date: spread evenly

    points = tuple(
        Point(
            x=x_of(i, r.timestamp or 0.0),
            y=round(PAD_T + h * (1.0 - (r.tc_share or 0.0)), 2),
            title=f"{r.date}  {r.source}  ({r.gpu or fmt.UNKNOWN_GPU}): {(r.tc_share or 0) * 100:.1f} %",
        )
        for i, r in enumerate(pts)
    )
    labels = {pts[0].date or "", pts[-1].date or ""}
    x_labels = tuple(
        (p.x, r.date or "") for p, r in zip(points, pts, strict=True) if (r.date or "") in labels
    )
    seen: set[str] = set()
    x_unique = []
    for x, label in x_labels:
        if label not in seen:
            seen.add(label)
            x_unique.append((x, label))
    y_labels = tuple((round(PAD_T + h * (1 - v), 2), f"{v:.0%}") for v in (0.0, 0.5, 1.0))
    line = " ".join(f"{p.x},{p.y}" for p in points)
    return Trend(points, line, tuple(x_unique), y_labels)


def trends(rows: tuple[IndexRow, ...]) -> tuple[tuple[str, Trend], ...]:
    """One trend per GPU model, never a line from an A100 run to an H100 run: a share that moves
    because the hardware changed is not a trend. Models in name order."""
    by_gpu: dict[str, list[IndexRow]] = {}
    for r in rows:
        by_gpu.setdefault(r.gpu or fmt.UNKNOWN_GPU, []).append(r)
    out = []
    for gpu in sorted(by_gpu):
        t = trend(tuple(by_gpu[gpu]))
        if t is not None:
            out.append((gpu, t))
    return tuple(out)


def render(rows: tuple[IndexRow, ...], tool_version: str) -> str:
    css = diff_html.style()
    return (
        html.environment()
        .get_template("index.html.j2")
        .render(
            rows=rows,
            failed=sum(1 for r in rows if not r.ok),
            trends=trends(rows),
            chart_w=CHART_W,
            chart_h=CHART_H,
            pad_l=PAD_L,
            pad_r=PAD_R,
            axis_y=CHART_H - PAD_B,
            csp=page.csp(css),
            style=css,
            tool_version=tool_version,
        )
    )
