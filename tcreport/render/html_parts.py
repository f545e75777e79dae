"""What the HTML report shows, prepared as small frozen rows: cards, charts as coordinates,
eligibility rows, iteration bars, and the anchors that tie findings to rows.

Keeping this out of the template makes the template declarative, and building every link with
the same :func:`anchor` as the id it points to means a link cannot miss its row. Tables are capped
at :data:`MAX_ROWS` so a trace with millions of launches still gives a report of a few hundred
kilobytes; rows a finding points to are kept past the cap.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import quote

from tcreport import fmt
from tcreport.analysis.derived import IterationRow, mean_gpu_span
from tcreport.analysis.figures import OpRow
from tcreport.analysis.groups import OpGroup
from tcreport.analysis.result import Analysis
from tcreport.analysis.sections.headline import Tone
from tcreport.report import Report
from tcreport.rules.base import EvidenceKind, Finding

MAX_ROWS = 200  # longer tables are capped; the full data is in `tcreport ingest` Parquet
MAX_BARS = 15  # bars per ranking chart: more is unreadable
MAX_ID = 160  # characters of a row id after the kind (a longer one ends in a digest)
MAX_LINKS = 12  # evidence links shown per finding; the rest are counted
MAX_ITER_BARS = 300  # more iterations are drawn as buckets (mean of consecutive iterations)
CHART_W = 1000  # SVG user units; every chart scales to the page width
_T = TypeVar("_T")


def anchor(kind: str, key: str) -> str:
    """The one id scheme for rows: links and ids both come from here, so they always agree.

    Everything but ASCII letters, digits and ``_.-~`` is percent-encoded, so the id has no space and
    the ``#fragment`` that points at it needs no further encoding by the browser.
    """
    encoded = quote(key, safe="")
    if len(encoded) <= MAX_ID:
        return f"{kind}-{encoded}"
    # a kilobyte-long template name would be spelt twice per row (id and link): cut, and kept
    # unique by a digest of the whole name
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{kind}-{encoded[: MAX_ID - 17]}-{digest}"


@dataclass(frozen=True)
class Card:
    value: str
    label: str
    detail: str
    tone: str  # "good" | "bad" | "": the card's left border


@dataclass(frozen=True)
class Link:
    text: str  # the full key, for the tooltip
    short: str  # what the link shows
    href: str | None  # None: the row is not in this report (shown as plain text)


@dataclass(frozen=True)
class FindingView:
    finding: Finding
    links: tuple[Link, ...]
    more: int  # evidence entries not listed


@dataclass(frozen=True)
class Bar:
    label: str  # shortened for the chart
    full: str
    value: str
    share: str
    width: float  # SVG units, the whole bar
    parts: tuple[tuple[str, float, float], ...]  # (css class, x offset, width): TC / missed / other
    href: str | None


@dataclass(frozen=True)
class Segment:
    css: str
    x: float
    width: float
    title: str


@dataclass(frozen=True)
class IterBar:
    x: float
    width: float
    segments: tuple[tuple[str, float, float], ...]  # (css class, y, height) in SVG units
    title: str
    dim: bool  # outside the aggregated range
    outlier: bool
    href: str | None


@dataclass(frozen=True)
class Tick:
    pos: float
    text: str


@dataclass(frozen=True)
class IterChart:
    bars: tuple[IterBar, ...]
    yticks: tuple[Tick, ...]
    xticks: tuple[Tick, ...]
    mean_y: float | None
    per_bar: int  # iterations per bar (1 unless bucketed)
    outliers: tuple[int, ...]
    warmup: tuple[int, ...]  # iterations not aggregated


@dataclass(frozen=True)
class IterTableRow:
    row: IterationRow
    id: str
    idle_ns: int
    flag: str
    outlier: bool
    idle_estimated: bool = False  # "≈": duration − kernel − memory time (no per-launch timestamps)


def capped(rows: Sequence[_T], key: Callable[[_T], str], keep: set[str]) -> list[_T]:
    """The first MAX_ROWS rows plus any later row a finding links to, in the original order."""
    head = list(rows[:MAX_ROWS])
    return head + [r for r in rows[MAX_ROWS:] if key(r) in keep]


def evidence_targets(view: Report) -> dict[EvidenceKind, set[str]]:
    """The evidence keys the findings will show as links: those rows must be in the report."""
    out: dict[EvidenceKind, set[str]] = {k: set() for k in EvidenceKind}
    for f in view.findings:
        for e in f.evidence[:MAX_LINKS]:
            out[e.kind].add(e.key)
    return out


def _short(kind: EvidenceKind, key: str, width: int = 90) -> str:
    """A link text: op names keep their end (the op itself, after the scope path); kernel names
    keep both ends (``void cutlass::Kernel2<cutlass_80_wmma…_tn_align8::Params)``)."""
    if kind == EvidenceKind.ITERATION:
        return f"iteration {key}"
    if len(key) <= width or kind in (EvidenceKind.OP, EvidenceKind.LAYER):
        return fmt.tail(key, width)
    head = width * 3 // 5
    return key[:head] + "…" + key[-(width - head - 1) :]


def findings(view: Report, ids: dict[EvidenceKind, dict[str, str]]) -> tuple[FindingView, ...]:
    """Findings in the rules' order (largest estimated saving first) with resolvable links."""
    out = []
    for f in view.findings:
        links = tuple(
            Link(
                e.key,
                _short(e.kind, e.key),
                ("#" + ids[e.kind][e.key]) if e.key in ids.get(e.kind, {}) else None,
            )
            for e in f.evidence[:MAX_LINKS]
        )
        out.append(FindingView(f, links, max(0, len(f.evidence) - MAX_LINKS)))
    return tuple(out)


