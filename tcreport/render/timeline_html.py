"""The "Step time" section of the HTML report: stacked step bars, communication, throughput and
the timeline of one iteration, as precomputed coordinates for ``templates/_timeline.html.j2``.

Every figure comes from the analysis (steps, overlap, throughput, iteration_timeline); this module
only scales it to SVG user units and formats it, so the report stays one self-contained file with
no client-side layout: the one script only zooms, pans and shows the hover card.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from tcreport import fmt
from tcreport.analysis.activity import IDLE, Cat
from tcreport.analysis.iteration_timeline import HOST
from tcreport.analysis.result import Analysis
from tcreport.analysis.sections.verdict import UnitWords
from tcreport.analysis.timeline import LAUNCH_GAP_NS

STEP_W = 1000  # user units of the step chart
STEP_LABEL = 110
MAX_STEP_ROWS = 48
TL_W = 1200  # user units of the timeline's time axis
LANE_H = 18
LANE_GAP = 4
MAX_NAME = 240  # characters of a name kept for the hover card
#: Characters of all the hover-card names together: up to MAX_BLOCKS distinct names (C++ template
#: kernel names run to kilobytes) must not take the page past its size bound; with many names each
#: keeps fewer characters, never fewer than MIN_NAME.
NAMES_BUDGET = 160_000
MIN_NAME = 40
TOP_OPS = 15


def step_parts(w: UnitWords) -> tuple[tuple[str, str], ...]:
    """(css suffix, legend) of the step parts, in StepRow.parts order."""
    return (
        ("tc", f"{w.unit_one} compute"),
        ("other", "other compute"),
        ("unk", "compute, verdict unknown"),
        ("comm", "communication (not hidden)"),
        ("mem", "memory copies/sets"),
        ("launch", f"idle: launch-bound (gaps < {fmt.ns(LAUNCH_GAP_NS, 0)})"),
        ("host", "idle: host-bound"),
    )


_BLOCK_CSS = {Cat.TC: "tc", Cat.OTHER: "other", Cat.UNKNOWN: "unk", Cat.COMM: "comm",
              Cat.MEMORY: "mem", IDLE: "idle", HOST: "hostr"}  # fmt: skip


@dataclass(frozen=True)
class StepBar:
    label: str
    y: int
    segments: tuple[tuple[str, float, float, str], ...]  # css, x, width, title
    total: str
    causes: str


@dataclass(frozen=True)
class LaneView:
    label: str
    kind: str
    y: int


@dataclass(frozen=True)
class BlockView:
    css: str
    x: str
    w: str
    y: int
    k: int  # name index
    r: int  # rule / cause-kind index
    v: str  # verdict letter: y / n / u, or "" for gaps and host ranges
    d: int  # duration ns
    s: int  # start ns from the window start
    m: int  # merged events
    work: int  # summed duration of the merged events


@dataclass(frozen=True)
class TimelineView:
    title: str
    note: str
    height: int
    lanes: tuple[LaneView, ...]
    blocks: tuple[BlockView, ...]
    span_ns: int
    names_json: str  # plain JSON for an attribute: the template's autoescape escapes it
    other_iterations: bool  # whether --timeline-iter has another iteration to show


@dataclass(frozen=True)
class ThroughputRow:
    name: str
    shapes: str
    precision: str
    calls: int
    gpu_ns: int
    flops: str
    tflops: str
    peak: str
    formula: str
    above_peak: str | None = None  # the analysis' words on a % of peak above 100 %


@dataclass(frozen=True)
class StepSection:
    bars: tuple[StepBar, ...]
    bars_height: int
    bars_note: str
    comm: str | None
    throughput: tuple[ThroughputRow, ...]
    throughput_note: str | None
    timeline: TimelineView | None
    #: (op names, reason) per distinct reason the table's rows above 100 % of peak give
    above_peak: tuple[tuple[str, str], ...] = ()


def _step_bars(a: Analysis) -> tuple[tuple[StepBar, ...], int, str]:
    rows = a.steps.rows[:MAX_STEP_ROWS]
    if not rows:
        return (), 0, ""
    top = max(r.span_ns for r in rows) or 1
    scale = (STEP_W - STEP_LABEL - 90) / top
    bars = []
    for i, r in enumerate(rows):
        x, segs = float(STEP_LABEL), []
        for (css, legend), v in zip(step_parts(a.verdict.words), r.parts, strict=True):
            w = v * scale
            if w > 0:
                segs.append(
                    (
                        css,
                        round(x, 2),
                        round(w, 2),
                        f"{legend}: {fmt.ns(v)} ({fmt.pct(v / r.span_ns if r.span_ns else None)})",
                    )
                )
            x += w
        named = [
            f"{c.kind}{': ' + fmt.tail(c.name, 50) if c.name else ''} {fmt.ns(c.idle_ns)}"
            for c in r.host_causes
        ]
        if r.between is not None:  # outside the bar, often the longest wait (GP001's)
            c = r.between
            named.append(
                f"then, until the next step's first GPU activity, {c.kind}"
                f"{': ' + fmt.tail(c.name, 50) if c.name else ''} {fmt.ns(c.idle_ns)}"
            )
        causes = "; ".join(named)
        gpu = "?" if r.device_id is None else str(r.device_id)
        bars.append(
            StepBar(
                f"iter {r.iteration} · GPU {gpu}",
                4 + i * 22,
                tuple(segs),
                fmt.ns(r.span_ns),
                causes,
            )
        )
    note = (
        f"{len(rows)} of {len(a.steps.rows)} (iteration, GPU) rows"
        if len(a.steps.rows) > len(rows)
        else ""
    )
    return tuple(bars), 8 + len(rows) * 22, note


def _comm(a: Analysis) -> str | None:
    cm = a.communication.overlap
    if cm is None:
        return None
    on = cm.on_compute_stream
    where = (
        "on the compute stream ("
        + ", ".join(f"GPU {s.device_id} stream {s.stream_id}" for s in on)
        + ")"
        if on
        else "on their own streams"
    )
    return (
        f"Collectives ({', '.join(cm.names[:3])}) ran {fmt.ns(cm.collective_ns)} {cm.where}, "
        f"{fmt.pct(cm.overlap_share)} of it hidden under compute, {where}; "
        f"{fmt.ns(cm.exposed_ns)} exposed."
    )


def _throughput(a: Analysis) -> tuple[tuple[ThroughputRow, ...], str | None]:
    t = a.throughput
    if t is None:
        return (), None
    rows = tuple(
        ThroughputRow(
            name=o.name, shapes=o.input_shapes or "", precision=o.precision or "—", calls=o.calls,
            gpu_ns=o.gpu_ns, flops="—" if o.flops is None else fmt.flops(o.flops),
            tflops="—" if o.tflops is None else fmt.tflops(o.tflops, unit=False),
            peak="—" if o.peak_share is None else fmt.pct(o.peak_share),
            formula=o.formula, above_peak=o.above_peak,
        )
        for o in t.ops[:TOP_OPS]
        if o.kind != "other"
    )  # fmt: skip
    return rows, t.sentence


def _timeline(a: Analysis) -> TimelineView | None:
    tl = a.steps.timeline
    if tl is None:
        return None
    ys = [i * (LANE_H + LANE_GAP) for i in range(len(tl.lanes))]
    y = len(tl.lanes) * (LANE_H + LANE_GAP)
    scale = TL_W / tl.span_ns
    blocks = tuple(
        BlockView(
            css=_BLOCK_CSS.get(b.cat, "other") + ("" if b.merged == 1 else " merged"),
            x=f"{b.start_ns * scale:.2f}",
            w=f"{max(b.dur_ns * scale, 0.3):.2f}",
            y=ys[b.lane],
            k=b.name, r=b.rule, v={"yes": "y", "no": "n", "unknown": "u"}.get(b.verdict, ""),
            d=b.dur_ns, s=b.start_ns, m=b.merged, work=b.work_ns,
        )
        for b in tl.blocks
    )  # fmt: skip
    which = {"median": "the median aggregated iteration", "requested": "the requested iteration",
             "whole run": "the whole run (no iteration markers)"}[tl.chosen]  # fmt: skip
    # a run without iteration markers may still carry its one whole-run iteration row: it is not
    # a "median" to the reader, and there is no other iteration to ask --timeline-iter for
    whole = a.steps.timeline_whole_run
    title = (
        which.capitalize() if tl.chosen == "whole run" else
        "The whole run (no iteration markers)" if whole else
        f"Iteration {tl.iteration}, {which}"
    ) + f": {fmt.ns(tl.span_ns)} from the first GPU activity to the last"  # fmt: skip
    merged = (
        f"{fmt.count(tl.merged_events)} of {fmt.count(tl.events)} GPU events shorter than "
        f"{fmt.ns(tl.column_ns)} are merged into per-pixel blocks (hover names the longest)"
        if tl.merged_events
        else f"all {fmt.count(tl.events)} GPU events drawn"
    )
    dropped = f"; {tl.dropped_lanes} more streams/threads not drawn" if tl.dropped_lanes else ""
    names = hover_names(tl.names)
    return TimelineView(
        title=title,
        note=f"{merged}{dropped}. Launch-bound gaps under {fmt.ns(LAUNCH_GAP_NS, 0)} are not marked.",
        height=max(y, LANE_H),
        lanes=tuple(
            LaneView(lane.label, lane.kind, yy) for lane, yy in zip(tl.lanes, ys, strict=True)
        ),
        blocks=blocks,
        span_ns=tl.span_ns,
        names_json=json.dumps(names, ensure_ascii=False, separators=(",", ":")),
        other_iterations=not whole and len(a.iterations.rows) > 1,
    )


def hover_names(names: Sequence[str]) -> list[str]:
    """The timeline's names as its hover card shows them: each cut to MAX_NAME characters, fewer
    when there are so many that together they would pass NAMES_BUDGET."""
    keep = max(MIN_NAME, min(MAX_NAME, NAMES_BUDGET // max(1, len(names))))
    return [n if len(n) <= keep else n[: keep - 1] + "…" for n in names]


def section(a: Analysis) -> StepSection | None:
    """The section's view-model; ``None`` when the run has nothing to show here."""
    bars, height, note = _step_bars(a)
    rows, tnote = _throughput(a)
    names: dict[str, dict[str, None]] = {}
    for r in rows:  # at most TOP_OPS
        if r.above_peak:
            names.setdefault(r.above_peak, {})[r.name] = None
    above = tuple((", ".join(n), why) for why, n in names.items())
    view = StepSection(bars, height, note, _comm(a), rows, tnote, _timeline(a), above)
    if not (bars or view.comm or rows or tnote or view.timeline):
        return None
    return view
