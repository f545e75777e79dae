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


def _per_iteration_std(jr: JobReport) -> float | None:
    steps = [float(r.step_ns) for r in jr.section.iterations]
    return statistics.stdev(steps) if len(steps) >= 2 else None


def _kernel_ns(jr: JobReport) -> float | None:
    """GPU kernel time per compared iteration, summed over the ranks."""
    ranks = jr.section.ranks
    n = len(jr.section.iterations) or None
    known = [r.gpu_kernel_ns for r in ranks if r.gpu_kernel_ns is not None]
    return sum(known) / n if known and n else None


def _figures(base: JobReport, head: JobReport) -> tuple[Figure, ...]:
    std = pooled(_per_iteration_std(base), _per_iteration_std(head))
    b, h = base.section, head.section

    def ns_thr(x: float | None) -> float | None:
        if x is None:
            return None
        return NOISE_SIGMAS * std if std is not None else NOISE_FLOOR * abs(x)

    specs: list[tuple[str, str, Unit, Better, float | None, float | None, float | None]] = [
        ("step_ns", "Job step time (slowest rank)", Unit.NS, Better.LOWER, b.step_ns, h.step_ns, ns_thr(b.step_ns)),
        ("gpu_kernel_ns", "GPU kernel time, all ranks", Unit.NS, Better.LOWER, _kernel_ns(base), _kernel_ns(head), ns_thr(_kernel_ns(base))),
        ("tc_share", "Tensor Core share (job)", Unit.SHARE, Better.HIGHER, b.verdict.tc_share, h.verdict.tc_share, NOISE_FLOOR),
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
    detail = compare.diff(base.detail, head.detail, force=force)
    notes = []
    if set(bi.ranks) != set(hi.ranks):
        only_b, only_h = (
            sorted(set(bi.ranks) - set(hi.ranks)),
            sorted(set(hi.ranks) - set(bi.ranks)),
        )
        notes.append(
            "ranks present on one side only: "
            + "; ".join(
                f"{side} {', '.join(map(str, rs))}"
                for side, rs in (("base", only_b), ("head", only_h))
                if rs
            )
        )
    if base.detail_rank != head.detail_rank:
        notes.append(
            f"the rank diffed in full is rank {head.detail_rank} on both sides (head's {head.detail_why})"
        )
    std = pooled(_per_iteration_std(base), _per_iteration_std(head))
    return JobDiff(
        base_path=base.source_path,
        head_path=head.source_path,
        base_presence=bi.presence,
        head_presence=hi.presence,
        figures=_figures(base, head),
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
        msg = (
            "eligible-not-TC share unknown: no rank has op or kernel times"
            if share is None
            else f"eligible GPU time not on TC {fmt.pct(share)} of all ranks' kernel time "
            f"{'<=' if ok else '>'} maximum {fmt.pct(g.max_eligible_not_tc_share)}"
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
    return gates.GateResult(
        "min-tc-share",
        ok,
        f"job TC share {fmt.pct(share)} {'>=' if ok else '<'} minimum {fmt.pct(limit)}{low}",
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
                f"limit -{limit * 100:.1f} points)",
            )
        )
    return out
