"""CI gates: turn a run (and optionally its baseline) into pass/fail lines for ``tcreport check``.

A gate that cannot be evaluated because the input lacks the figure (no kernel times, no ops) fails:
a CI job that silently passes on a trace it could not read proves nothing. Regressions reuse the diff
model, so "within run-to-run noise" means the same thing in ``check`` as in ``diff``: a change inside
the noise never fails a gate, however small ``--max-regression`` is. An op that ran on the matrix
units in the baseline and no longer does fails it whatever its time did (the diff's ``tc_lost``).
``--max-regression`` weighs wall time per iteration beside kernel time: faster kernels in a
slower step are no improvement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from tcreport import fmt
from tcreport.analysis import counters
from tcreport.compare import diff as compare
from tcreport.compare.model import Change
from tcreport.errors import UsageError

if TYPE_CHECKING:
    from tcreport.report import Report


@dataclass(frozen=True)
class Gates:
    """Thresholds; ``None`` switches a gate off. Shares and regressions are fractions."""

    min_tc_share: float | None = None
    max_eligible_not_tc_share: float | None = None
    max_regression: float | None = None  # relative kernel-time increase / TC-share drop (points)

    def __post_init__(self) -> None:
        # "-0" passes the options' ">= 0" check; as -0.0 it read "limit +-0.0%" in every line
        for name in ("min_tc_share", "max_eligible_not_tc_share", "max_regression"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, value + 0.0)  # -0.0 + 0.0 is 0.0


@dataclass(frozen=True)
class GateResult:
    name: str
    passed: bool
    message: str  # one line


@dataclass(frozen=True)
class CheckResult:
    results: tuple[GateResult, ...]
    forced: bool = False
    #: what a reader of the gates should know of their figures: the counters' coverage where
    #: ``--counters`` decided part of the kernel time (a share gated on 28 % measured time)
    notes: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    @property
    def failures(self) -> tuple[GateResult, ...]:
        return tuple(r for r in self.results if not r.passed)


def apart(value: float, limit: float) -> tuple[str, str]:
    """A share and its limit with as many decimals as it takes to tell them apart (up to four, more
    only for a limit closer than that): "6.8 % > maximum 6.8 %" would contradict the verdict it
    explains."""
    digits = 1
    while digits < 4 and value != limit and fmt.pct(value, digits) == fmt.pct(limit, digits):
        digits += 1
    shown, bound = fmt.pct(value, digits), fmt.pct(limit, digits)
    if shown == bound and value != limit and math.isfinite(value) and math.isfinite(limit):
        # closer than 0.0001 points (a limit copied from a figure and nudged): the exact decimals,
        # as many as it takes; a float's expansion is finite, so the loop ends
        a, b = Decimal(value) * 100, Decimal(limit) * 100
        while f"{a:.{digits}f}" == f"{b:.{digits}f}":
            digits += 1
        shown, bound = f"{a:.{digits}f} %", f"{b:.{digits}f} %"
    return shown, bound


def miss_apart(share: float, limit: float) -> tuple[str, str]:
    """:func:`apart` for a missed time's share: a miss that rounds to "0.0 %" is still one, in the
    words summary uses ("under 0.1 %"), for a run's gate and a job's alike."""
    shown, bound = apart(share, limit)
    if share > 0 and shown == fmt.pct(0.0):
        shown = "under 0.1 %"
    return shown, bound


def _min_share(view: Report, limit: float) -> GateResult:
    v = view.analysis.verdict
    share, short = v.tc_share, v.words.short
    if share is None:
        return GateResult(
            "min-tc-share", False, f"{short} share unknown: the input has no kernel times"
        )
    ok = share >= limit
    rel = ">=" if ok else "<"
    shown, bound = apart(share, limit)
    return GateResult("min-tc-share", ok, f"{short} share {shown} {rel} minimum {bound}")


def _max_miss(view: Report, limit: float) -> GateResult:
    v = view.analysis.verdict
    share, short = v.eligible_not_tc_share, v.words.short
    if share is None:
        return GateResult(
            "max-eligible-not-tc-share",
            False,
            f"eligible-not-{short} share unknown: the input has no op or kernel times",
        )
    ok = share <= limit
    rel = "<=" if ok else ">"
    shown, bound = miss_apart(share, limit)
    return GateResult(
        "max-eligible-not-tc-share",
        ok,
        f"eligible GPU time not on {short} {shown} of kernel time {rel} maximum {bound}",
    )


def _regression(d: compare.Diff, limit: float) -> list[GateResult]:
    out: list[GateResult] = []
    short = d.words.short
    t = d.figure("gpu_kernel_ns")
    if t.base is None or t.head is None or t.rel is None:
        out.append(
            GateResult("max-regression", False, "kernel time per iteration unknown on one side")
        )
    else:
        bad = t.rel > limit and t.verdict is Change.REGRESSED
        noise = " (within noise)" if t.verdict is Change.NOISE else ""
        out.append(
            GateResult(
                "max-regression",
                not bad,
                f"GPU kernel time per iteration {fmt.ns(t.base)} -> {fmt.ns(t.head)} "
                f"({t.rel:+.1%}{noise}; limit +{limit:.1%})",
            )
        )
    out += _wall_regression(d, limit)
    s = d.figure("tc_share")
    if s.base is None or s.head is None or s.delta is None:
        out.append(GateResult("max-regression", False, f"{short} share unknown on one side"))
    elif d.tc_not_judged:  # not a regression, nor a pass: the two sides used different methods
        out.append(GateResult("max-regression", False, f"not judged: {d.tc_not_judged}"))
        return out
    else:
        bad = -s.delta > limit and s.verdict is Change.REGRESSED
        noise = " (within noise)" if s.verdict is Change.NOISE else ""
        out.append(
            GateResult(
                "max-regression",
                not bad,
                f"{short} share {fmt.pct(s.base)} -> {fmt.pct(s.head)} "
                f"({s.delta * 100:+.1f} points{noise}; limit {'-' if limit else ''}{limit * 100:.1f} points)",
            )
        )
    unit = d.words.unit
    if d.tc_lost:
        shown = ", ".join(fmt.tail(k, 60) for k in d.tc_lost[:3])
        more = f" and {len(d.tc_lost) - 3} more" if len(d.tc_lost) > 3 else ""
        n = len(d.tc_lost)
        ops = "op" if n == 1 else "ops"
        message = f"{n} {ops} ran on {unit} in the baseline and no longer do: {shown}{more}"
    else:
        message = f"no op that ran on {unit} in the baseline lost them"
    out.append(GateResult("max-regression", not d.tc_lost, message))
    return out


def _wall_regression(d: compare.Diff, limit: float) -> list[GateResult]:
    """Wall time per iteration, judged as kernel time is: a change that halves kernel time but
    doubles the step (the host now the bottleneck) is a regression the user sees, and ``diff``
    already names it. Inputs that record no wall time on either side (no iterations, DLProf's
    summaries alone) have no line; one side only fails, as an unknown kernel time does. Two
    different measures (DLProf's Wall Clock Time against a kernel span) are not compared, and the
    line says so: their difference is no change of the run's."""
    w = d.figure("wall_ns")
    if w.base is None and w.head is None:
        return []
    if d.wall_not_judged:
        return [GateResult("max-regression", True, d.wall_not_judged)]
    if w.base is None or w.head is None or w.rel is None:
        return [GateResult("max-regression", False, "wall time per iteration unknown on one side")]
    bad = w.rel > limit and w.verdict is Change.REGRESSED
    noise = " (within noise)" if w.verdict is Change.NOISE else ""
    return [
        GateResult(
            "max-regression",
            not bad,
            f"wall time per iteration {fmt.ns(w.base)} -> {fmt.ns(w.head)} "
            f"({w.rel:+.1%}{noise}; limit +{limit:.1%})",
        )
    ]


def _invariants(view: Report, side: str) -> list[GateResult]:
    """A failed gate for a run whose analysis broke an invariant (the analysis' violations list):
    its figures are not to be trusted, so no gate on them can pass; none when all holds."""
    broken = view.analysis.violations
    if not broken:
        return []
    more = f" and {len(broken) - 1} more" if len(broken) > 1 else ""
    return [
        GateResult(
            "invariants",
            False,
            f"the {side}'s figures break what must always hold: {broken[0]}{more}",
        )
    ]


def check(
    view: Report, gates: Gates, baseline: Report | None = None, *, force: bool = False
) -> CheckResult:
    """Evaluate every gate that is switched on, and fail a run (or baseline) whose figures broke
    an invariant; raises NotComparableError as :func:`diff` does."""
    results: list[GateResult] = [*_invariants(view, "run")]
    if baseline is not None:
        results += _invariants(baseline, "baseline")
    if gates.min_tc_share is not None:
        results.append(_min_share(view, gates.min_tc_share))
    if gates.max_eligible_not_tc_share is not None:
        results.append(_max_miss(view, gates.max_eligible_not_tc_share))
    forced = False
    if gates.max_regression is not None:
        if baseline is None:
            raise UsageError("--max-regression needs --baseline")
        d = compare.diff(baseline, view, force=force)
        forced = d.forced
        results += _regression(d, gates.max_regression)
    notes = counters.notes_of(view.analysis.meta.notes)
    if baseline is not None:
        notes += tuple(f"baseline: {n}" for n in counters.notes_of(baseline.analysis.meta.notes))
    return CheckResult(tuple(results), forced, notes)
