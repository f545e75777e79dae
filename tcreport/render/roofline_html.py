"""The roofline chart of the HTML report and the table it is drawn from.

It formats :class:`tcreport.analysis.roofline.Roofline` and nothing else: the heavy (op, shapes)
groups, their intensities, rates and verdicts, the roofs and the matrix units' name all come
from the analysis; this module only maps them onto log axes (coordinates rounded, so the same
run draws the same bytes), writes the labels and the legend around the analysis's words, and
numbers the dots so each can be found in the table below it (the chart's text alternative).
Inline SVG, no script, no network.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tcreport import fmt
from tcreport.analysis.op_throughput import MatrixUse, OpThroughput
from tcreport.analysis.result import Analysis
from tcreport.analysis.roofline import Roofline

W, H = 1000, 380  # the viewBox
LEFT, RIGHT, TOP, BOTTOM = 70, 170, 14, 46  # room for the tick labels and the roof labels
_CSS = {
    MatrixUse.YES: "rf-yes",
    MatrixUse.NO: "rf-no",
    MatrixUse.MIXED: "rf-mixed",
    MatrixUse.UNKNOWN: "rf-unk",
}


def _c(v: float) -> str:
    return f"{v:.2f}"


@dataclass(frozen=True)
class Tick:
    at: str  # x or y in the viewBox
    label: str
    lx: str  # where the label is written
    ly: str


@dataclass(frozen=True)
class RoofLine:
    points: str  # polyline points
    label: str
    lx: str
    ly: str


@dataclass(frozen=True)
class Dot:
    n: int
    x: str
    y: str
    lx: str  # where its number is written
    css: str
    title: str


@dataclass(frozen=True)
class Row:
    n: int
    name: str
    shapes: str
    precision: str
    calls: int
    gpu_ns: int
    memset_ns: int
    flops: str
    flops_v: int | None  # the sort value
    bytes: str
    bytes_v: int | None
    intensity: str
    tflops: str
    mean: str
    median: str
    share: str
    bound: str
    matrix: str
    css: str


@dataclass(frozen=True)
class RooflineView:
    heading_note: str
    note: str | None
    source: str | None  # the peaks table's sources for the roofs
    unit: str  # the run's matrix units, for the table's column
    legend: tuple[tuple[str, str], ...]  # (css, words)
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    roofs: tuple[RoofLine, ...]
    dots: tuple[Dot, ...]
    rows: tuple[Row, ...]
    aria: str
    plot: tuple[int, int, int, int]  # left, top, right, bottom
    x_title: tuple[str, str] = (_c((LEFT + W - RIGHT) / 2), _c(H - 8))
    y_title: tuple[str, str] = (_c(-(TOP + H - BOTTOM) / 2), "16")  # rotated by -90°
    width: int = W
    height: int = H


@dataclass(frozen=True)
class _Axis:
    """A log10 axis from 10**lo to 10**hi onto [a, b] of the viewBox."""

    lo: int
    hi: int
    a: float
    b: float

    def at(self, v: float) -> float:
        return self.a + (math.log10(v) - self.lo) / (self.hi - self.lo) * (self.b - self.a)

    def ticks(self, horizontal: bool) -> tuple[Tick, ...]:
        out = []
        for k in range(self.lo, self.hi + 1):
            at = self.at(10.0**k)
            lx, ly = (at, H - BOTTOM + 16) if horizontal else (LEFT - 6, at + 4)
            out.append(Tick(_c(at), _decade(k), _c(lx), _c(ly)))
        return tuple(out)


def _decade(k: int) -> str:
    if k < 0:
        return f"{10.0**k:.{-k}f}"
    return {0: "1", 1: "10", 2: "100"}.get(k) or (
        f"{10 ** (k - 3):g}k" if k < 6 else f"{10 ** (k - 6):g}M"
    )


def _span(values: Sequence[float], below: float, above: float) -> tuple[int, int]:
    lo = math.floor(math.log10(min(values) / below))
    hi = math.ceil(math.log10(max(values) * above))
    return lo, max(hi, lo + 1)


def _bytes(v: int | None) -> str:
    if v is None:
        return "—"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if v >= scale:
            return f"{v / scale:.2f} {unit}"
    return f"{v} B"


def _legend(r: Roofline) -> tuple[tuple[str, str], ...]:
    seen = {p.matrix_units for p in r.points}
    return tuple(("l-" + _CSS[m], r.use_words(m)) for m in MatrixUse if m in seen)


def _roofs(r: Roofline, x: _Axis, y: _Axis) -> tuple[RoofLine, ...]:
    """The memory roof as a diagonal up to each compute roof's ridge, then that roof flat."""
    bw = r.memory_gbs or 0.0
    out = []
    for roof in r.roofs:
        x0 = max(10.0**x.lo, 10.0**y.lo * 1e3 / bw)  # TFLOP/s = GB/s x FLOP/byte / 1e3
        pts = [(x.at(x0), y.at(bw * x0 / 1e3)), (x.at(roof.ridge), y.at(roof.peak_tflops))]
        pts.append((x.at(10.0**x.hi), y.at(roof.peak_tflops)))
        label = f"{roof.precision} {roof.peak_tflops:g} TFLOP/s"
        out.append(
            RoofLine(
                " ".join(f"{_c(a)},{_c(b)}" for a, b in pts),
                label,
                _c(x.b + 6),
                _c(y.at(roof.peak_tflops) + 4),
            )
        )
    return tuple(out)


