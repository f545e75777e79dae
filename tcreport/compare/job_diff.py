"""``diff`` and ``check`` of distributed jobs: the job's figures base -> head, rank by rank, and the
rank shown in full diffed as any two runs are.

A job's headline is its own (:mod:`tcreport.analysis.job`): the job's step time (the slowest rank's,
per compared iteration), its Tensor Core share over every rank's kernel time, GPU kernel time per
iteration summed over the ranks, and the ranks' median collective wait. The noise rule is the
diff's (:mod:`tcreport.compare.diff`): a change smaller than twice the pooled per-iteration spread
of the job's step time (1 % of the base value where a side has fewer than two iterations, one
point for the share) is noise. Ranks are matched by number; a rank present on one side only is
named, never compared. Two jobs of different world sizes do not measure the same thing and are
refused unless forced, like two GPUs.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from tcreport import fmt
from tcreport.analysis.job_cells import cells as cells_of
from tcreport.analysis.job_ranks import RankStep, weighted_tc_share
from tcreport.compare import diff as compare
from tcreport.compare import gates
from tcreport.compare.model import (
    NOISE_FLOOR,
    NOISE_SIGMAS,
    Better,
    Change,
    Diff,
    Figure,
    NotComparableError,
    Unit,
)
from tcreport.compare.noise import judge, pooled
from tcreport.errors import UsageError
from tcreport.job_report import JobReport


@dataclass(frozen=True)
class RankChange:
    rank: int
    base_step_ns: float | None
    head_step_ns: float | None
    base_own_ns: float | None  # time outside collectives
    head_own_ns: float | None
    base_wait_ns: float | None
    head_wait_ns: float | None
    base_tc: float | None
    head_tc: float | None
    verdict: Change  # of the step time


@dataclass(frozen=True)
class JobDiff:
    base_path: str
    head_path: str
    base_presence: str
    head_presence: str
    figures: tuple[Figure, ...]
    ranks: tuple[RankChange, ...]
    detail: Diff  # the rank shown in full on each side, same rank number
    detail_rank: int
    forced: bool
    not_comparable: tuple[str, ...]
    noise_rule: str
    notes: tuple[str, ...]

    def figure(self, key: str) -> Figure:
        return next(f for f in self.figures if f.key == key)


@dataclass(frozen=True)
class _Side:
    """One job's figures over the ranks compared (those timed on both sides)."""

    step_ns: float | None
    kernel_ns: float | None  # per compared iteration, summed over the ranks
    tc_share: float | None
    wait_ns: float | None
    std: float | None  # of the job's step time per iteration


def _common(base: JobReport, head: JobReport) -> frozenset[int]:
    """The ranks a job diff compares: present and timed on both sides. A rank with no timed GPU
    step on one side (a damaged or CPU-only trace) is in neither side's figures, so one side's
    sum over three ranks is never set against the other's over two."""
    return frozenset(base.section.timed) & frozenset(head.section.timed)


def _side(jr: JobReport, ranks: frozenset[int]) -> _Side:
    """The job's headline figures over ``ranks``: the section's own where they are the ranks its
    figures are of, else its iterations rebuilt from its cells of those ranks alone (the job
    analysis' own rules, :func:`tcreport.analysis.job_cells.cells`)."""
    sec = jr.section
    rows_of = {r.rank: r for r in sec.ranks if r.rank in ranks}
    if frozenset(sec.timed) == ranks:
        iterations, share = sec.iterations, sec.verdict.tc_share
    else:
        keyed: dict[int, dict[str, RankStep]] = {r: {} for r in sorted(ranks)}
        for c in sec.cells:  # one per rank and compared iteration: small
            if c.rank in keyed:
                keyed[c.rank][c.label] = c.step
        order = [r.label for r in sec.iterations] if ranks else []
        iterations = tuple(cells_of(order, keyed)[1])
        share = weighted_tc_share(list(rows_of.values()))[0]
    steps = [float(r.step_ns) for r in iterations]
    n = len(iterations) or None
    kernel = [r.gpu_kernel_ns for r in rows_of.values() if r.gpu_kernel_ns is not None]
    waits = [float(r.median_wait_ns) for r in iterations]
    return _Side(
        step_ns=sum(steps) / len(steps) if steps else None,
        kernel_ns=sum(kernel) / n if kernel and n else None,
        tc_share=share,
        wait_ns=sum(waits) / len(waits) if waits and len(ranks) > 1 else None,
        std=statistics.stdev(steps) if len(steps) >= 2 else None,
    )


