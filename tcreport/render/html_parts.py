"""What the HTML report shows, prepared as small frozen rows: cards, charts as coordinates,
eligibility rows, iteration bars, and the anchors that tie findings to rows.

Keeping this out of the template makes the template declarative, and building every link with
the same :func:`anchor` as the id it points to means a link cannot miss its row. Tables are capped
at :data:`MAX_ROWS` so a trace with millions of launches still gives a report of a few hundred
kilobytes; rows a finding points to are kept past the cap.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import quote

from tcreport import fmt
from tcreport.analysis.figures import OpRow
from tcreport.analysis.result import Analysis, IterationRow
from tcreport.analysis.why_not import WhyNot
from tcreport.report import Report
from tcreport.rules.base import EvidenceKind, Finding

MAX_ROWS = 200  # longer tables are capped; the full data is in `tcreport ingest` Parquet
MAX_BARS = 15  # bars per ranking chart: more is unreadable
MAX_LINKS = 12  # evidence links shown per finding; the rest are counted
MAX_ITER_BARS = 300  # more iterations are drawn as buckets (mean of consecutive iterations)
CHART_W = 1000  # SVG user units; every chart scales to the page width
_T = TypeVar("_T")


def anchor(kind: str, key: str) -> str:
    """The one id scheme for rows: links and ids both come from here, so they always agree.

    Everything but ASCII letters, digits and ``_.-~`` is percent-encoded, so the id has no space and
    the ``#fragment`` that points at it needs no further encoding by the browser.
    """
    return f"{kind}-{quote(key, safe='')}"


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
    per_iteration: float | None  # the saving per aggregated iteration, when there are several


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
class Group:
    """One line of a grouped table: an op type, a scope or a dtype."""

    name: str
    ops: int
    calls: int
    gpu_ns: int
    share: float | None
    tc_ns: int  # on ops that use Tensor Cores
    miss_ns: int  # on eligible ops that do not
    css: str = ""


@dataclass(frozen=True)
class Segment:
    css: str
    x: float
    width: float
    title: str


@dataclass(frozen=True)
class EligRow:
    op: OpRow
    id: str
    op_href: str | None
    reasons: tuple[WhyNot, ...]  # distinct messages, first one shown in full
    timed: bool  # False: a wrapper op whose kernels are attributed to the op it calls


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


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole > 0 else None


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
    if len(key) <= width or kind == EvidenceKind.OP:
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
                ("#" + ids[e.kind][e.key]) if e.key in ids[e.kind] else None,
            )
            for e in f.evidence[:MAX_LINKS]
        )
        n = view.analysis.selection.info.aggregated or 0
        per: float | None = f.saving_per_iteration_ns
        if per is None and f.estimated_saving_ns and n > 1:
            per = f.estimated_saving_ns / n
        out.append(
            FindingView(f, links, max(0, len(f.evidence) - MAX_LINKS), per if n > 1 else None)
        )
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
    """(Tensor Core, missed) GPU time of an op: an op that used them in some calls has both."""
    ns, miss = o.gpu_ns or 0, o.missed_ns
    return (ns - miss, miss) if o.uses_tc else ((0, ns) if o.tc_eligible else (0, 0))


def group(ops: Iterable[OpRow], key: Callable[[OpRow], str | None], total: int) -> list[Group]:
    """Ops summed per key (type, scope or dtype), by GPU time descending, then name."""
    acc: dict[str, list[int]] = {}
    for o in ops:
        k = key(o) or "(unknown)"
        a = acc.setdefault(k, [0, 0, 0, 0, 0])
        tc, miss = tc_miss(o)
        a[0] += 1
        a[1] += o.calls or 0
        a[2] += o.gpu_ns or 0
        a[3] += tc
        a[4] += miss
    rows = [Group(k, v[0], v[1], v[2], _share(v[2], total), v[3], v[4]) for k, v in acc.items()]
    return sorted(rows, key=lambda g: (-g.gpu_ns, g.name))


def _scope_of(o: OpRow) -> str | None:
    """The layer an op ran in: its own ``scope`` when the analysis carries one, else the parent
    of a path-like name (DLProf and TF names are scope paths: ``/model/layer1/conv2d``)."""
    scope = getattr(o, "scope", None)  # OpRow carries no scope yet (issue 13 adds it)
    if isinstance(scope, str) and scope:
        return scope
    if "/" in o.name.strip("/"):
        return o.name.rstrip("/").rsplit("/", 1)[0]
    return None


def scopes(ops: Sequence[OpRow], total: int) -> list[Group]:
    """Time per scope, only where scopes cover most of the op time: a table that is 99 % "(unknown)"
    would say nothing (an nsys trace whose few NVTX-nested op names look like paths)."""
    rows = group(ops, _scope_of, total)
    known = sum(g.gpu_ns for g in rows if g.name != "(unknown)")
    if len(rows) < 2 or known * 2 < sum(g.gpu_ns for g in rows):
        return []
    return rows


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


def _outliers(rows: Sequence[IterationRow]) -> set[int]:
    """Iterations 1.5x slower or faster than the median (of the aggregated ones when there are
    4 or more, else of all); fewer than 4 iterations have no meaningful median."""
    base = sorted(r.duration_ns for r in rows if r.aggregated)
    if len(base) < 4:
        base = sorted(r.duration_ns for r in rows)
    if len(base) < 4:
        return set()
    median = base[len(base) // 2]
    return {
        r.iteration
        for r in rows
        if median and (r.duration_ns > 1.5 * median or r.duration_ns * 1.5 < median)
    }


def iter_chart(a: Analysis, linked: set[int]) -> IterChart | None:
    rows = a.iterations
    if len(rows) < 2:
        return None
    out = _outliers(rows)
    per = math.ceil(len(rows) / MAX_ITER_BARS)
    groups = [rows[i : i + per] for i in range(0, len(rows), per)]
    x0, x1, y0, y1 = 70.0, CHART_W - 6.0, 8.0, 186.0

    def mean(values: Iterable[int]) -> float:
        v = list(values)
        return sum(v) / len(v)

    stacks = []
    for g in groups:
        tc, other, mem = (
            mean(r.tc_ns for r in g),
            mean(r.non_tc_ns for r in g),
            mean(r.memory_ns for r in g),
        )
        dur = mean(r.duration_ns for r in g)
        stacks.append((g, tc, other, mem, max(0.0, dur - tc - other - mem), dur))
    top = _nice_top(max(max(s[5], s[1] + s[2] + s[3]) for s in stacks))
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
        flagged = any(r.iteration in out for r in g)
        bars.append(
            IterBar(
                x=round(x0 + i * slot + slot * 0.1, 2),
                width=round(max(slot * 0.8, 0.5), 2),
                segments=tuple(segs),
                title=f"{name}: {fmt.ns(dur)}; Tensor Core kernels {fmt.ns(tc)}, other kernels "
                f"{fmt.ns(other)}, memory {fmt.ns(mem)}, idle {fmt.ns(idle)}"
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
    m = a.selection.info.mean_ns
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
    out = _outliers(a.iterations)
    flagged = {str(i) for i in out} | keep
    rows = capped(a.iterations, lambda r: str(r.iteration), flagged)
    return [
        IterTableRow(
            row=r,
            id=anchor("iter", str(r.iteration)),
            idle_ns=max(0, r.duration_ns - r.tc_ns - r.non_tc_ns - r.memory_ns),
            flag=", ".join(
                f
                for f, on in (("not aggregated", not r.aggregated), ("outlier", r.iteration in out))
                if on
            ),
            outlier=r.iteration in out,
        )
        for r in rows
    ]


def _busy(a: Analysis) -> tuple[float | None, str]:
    """GPU busy share, from the best source the analysis has.

    The profiler's own figure first; then the kernel timeline (union of kernel intervals, so
    overlapping streams count once); else kernel + memory time over iteration time, which counts
    overlapping kernels twice and is therefore capped at 100 % and labelled as an estimate.
    """
    reported = a.meta.reported.gpu_utilization
    if reported is not None:
        return reported, "as the profiler reported"
    share = a.timeline.busy_share if a.timeline is not None else None
    if isinstance(share, float):
        return share, "kernels running, first to last kernel, per GPU"
    gpus = max(1, len(a.meta.gpus))
    rows = [r for r in a.iterations if r.aggregated]
    wall = sum(r.duration_ns for r in rows)
    if wall > 0:
        busy = sum(r.tc_ns + r.non_tc_ns + r.memory_ns for r in rows)
        return min(1.0, busy / (wall * gpus)), "estimate: kernel + memory time ÷ iteration time"
    return None, ""


def cards(a: Analysis) -> tuple[Card, ...]:
    it, tc, t = a.selection.info, a.tc, a.time
    share = tc.kernel_time_share
    cards = [
        Card(
            fmt.pct(share),
            "of GPU kernel time on Tensor Cores",
            f"{fmt.ns(t.tc_kernel_ns)} of {fmt.ns(t.gpu_kernel_ns)}",
            "" if share is None else ("good" if share >= 0.5 else "bad" if share < 0.2 else ""),
        )
    ]
    miss = tc.eligible_not_using_gpu_ns
    n_it = it.aggregated or 0
    per_iter = miss / n_it if miss is not None and n_it > 0 else miss
    cards.append(
        Card(
            "none"
            if miss == 0
            else fmt.ns(per_iter) + (" / iteration" if n_it > 1 and miss is not None else ""),
            "eligible GPU time not on Tensor Cores",
            (
                f"{fmt.pct(miss / t.gpu_kernel_ns)} of kernel time; "
                if miss is not None and t.gpu_kernel_ns
                else ""
            )
            + f"{fmt.count(tc.eligible_not_using_op_count)} of {fmt.count(tc.eligible_op_count)} eligible ops",
            "" if miss is None else ("bad" if miss > 0 else "good"),
        )
    )
    busy, how = _busy(a)
    if busy is not None:
        cards.append(Card(fmt.pct(busy), "GPU busy", how, "bad" if busy < 0.5 else ""))
    if it.mean_ns is not None:
        n = f"{fmt.count(it.aggregated)} iteration{'s' if it.aggregated != 1 else ''} aggregated"
        if it.std_ns is not None and (it.aggregated or 0) > 1:
            n = f"± {fmt.ns(it.std_ns)}; {n}"
        cards.append(Card(fmt.ns(it.mean_ns), "mean iteration time", n, ""))
    else:  # no iteration split: the aggregated wall time is the next best "how long"
        cards.append(Card(fmt.ns(t.wall_ns), "wall time aggregated", it.method or "", ""))
    cl = tc.classified_kernel_time_share
    cards.append(
        Card(
            fmt.pct(cl),
            "of kernel time with a known verdict",
            f"{fmt.count(t.unique_kernels)} distinct kernels, {fmt.count(t.kernel_launches)} launches",
            "" if cl is None else ("bad" if cl < 0.9 else ""),
        )
    )
    return tuple(cards)


def _why_by_name(a: Analysis) -> dict[str, tuple[WhyNot, ...]]:
    """Why-not rows per op name (they come per instance), distinct messages in first-seen order."""
    acc: dict[str, dict[str, WhyNot]] = {}
    for w in a.why_not:
        acc.setdefault(w.op_name, {}).setdefault(w.message, w)
    return {k: tuple(v.values()) for k, v in acc.items()}


def eligibility(a: Analysis, keep: set[str], op_ids: set[str]) -> list[EligRow]:
    why = _why_by_name(a)
    # Misses first, by time; wrapper ops with no GPU time of their own (aten::conv2d around
    # aten::cudnn_convolution) last, since their "no" says nothing about the kernels.
    rows = sorted(
        (o for o in a.ops if o.tc_eligible),
        key=lambda o: (not o.gpu_ns, o.uses_tc, -(o.gpu_ns or 0), o.name),
    )
    return [
        EligRow(
            op=o,
            id=anchor("elig", o.name),
            op_href=("#" + anchor("op", o.name)) if o.name in op_ids else None,
            reasons=why.get(o.name, ()),
            timed=bool(o.gpu_ns),
        )
        for o in capped(rows, lambda o: o.name, keep)
    ]


def run_header(view: Report) -> tuple[tuple[str, str], ...]:
    """Whitelisted run facts for the header: nothing from the trace's environment."""
    m, it = view.analysis.meta, view.analysis.selection.info
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
    gpus = "; ".join(
        f"{g.device_id}: {g.name or 'unknown'}"
        + (f" (sm {g.compute_capability})" if g.compute_capability else "")
        for g in m.gpus
    )
    rng = (
        f"{it.start}–{it.stop} of {fmt.count(it.total)}"
        if it.start is not None and it.stop is not None
        else f"all ({fmt.count(it.total)})"
    )
    if it.key_node:
        rng += f", key node {it.key_node}"
    elif it.method:
        rng += f", {it.method}"
    items = [
        ("Format", m.format.value),
        ("Profiler", profiler),
        ("Software", ", ".join(x for x in (m.framework, versions) if x)),
        (f"GPU{'s' if len(m.gpus) != 1 else ''}", gpus),
        ("Iterations", rng),
    ]
    return tuple((k, v) for k, v in items if v)


def precision(a: Analysis) -> tuple[list[Group], tuple[Segment, ...]]:
    total = sum(o.gpu_ns or 0 for o in a.ops)
    rows = group(a.ops, lambda o: o.dtype, total)
    palette = iter(("p0", "p1", "p2", "p3", "p4", "p5"))
    rows = [
        dataclasses.replace(
            g,
            css=""
            if not g.gpu_ns
            else "p-unk"
            if g.name == "(unknown)"
            else next(palette, "other"),
        )
        for g in rows
    ]
    if all(g.name == "(unknown)" for g in rows):
        return [], ()  # the input records no data types: a one-colour bar would say nothing
    return rows, stack([(g.css, g.gpu_ns, g.name) for g in rows])