def bars(
    items: Iterable[tuple[str, int, float | None, int, int, str | None]], width: float = 460.0
) -> tuple[Bar, ...]:
    """Ranking bars from (label, ns, share, TC ns, missed ns, href), scaled to the longest.

    Each bar is split into Tensor Core time (green), eligible time not on Tensor Cores (red) and
    the rest (grey), so the chart answers "where is the time, and could it be on Tensor Cores".
    """
    rows = [i for i in items if i[1] > 0][:MAX_BARS]
    top = max((r[1] for r in rows), default=0)
    bars = []
    for label, ns, share, tc, miss, href in rows:
        w = width * ns / top if top else 0.0
        parts, x = [], 0.0
        for css, part in (("tc", tc), ("miss", miss), ("other", ns - tc - miss)):
            pw = w * part / ns if ns else 0.0
            if pw > 0:
                parts.append((css, round(x, 2), round(pw, 2)))
                x += pw
        bars.append(
            Bar(
                fmt.tail(label, 58),
                label,
                fmt.ns(ns),
                fmt.pct(share),
                round(w, 2),
                tuple(parts),
                href,
            )
        )
    return tuple(bars)


def tc_miss(o: OpRow) -> tuple[int, int]:
    """(Tensor Core, missed) GPU time of an op, as the analysis defines them."""
    return o.tc_ns, o.missed_ns


def stack(parts: Sequence[tuple[str, int, str]]) -> tuple[Segment, ...]:
    """A 100 %-stacked bar from (css, ns, label) parts, in SVG units of CHART_W."""
    total = sum(p[1] for p in parts)
    if total <= 0:
        return ()
    segs, x = [], 0.0
    for css, ns, label in parts:
        if ns <= 0:
            continue
        w = CHART_W * ns / total
        segs.append(
            Segment(css, round(x, 2), round(w, 2), f"{label}: {fmt.ns(ns)} ({fmt.pct(ns / total)})")
        )
        x += w
    return tuple(segs)


def _nice_top(value: float) -> float:
    """Round an axis maximum up to 1, 2, 4 or 5 times a power of ten (halves stay round)."""
    if value <= 0:
        return 1.0
    mag = 10 ** math.floor(math.log10(value))
    return float(next(m * mag for m in (1, 2, 4, 5, 10) if m * mag >= value))


def _idle_note(rows: Sequence[IterationRow], gpus: int) -> str:
    """Where a bar's idle comes from: the step breakdown (with its GPU span and the launch/host
    split), or the estimate for inputs without per-launch timestamps."""
    if any(r.idle_estimated for r in rows):
        return " (estimate: duration − kernel − memory time)"
    span, launch, host = mean_gpu_span(rows, gpus)
    return (
        f" ({fmt.ns(launch)} launch-bound, {fmt.ns(host)} host-bound) in a GPU span of "
        f"{fmt.ns(span)}, each instant counted once"
    )