def _row(n: int, o: OpThroughput) -> Row:
    def rate(v: float | None) -> str:
        return "—" if v is None else fmt.tflops(v, unit=False)

    return Row(
        n=n,
        name=o.name,
        shapes=o.input_shapes or "",
        precision=o.precision or "—",
        calls=o.calls,
        gpu_ns=o.gpu_ns,
        memset_ns=o.memset_ns,
        flops="—" if o.flops is None else fmt.flops(o.flops),
        flops_v=o.flops,
        bytes=_bytes(o.bytes),
        bytes_v=o.bytes,
        intensity="—" if o.intensity is None else f"{o.intensity:.1f}",
        tflops=rate(o.tflops),
        mean=rate(o.mean_tflops),
        median=rate(o.median_tflops),
        share=fmt.pct(o.roofline_share),
        bound=o.bound.value if o.bound is not None else "—",
        matrix=o.matrix_units.value,
        css=_CSS[o.matrix_units],
    )


def _dot(n: int, o: OpThroughput, x: _Axis, y: _Axis) -> Dot:
    i, t = o.intensity or 1.0, o.tflops or 1.0
    cx, cy = x.at(i), y.at(t)
    title = (
        f"{n}. {fmt.tail(o.name, 80)} {fmt.tail(o.input_shapes or '', 80)}: {i:.1f} FLOP/byte, "
        f"{fmt.tflops(t)} achieved, {fmt.pct(o.roofline_share)} of the roofline, "
        f"{o.bound.value if o.bound else 'bound unknown'}; {fmt.plural(o.calls, 'call')}, {fmt.ns(o.gpu_ns)}"
    )
    return Dot(n, _c(cx), _c(cy), _c(cx + 7), _CSS[o.matrix_units], title)


def _heading(r: Roofline) -> str:
    if not r.points:
        return "heavy ops against the GPU's compute and memory roofs"
    roofs = ", ".join(f"{f.precision} {f.peak_tflops:g} TFLOP/s" for f in r.roofs)
    return f"{r.gpu_model}: {roofs}; memory {r.memory_gbs:g} GB/s"


def section(a: Analysis) -> RooflineView | None:
    """The chart's view-model; ``None`` when the run has no heavy op to place."""
    r = a.throughput.roofline if a.throughput is not None else None
    if r is None:
        return None
    rows = tuple(_row(n, o) for n, o in enumerate(r.points, 1))
    if not r.points:
        return RooflineView(
            _heading(r), r.note, r.source, r.matrix_unit, (), (), (), (), (), rows, "", (0, 0, 0, 0)
        )
    xs = [o.intensity or 1.0 for o in r.points] + [f.ridge for f in r.roofs]
    ys = [o.tflops or 1.0 for o in r.points] + [f.peak_tflops for f in r.roofs]
    x = _Axis(*_span(xs, 2.0, 2.0), LEFT, W - RIGHT)
    y = _Axis(*_span(ys, 2.0, 1.5), H - BOTTOM, TOP)
    dots = tuple(_dot(n, o, x, y) for n, o in enumerate(r.points, 1))
    aria = (
        f"Roofline of {len(dots)} GEMM, convolution and attention op groups on {r.gpu_model}: "
        "achieved TFLOP/s against FLOPs per byte, log scales; the table below lists every dot."
    )
    return RooflineView(
        heading_note=_heading(r),
        note=r.note,
        source=r.source,
        unit=r.matrix_unit,
        legend=_legend(r),
        x_ticks=x.ticks(horizontal=True),
        y_ticks=y.ticks(horizontal=False),
        roofs=_roofs(r, x, y),
        dots=dots,
        rows=rows,
        aria=aria,
        plot=(LEFT, TOP, W - RIGHT, H - BOTTOM),
    )