def _figures(b: _Side, h: _Side) -> tuple[Figure, ...]:
    std = pooled(b.std, h.std)

    def ns_thr(x: float | None) -> float | None:
        if x is None:
            return None
        return NOISE_SIGMAS * std if std is not None else NOISE_FLOOR * abs(x)

    specs: list[tuple[str, str, Unit, Better, float | None, float | None, float | None]] = [
        ("step_ns", "Job step time (slowest rank)", Unit.NS, Better.LOWER, b.step_ns, h.step_ns, ns_thr(b.step_ns)),
        ("gpu_kernel_ns", "GPU kernel time, all ranks", Unit.NS, Better.LOWER, b.kernel_ns, h.kernel_ns, ns_thr(b.kernel_ns)),
        ("tc_share", "Tensor Core share (job)", Unit.SHARE, Better.HIGHER, b.tc_share, h.tc_share, NOISE_FLOOR),
        ("wait_ns", "Collective wait (median rank)", Unit.NS, Better.LOWER, b.wait_ns, h.wait_ns, ns_thr(b.wait_ns)),
    ]  # fmt: skip
    out = []
    for key, label, unit, better, bv, hv, thr in specs:
        delta, rel, verdict = judge(bv, hv, thr, better)
        out.append(Figure(key, label, unit, better, bv, hv, delta, rel, thr, verdict))
    return tuple(out)


def _ranks(base: JobReport, head: JobReport, std: float | None) -> tuple[RankChange, ...]:
    b = {r.rank: r for r in base.section.ranks}
    h = {r.rank: r for r in head.section.ranks}
    out = []
    for rank in sorted(set(b) | set(h)):  # one per rank: small
        rb, rh = b.get(rank), h.get(rank)
        thr = (
            NOISE_SIGMAS * std
            if std is not None
            else (NOISE_FLOOR * rb.step_ns if rb and rb.step_ns else None)
        )
        _, _, verdict = judge(
            rb.step_ns if rb else None, rh.step_ns if rh else None, thr, Better.LOWER
        )
        if rb and rh and verdict in (Change.NEW, Change.GONE):
            verdict = Change.UNKNOWN  # present on both sides, untimed on one: not new nor gone
        out.append(
            RankChange(
                rank,
                rb.step_ns if rb else None,
                rh.step_ns if rh else None,
                rb.own_ns if rb else None,
                rh.own_ns if rh else None,
                rb.wait_ns if rb else None,
                rh.wait_ns if rh else None,
                rb.tc_share if rb else None,
                rh.tc_share if rh else None,
                verdict,
            )
        )
    return tuple(out)


def diff(base: JobReport, head: JobReport, *, force: bool = False) -> JobDiff:
    """Compare two jobs; raises :class:`NotComparableError` unless ``force`` (world sizes, or the
    detail ranks' GPU and framework as :func:`tcreport.compare.diff.diff` judges them)."""
    bi, hi = base.section.identity, head.section.identity
    reasons = []
    if bi.world_size != hi.world_size:
        reasons.append(f"world size {bi.world_size} vs {hi.world_size}")
    if reasons and not force:
        raise NotComparableError(
            "not comparable: " + "; ".join(reasons) + " (pass --force to compare anyway)"
        )
    common = _common(base, head)
    untimed = _untimed_detail(base, head)
    if untimed:
        reasons.append(untimed)
        if not force:
            raise NotComparableError(
                "not comparable: " + "; ".join(reasons) + " (pass --force to compare anyway)"
            )
    detail = compare.diff(base.detail, head.detail, force=force)
    notes = _rank_notes(base, head, common)
    b, h = _side(base, common), _side(head, common)
    std = pooled(b.std, h.std)
    return JobDiff(
        base_path=base.source_path,
        head_path=head.source_path,
        base_presence=bi.presence,
        head_presence=hi.presence,
        figures=_figures(b, h),
        ranks=_ranks(base, head, std),
        detail=detail,
        detail_rank=head.detail_rank,
        forced=bool(reasons) or detail.forced,
        not_comparable=(*reasons, *detail.not_comparable),
        noise_rule=(
            f"noise: |Δ| < {NOISE_SIGMAS:g} × the pooled per-iteration std of the job's step time; "
            f"{NOISE_FLOOR:.0%} of the base value (one point for the share) where a side has fewer "
            "than two iterations"
        ),
        notes=tuple(notes),
    )


def _untimed_detail(base: JobReport, head: JobReport) -> str | None:
    """Why the ranks shown in full cannot be diffed: one has no timed GPU step on its side (its
    detail reads as a CPU-only run), while another rank is timed on both (:func:`rank_in_full`)."""
    if not _common(base, head):
        return None
    for side, jr in (("base", base), ("head", head)):
        if jr.detail_rank in jr.section.untimed:
            return (
                f"rank {jr.detail_rank}, shown in full, has no timed GPU step in {side} (that "
                f"trace's notes say why); show rank {rank_in_full(base, head)} in full on both "
                "sides (api.analyze_job(..., rank=N))"
            )
    return None


def rank_in_full(base: JobReport, head: JobReport) -> int | None:
    """The rank to diff in full: the head's (its straggler, else its first timed rank) where the
    base timed it too, else the base's straggler, else the first rank timed on both sides; None
    when no rank is."""
    common = _common(base, head)
    s = base.section.straggler
    for r in (head.detail_rank, s.rank if s is not None else None, *sorted(common)):
        if r in common:
            return r
    return None