def iter_chart(a: Analysis, linked: set[int]) -> IterChart | None:
    rows = a.iterations.rows
    if len(rows) < 2:
        return None
    out = {r.iteration for r in rows if r.outlier}
    per = math.ceil(len(rows) / MAX_ITER_BARS)
    gpus = max(r.per_gpu_divisor for r in rows)  # several GPUs: the stacks are per GPU (mean)
    groups = [rows[i : i + per] for i in range(0, len(rows), per)]
    x0, x1, y0, y1 = 70.0, CHART_W - 6.0, 8.0, 186.0

    def mean(values: Iterable[int]) -> float:
        v = list(values)
        return sum(v) / len(v)

    stacks = []
    for g in groups:
        parts = [r.stacked for r in g]  # analysis.derived: the step breakdown where measured
        tc, other, mem, idle = (
            mean(p.tc_ns for p in parts) / gpus,
            mean(p.other_ns for p in parts) / gpus,
            mean(p.memory_ns for p in parts) / gpus,
            mean(p.idle_ns for p in parts) / gpus,
        )
        stacks.append((g, tc, other, mem, idle, mean(r.duration_ns for r in g)))
    # the axis holds the longest bar, idle included (a GPU span can outlast its iteration)
    top = _nice_top(max(max(s[5], s[1] + s[2] + s[3] + s[4]) for s in stacks))
    scale = (y1 - y0) / top
    slot = (x1 - x0) / len(groups)
    bars = []
    for i, (g, tc, other, mem, idle, dur) in enumerate(stacks):
        y, segs = y1, []
        for css, v in (("tc", tc), ("other", other), ("mem", mem), ("idle", idle)):
            h = v * scale
            y -= h
            segs.append((css, round(y, 2), round(h, 2)))
        first, last = g[0].iteration, g[-1].iteration
        name = f"iteration {first}" if per == 1 else f"iterations {first}–{last} (mean)"
        # the duration is the wall-clock iteration; the parts below it are per GPU
        per_gpu = f"mean of {gpus} GPUs: " if gpus > 1 else ""
        flagged = any(r.iteration in out for r in g)
        bars.append(
            IterBar(
                x=round(x0 + i * slot + slot * 0.1, 2),
                width=round(max(slot * 0.8, 0.5), 2),
                segments=tuple(segs),
                title=f"{name}: {fmt.ns(dur)} wall-clock; {per_gpu}{a.verdict.words.unit_one} kernels "
                f"{fmt.ns(tc)}, other kernels "
                f"{fmt.ns(other)}, memory {fmt.ns(mem)}, idle {fmt.ns(idle)}"
                + _idle_note(g, gpus)
                + ("" if all(r.aggregated for r in g) else "; not aggregated")
                + ("; outlier" if flagged else ""),
                dim=not all(r.aggregated for r in g),
                outlier=flagged,
                href="#" + anchor("iter", str(first)) if first in linked else None,
            )
        )
    step = max(1, math.ceil(len(groups) / 10))
    xticks = tuple(
        Tick(round(x0 + (i + 0.5) * slot, 2), str(groups[i][0].iteration))
        for i in range(0, len(groups), step)
    )
    yticks = tuple(Tick(round(y1 - f * (y1 - y0), 2), fmt.ns(top * f)) for f in (0, 0.5, 1))
    m = a.iterations.info.mean_ns
    return IterChart(
        bars=tuple(bars),
        yticks=yticks,
        xticks=xticks,
        mean_y=round(y1 - m * scale, 2) if m is not None and m <= top else None,
        per_bar=per,
        outliers=tuple(sorted(out)),
        warmup=tuple(r.iteration for r in rows if not r.aggregated),
    )


def iter_rows(a: Analysis, keep: set[str]) -> list[IterTableRow]:
    flagged = {str(r.iteration) for r in a.iterations.rows if r.outlier} | keep
    rows = capped(a.iterations.rows, lambda r: str(r.iteration), flagged)
    return [
        IterTableRow(
            row=r,
            id=anchor("iter", str(r.iteration)),
            idle_ns=r.idle_ns,
            idle_estimated=r.idle_estimated,
            flag=", ".join(
                f for f, on in (("not aggregated", not r.aggregated), ("outlier", r.outlier)) if on
            ),
            outlier=r.outlier,
        )
        for r in rows
    ]


#: A card's left border per tone: only good and bad news are coloured.
CARD_CSS = {Tone.GOOD: "good", Tone.BAD: "bad", Tone.NEUTRAL: "", Tone.UNKNOWN: ""}


def cards(a: Analysis) -> tuple[Card, ...]:
    """The headline cards: each section's one-line verdict, in reading order (the op-level share
    only where the input has no kernel table)."""
    v = a.verdict
    heads = (
        v.share_card,
        v.op_level_card,
        v.miss_card,
        a.time.busy_card,
        a.iterations.card,
        v.classified_card,
    )
    return tuple(Card(h.value, h.label, h.detail, CARD_CSS[h.tone]) for h in heads if h)


@dataclass(frozen=True)
class Swatch:
    """A precision row with its colour slot in the stacked bar and legend ("" = not drawn)."""

    css: str
    group: OpGroup


def precision(a: Analysis) -> tuple[tuple[Swatch, ...], tuple[Segment, ...]]:
    """The precision section's rows with a colour each: up to six data types, then "other";
    unknown types grey; a type with no GPU time is listed but not drawn."""
    palette = iter(("p0", "p1", "p2", "p3", "p4", "p5"))
    rows = tuple(
        Swatch(
            "" if not g.gpu_ns else "p-unk" if g.name == "(unknown)" else next(palette, "other"),
            g,
        )
        for g in a.precision.groups
    )
    return rows, stack([(r.css, r.group.gpu_ns, r.group.name) for r in rows])