def _rank_notes(base: JobReport, head: JobReport, common: frozenset[int]) -> list[str]:
    """What the job figures leave out: ranks present on one side only, and ranks present on both
    but with no timed GPU step on one (named with the side), so the figures are like for like."""
    bi, hi = base.section.identity, head.section.identity
    notes = []
    only_b, only_h = sorted(set(bi.ranks) - set(hi.ranks)), sorted(set(hi.ranks) - set(bi.ranks))
    if only_b or only_h:
        notes.append(
            "ranks present on one side only: "
            + "; ".join(
                f"{side} {', '.join(map(str, rs))}"
                for side, rs in (("base", only_b), ("head", only_h))
                if rs
            )
        )
    untimed = []
    for side, jr in (("base", base), ("head", head)):
        gone = jr.section.untimed
        if gone:
            untimed.append(
                f"rank{'s' if len(gone) > 1 else ''} {', '.join(map(str, gone))} in {side}"
            )
    if untimed:
        notes.append(
            "no timed GPU step (a damaged or CPU-only trace; its own notes say why): "
            + "; ".join(untimed)
        )
    if untimed or only_b or only_h:
        kept = ", ".join(map(str, sorted(common))) or "none"
        notes.append(
            f"the job figures compare the ranks timed on both sides only (ranks {kept}), "
            "like for like"
        )
    hs = head.section.straggler
    if hs is not None and hs.rank != head.detail_rank and hs.rank not in common:
        notes.append(
            f"head's straggler, rank {hs.rank}, is not timed on both sides: rank "
            f"{head.detail_rank} is diffed in full"
        )
    elif base.detail_rank != head.detail_rank:
        notes.append(
            f"the rank diffed in full is rank {head.detail_rank} on both sides (head's {head.detail_why})"
        )
    return notes


def check(
    jr: JobReport, g: gates.Gates, baseline: JobReport | None = None, *, force: bool = False
) -> gates.CheckResult:
    """``tcreport check`` of a job: the gates against the job's own figures."""
    v = jr.section.verdict
    results: list[gates.GateResult] = []
    if g.min_tc_share is not None:
        results.append(_min_share(v.tc_share, g.min_tc_share, jr))
    if g.max_eligible_not_tc_share is not None:
        share = v.eligible_not_tc_share
        ok = share is not None and share <= g.max_eligible_not_tc_share
        shown, bound = gates.miss_apart(share or 0.0, g.max_eligible_not_tc_share)
        msg = (
            "eligible-not-TC share unknown: no rank has op or kernel times"
            if share is None
            else f"eligible GPU time not on TC {shown} of all ranks' kernel time "
            f"{'<=' if ok else '>'} maximum {bound}"
        )
        results.append(gates.GateResult("max-eligible-not-tc-share", ok, msg))
    forced = False
    if g.max_regression is not None:
        if baseline is None:
            raise UsageError("--max-regression needs --baseline")
        d = diff(baseline, jr, force=force)
        forced = d.forced
        results += _regression(d, g.max_regression)
    return gates.CheckResult(tuple(results), forced)


def _min_share(share: float | None, limit: float, jr: JobReport) -> gates.GateResult:
    if share is None:
        return gates.GateResult("min-tc-share", False, "TC share unknown: no rank has kernel times")
    ok = share >= limit
    sp = jr.section.verdict.spread
    low = f"; lowest rank {sp.low_rank} at {fmt.pct(sp.low)}" if sp is not None else ""
    shown, bound = gates.apart(share, limit)  # 59.97 % is not "60.0 % < minimum 60.0 %"
    return gates.GateResult(
        "min-tc-share", ok, f"job TC share {shown} {'>=' if ok else '<'} minimum {bound}{low}"
    )


def _regression(d: JobDiff, limit: float) -> list[gates.GateResult]:
    out = []
    for key, what in (
        ("step_ns", "job step time"),
        ("gpu_kernel_ns", "GPU kernel time per iteration, all ranks"),
    ):
        f = d.figure(key)
        if f.base is None or f.head is None or f.rel is None:
            out.append(gates.GateResult("max-regression", False, f"{what} unknown on one side"))
            continue
        bad = f.rel > limit and f.verdict is Change.REGRESSED
        noise = " (within noise)" if f.verdict is Change.NOISE else ""
        out.append(
            gates.GateResult(
                "max-regression",
                not bad,
                f"{what} {fmt.ns(f.base)} -> {fmt.ns(f.head)} ({f.rel:+.1%}{noise}; limit +{limit:.1%})",
            )
        )
    s = d.figure("tc_share")
    if s.base is None or s.head is None or s.delta is None or math.isnan(s.delta):
        out.append(gates.GateResult("max-regression", False, "job TC share unknown on one side"))
    else:
        bad = -s.delta > limit and s.verdict is Change.REGRESSED
        noise = " (within noise)" if s.verdict is Change.NOISE else ""
        out.append(
            gates.GateResult(
                "max-regression",
                not bad,
                f"job TC share {fmt.pct(s.base)} -> {fmt.pct(s.head)} ({s.delta * 100:+.1f} points{noise}; "
                f"limit {'-' if limit else ''}{limit * 100:.1f} points)",
            )
        )
    return out
