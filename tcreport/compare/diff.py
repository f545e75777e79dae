"""The diff of two analysed runs: what a PR changed in GPU time and Tensor Core use.

Pure functions over two :class:`~tcreport.report.Report` objects (any two input formats:
everything here reads the canonical analysis, never the raw trace), so ``tcreport diff``, the CI gates
and the renderers share one model.

Comparability: two runs on different GPU models or counts, or different frameworks (or versions),
do not measure the same thing, and a run whose GPU or framework is unknown cannot be checked, so
:func:`diff` refuses them with the reason unless forced, and a forced diff says so. Every figure is
per aggregated iteration, so different iteration counts compare. A change of precision (fp32 to
bf16) is what a PR diff is usually for: it is named in the verdict line, not refused.

Noise rule (why a small change is not a win or a regression): every time is compared *per
aggregated iteration*. Where a run has per-iteration kernel times (two or more aggregated rows in
``Analysis.iterations``) their sample standard deviation is its spread; a headline change counts as
noise when ``|Δ| < 2 × sqrt((s_base² + s_head²) / 2)`` (a side without a spread contributes the other
side's). Without per-iteration rows, the relative spread of the iteration durations
(``selection.info.std_ns / mean_ns``, two or more iterations) is used instead; with no spread at all,
the threshold is 1 % of the base value (1 percentage point for shares). Op and kernel rows use the
run's relative spread (``2 × pooled std / mean``), never less than 1 % nor than 1 µs per
iteration. The constants are :data:`~tcreport.compare.model.NOISE_SIGMAS`,
:data:`~tcreport.compare.model.NOISE_FLOOR` and :data:`~tcreport.compare.model.ROW_NOISE_FLOOR_NS`.

Rows (ops, op types, kernels) are one model (:class:`~tcreport.compare.model.RowDiff`): first
present, gone or new (an op that ran nothing itself on one side is not on that side), then the
deltas; an op whose matrix-unit verdict goes from yes to no is a regression whatever its time did,
and :attr:`Diff.tc_lost` names those for the verdict line and the gates; one that moved onto the
matrix units and got slower is "changed", never a regression for its time alone
(:attr:`RowDiff.tc_move <tcreport.compare.model.RowDiff.tc_move>`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from tcreport.analysis import gpu_arch, wall
from tcreport.compare import rows
from tcreport.compare.model import (
    NOISE_FLOOR,
    NOISE_SIGMAS,
    ROW_NOISE_FLOOR_NS,
    Better,
    Change,
    Diff,
    Figure,
    FindingChange,
    NotComparableError,
    RowDiff,
    Side,
    Unit,
)
from tcreport.compare.noise import Spread, judge, pooled, spread
from tcreport.fmt import ns as dur
from tcreport.rules._common import Flavour, flavour

if TYPE_CHECKING:
    from tcreport.analysis.result import Analysis
    from tcreport.report import Report

__all__ = ["Diff", "Figure", "FindingChange", "NotComparableError", "RowDiff", "Side", "Unit"]


# -- comparability ------------------------------------------------------------------------------


def gpu_model(a: Analysis) -> str | None:
    return a.gpu.model


def _family(framework: str) -> str:
    """ "PyTorch 2.6.0+cu124" -> "pytorch": the framework without its version."""
    return framework.split()[0].lower() if framework.split() else framework.lower()


def _version(framework: str) -> str | None:
    parts = framework.split(maxsplit=1)
    return parts[1] if len(parts) > 1 else None


def inferred_gpu(a: Analysis) -> str | None:
    """The GPU generation of a run whose trace names no GPU model: its recorded compute
    capability's, else the one its kernel names were built for (:attr:`Analysis.gpu`, the one
    decision the GPU row shows too)."""
    return a.gpu.best_generation


def _how(a: Analysis) -> str:
    """How :func:`inferred_gpu` knows, in the notes' words."""
    return "from compute capability" if a.gpu.capability_generation else "from kernel names"


def _may_differ(base: Analysis, head: Analysis) -> bool:
    """Whether two different inferred generations say the GPUs differ: one side's capability
    against the other's kernel names only where those kernels cannot run on that capability."""
    if _how(base) == _how(head):
        return True
    cap, kernels = (base, head) if base.gpu.capability_generation else (head, base)
    return not gpu_arch.may_run_on(str(kernels.gpu.generation), str(cap.gpu.capability_generation))


def inferred_framework(a: Analysis) -> str | None:
    """The framework family from op names (``aten::`` is PyTorch) when the run does not say."""
    return {Flavour.TORCH: "pytorch", Flavour.TF: "tensorflow"}.get(flavour(a))


def inferred_identity(base: Analysis, head: Analysis) -> tuple[str, ...]:
    """Notes naming each side's GPU or framework that was inferred, not recorded."""
    notes: list[str] = []
    for side, a in (("base", base), ("head", head)):
        if not a.host.cpu_only and gpu_model(a) is None and (g := inferred_gpu(a)):
            notes.append(f"{side} GPU not recorded: {g} inferred {_how(a)}")
        if not a.meta.framework and (f := inferred_framework(a)):
            notes.append(f"{side} framework not recorded: {f} inferred from op names")
    return tuple(notes)


def _unknown(base: Analysis, head: Analysis, both_cpu: bool) -> str | None:
    """One reason "cannot verify comparability: base and head GPU unknown, ..." or ``None``."""
    missing: dict[str, list[str]] = {"GPU": [], "framework": []}
    for side, a in (("base", base), ("head", head)):
        if not both_cpu and not a.host.cpu_only and gpu_model(a) is None and not inferred_gpu(a):
            missing["GPU"].append(side)
        if not a.meta.framework and not inferred_framework(a):
            missing["framework"].append(side)
    parts = [f"{' and '.join(sides)} {what} unknown" for what, sides in missing.items() if sides]
    return "cannot verify comparability: " + ", ".join(parts) if parts else None


def comparability(base: Analysis, head: Analysis) -> tuple[str, ...]:
    """Reasons the two runs are not comparable (empty: comparable).

    A check that cannot run is itself a reason: an unknown GPU or framework on either side means
    the diff cannot vouch for its verdicts (two bundled samples, an A100 PyTorch trace and a
    2x H100 Nsight export with no GPU table, used to come out "+4472 % regressed"). A side whose
    GPU model is not recorded is identified by the generation its kernel names were built for
    (sm90/nvjet: Hopper), and one with no framework field by its op names (``aten::``: PyTorch);
    :func:`inferred_identity` says so in the notes. Figures are per aggregated iteration, so
    different iteration counts are comparable.
    """
    reasons: list[str] = []
    both_cpu = base.host.cpu_only and head.host.cpu_only
    if unknown := _unknown(base, head, both_cpu):
        reasons.append(unknown)
    if not both_cpu and (gpu_model(base) is None or gpu_model(head) is None):
        ib, ih = inferred_gpu(base), inferred_gpu(head)
        if ib and ih and ib != ih and _may_differ(base, head):
            if _how(base) == _how(head):
                reasons.append(f"different GPU generation ({ib} vs {ih}, inferred {_how(base)})")
            else:  # each side's generation with where it comes from
                reasons.append(
                    f"different GPU generation ({ib}, inferred {_how(base)}, vs {ih}, inferred "
                    f"{_how(head)})"
                )
    if not base.meta.framework or not head.meta.framework:
        fb_, fh_ = (
            _family(a.meta.framework) if a.meta.framework else inferred_framework(a)
            for a in (base, head)
        )
        if fb_ and fh_ and fb_ != fh_:
            reasons.append(f"different framework ({fb_} vs {fh_}, inferred from op names)")
    if base.host.cpu_only != head.host.cpu_only:
        reasons.append("one run has GPU kernels and the other is CPU-only")
    gb, gh = gpu_model(base), gpu_model(head)
    if gb and gh and gb != gh:
        reasons.append(f"different GPU model ({gb} vs {gh})")
    nb, nh = len(base.meta.gpus), len(head.meta.gpus)
    if not both_cpu and nb and nh and nb != nh:
        reasons.append(f"different GPU count ({nb} vs {nh})")
    fb, fh = base.meta.framework, head.meta.framework
    if fb and fh and _family(fb) != _family(fh):
        reasons.append(f"different framework ({fb} vs {fh})")
    elif fb and fh and _version(fb) and _version(fh) and _version(fb) != _version(fh):
        reasons.append(f"different framework version ({fb} vs {fh})")
    return tuple(reasons)


#: The headline figures the verdict line names first when they moved beyond noise, in this order:
#: the GPU's work, the time the user waits for each iteration, and how much of the work ran on the
#: matrix units. A PR that halves kernel time but doubles wall time per iteration (a host-bound
#: input pipeline, a sync) must say both in the one line a reviewer reads.
VERDICT_LEADS = ("gpu_kernel_ns", "wall_ns", "tc_share")
#: How many moved figures the verdict line names (the leads first); the table lists every one.
VERDICT_PARTS = 3


def verdict_line(
    figures: tuple[Figure, ...], base: Analysis, head: Analysis, lost: tuple[str, ...] = ()
) -> str:
    """One line that says whether head is better, worse or mixed, by how much, per iteration; an
    op that lost its matrix units is a regression here too, whatever the figures did."""
    moved = [f for f in figures if f.verdict in (Change.IMPROVED, Change.REGRESSED)]
    better = [f for f in moved if f.verdict is Change.IMPROVED]
    worse = [*(f for f in moved if f.verdict is Change.REGRESSED), *lost]
    word = (
        "mixed" if better and worse else "better" if better else "worse" if worse else "no change"
    )

    def how(f: Figure) -> str:
        if f.unit is Unit.SHARE and f.delta is not None:
            return f"{f.label} {f.delta * 100:+.1f} pt"
        if f.unit is Unit.NS and f.rel is not None:
            return f"{f.label} per iteration {f.rel:+.1%} ({dur(f.base)} → {dur(f.head)})"
        if f.unit is Unit.NS and f.base is not None and f.head is not None:  # from or to zero
            return f"{f.label} per iteration {f.verdict.value} ({dur(f.base)} → {dur(f.head)})"
        return f"{f.label} {f.verdict.value}"

    rank = {key: i for i, key in enumerate(VERDICT_LEADS)}
    lead = sorted(moved, key=lambda f: rank.get(f.key, len(rank)))  # stable: the rest in order
    named = lead[:VERDICT_PARTS]
    if word == "mixed" and not lost and all(f.verdict is Change.IMPROVED for f in named):
        # "mixed" followed by improvements alone hides what got worse: name the first of it
        named = [
            *named[: VERDICT_PARTS - 1],
            next(f for f in lead if f.verdict is Change.REGRESSED),
        ]
    text = word + (" beyond noise" if word == "no change" else "")
    parts = [how(f) for f in named]
    if lost:
        w = base.verdict.words
        parts.append(f"{len(lost)} {'op' if len(lost) == 1 else 'ops'} no longer on {w.unit}")
    if parts:
        text += ": " + "; ".join(parts)
    pb, ph = base.precision.mode, head.precision.mode
    if pb and ph and pb != ph:
        text += f" (precision changed: {pb} → {ph})"
    return text


# -- figures --------------------------------------------------------------------------------------


def _per_iter(value: int | float | None, a: Analysis) -> float | None:
    if value is None:
        return None
    return float(value) / max(1, a.iterations.info.aggregated or 1)


def _figures(base: Analysis, head: Analysis) -> tuple[Figure, ...]:
    sb, sh = spread(base), spread(head)
    time_std = pooled(sb.std, sh.std)
    wall_std = pooled(sb.wall_std, sh.wall_std)
    cv = pooled(sb.cv, sh.cv)
    share_std = pooled(sb.share_std, sh.share_std)

    def time_threshold(b: float | None, own_std: float | None) -> float | None:
        if b is None:
            return None
        if own_std is not None:
            return NOISE_SIGMAS * own_std
        if cv is not None:
            return max(NOISE_SIGMAS * cv, NOISE_FLOOR) * abs(b)
        return NOISE_FLOOR * abs(b)

    specs: list[tuple[str, str, Unit, Better, float | None, float | None, float | None]] = []

    def ns(key: str, label: str, better: Better, get: Callable[[Analysis], int | None]) -> None:
        """A time figure, per aggregated iteration on both sides."""
        b, h = _per_iter(get(base), base), _per_iter(get(head), head)
        own = {"gpu_kernel_ns": time_std, "wall_ns": wall_std}.get(key)
        specs.append((key, label, Unit.NS, better, b, h, time_threshold(b, own)))

    ns("gpu_kernel_ns", "GPU kernel time", Better.LOWER, lambda a: a.time.gpu_kernel_ns)
    w = base.verdict.words  # comparable runs ran on one vendor's GPUs
    ns("tc_kernel_ns", f"{w.unit_one} kernel time", Better.NEITHER, lambda a: a.time.tc_kernel_ns)
    share_thr = NOISE_SIGMAS * share_std if share_std is not None else NOISE_FLOOR
    specs.append(
        (
            "tc_share",
            f"{w.unit_one} share",
            Unit.SHARE,
            Better.HIGHER,
            base.verdict.tc_share,
            head.verdict.tc_share,
            share_thr,
        )
    )
    ns(
        "eligible_not_using_gpu_ns",
        f"Eligible GPU time not on {w.short}",
        Better.LOWER,
        lambda a: a.verdict.eligible_not_using_gpu_ns,
    )
    ns("memory_ns", "Memory (memcpy + memset)", Better.LOWER, lambda a: a.time.memory_ns)
    ns("wall_ns", "Wall time", Better.LOWER, lambda a: a.time.wall_ns)
    for key, label, better in (
        ("eligible_op_count", f"{w.eligible} ops", Better.NEITHER),
        ("eligible_not_using_op_count", f"Eligible ops not on {w.short}", Better.LOWER),
    ):
        b, h = getattr(base.verdict, key), getattr(head.verdict, key)
        specs.append((key, label, Unit.COUNT, better, b, h, None))
    out: list[Figure] = []
    for key, label, unit, better, b, h, thr in specs:
        bf = None if b is None else float(b)
        hf = None if h is None else float(h)
        delta, rel, verdict = judge(bf, hf, thr, better)
        out.append(Figure(key, label, unit, better, bf, hf, delta, rel, thr, verdict))
    return tuple(out)


#: The figures whose value rests on each kernel's matrix-unit verdict (measured or named).
TC_FIGURES = frozenset(
    {"tc_kernel_ns", "tc_share", "eligible_not_using_gpu_ns", "eligible_not_using_op_count"}
)


def counters_one_side(base: Analysis, head: Analysis) -> str:
    """Why the matrix-unit figures are not judged ("" when they are): one side's verdicts were
    measured by Nsight Compute counters and the other's read from kernel names. The two methods
    disagree on some kernels (the verdict section lists them), so the same trace diffed with and
    without counters would otherwise read as a change of its own."""
    mb, mh = base.verdict.counter_measured, head.verdict.counter_measured
    if bool(mb) == bool(mh):
        return ""
    side, other, n = ("base", "head", mb) if mb else ("head", "base", mh)
    w = base.verdict.words
    return (
        f"{w.unit_one} use measured by Nsight Compute counters in {side} ({n} kernel "
        f"name{'s' if n != 1 else ''}) but read from kernel names in {other}: the {w.unit_one} "
        "figures and ops' verdicts are not judged (give counters on both sides or neither)"
    )


def _unjudged(figures: tuple[Figure, ...]) -> tuple[Figure, ...]:
    """The matrix-unit figures with their values and deltas shown, their verdict unknown."""
    return tuple(replace(f, verdict=Change.UNKNOWN) if f.key in TC_FIGURES else f for f in figures)


def _walls_unlike(base: Analysis, head: Analysis) -> str:
    """Why the two runs' wall times are not judged ("" when they are): the analysis decided which
    measure each is, and the difference of two measures is no change of the run's."""
    tb, th = base.time, head.time
    return wall.unlike(tb.wall_source, th.wall_source, base.meta.profiler, head.meta.profiler)


# -- the diff -------------------------------------------------------------------------------------


def _side_notes(base: Analysis, head: Analysis) -> list[str]:
    """What each side lacks or breaks that every comparison below rests on."""
    notes: list[str] = []
    for side, a in (("base", base), ("head", head)):
        if a.violations:  # the analysis' violations list: its figures are not to be trusted
            notes.append(
                f"{side} has broken figures, so its side of every comparison is suspect: "
                + "; ".join(str(v) for v in a.violations)
            )
        if not a.breakdown.has_kernels:
            notes.append(f"{side} has no kernel rows; kernels not compared")
    return notes


def _side(v: Report, s: Spread) -> Side:
    a = v.analysis
    return Side(
        path=v.source_path,
        format=a.meta.format.value,
        gpu=a.gpu.label,
        framework=a.meta.framework,
        aggregated=a.iterations.info.aggregated,
        spread=s.source,
    )


def diff(base: Report, head: Report, *, force: bool = False) -> Diff:
    """Compare ``head`` against ``base``; raises :class:`NotComparableError` unless ``force``."""
    ba, ha = base.analysis, head.analysis
    reasons = comparability(ba, ha)
    if reasons and not force:
        raise NotComparableError(
            "not comparable: " + "; ".join(reasons) + " (pass --force to compare anyway)"
        )
    sb, sh = spread(ba), spread(ha)
    cv = pooled(sb.cv, sh.cv)
    rel_thr = max(NOISE_SIGMAS * cv, NOISE_FLOOR) if cv is not None else NOISE_FLOOR

    ops, matching = rows.ops(ba, ha, rel_thr)
    notes: list[str] = []
    fb, fh = base.findings, head.findings
    if ba.meta.format != ha.meta.format:
        own_b = tuple(f for f in fb if f.source == "tcreport")
        own_h = tuple(f for f in fh if f.source == "tcreport")
        if (own_b, own_h) != (fb, fh):
            notes.append(
                "findings the profiler itself emitted (e.g. DLProf expert systems) are not "
                "compared: the two inputs are different formats"
            )
        fb, fh = own_b, own_h
    notes.extend(inferred_identity(ba, ha))
    notes.extend(_side_notes(ba, ha))
    added, resolved, persisting = rows.findings(fb, fh)
    clock = rows.op_clock(ba, ha)
    if clock == "host":
        notes.append("no GPU time in either run (CPU-only capture): ops compared by host time")
    rule = (
        f"noise: |Δ| < {NOISE_SIGMAS:g} × pooled per-iteration std (base: {sb.source}; "
        f"head: {sh.source}); {NOISE_FLOOR:.0%} of the base value where no spread is known; "
        f"op and kernel rows: never under {dur(ROW_NOISE_FLOOR_NS)} per iteration"
    )
    figures = _figures(ba, ha)
    op_rows, kernel_rows = ops, rows.kernels(ba, ha, rel_thr)
    lost = rows.tc_lost(op_rows, kernel_rows)
    if unjudged := counters_one_side(ba, ha):
        notes.append(unjudged)
        figures, lost = _unjudged(figures), ()
    if wall_unlike := _walls_unlike(ba, ha):  # shown, never judged
        notes.append(wall_unlike)
        figures = tuple(
            replace(f, verdict=Change.UNKNOWN) if f.key == "wall_ns" else f for f in figures
        )
    if idle := rows.idle_ops(ba, ha):
        notes.append(
            f"{idle} {'op' if idle == 1 else 'ops'} with no {clock} time of their own on either "
            "side (wrappers whose kernels count under the op they call, ops that launch "
            "nothing) not listed"
        )
    return Diff(
        words=ba.verdict.words,
        verdict=verdict_line(figures, ba, ha, lost)
        + (
            f" ({ba.verdict.words.unit_one} figures not judged: counters on one side only)"
            if unjudged
            else ""
        ),
        tc_lost=lost,
        tc_not_judged=unjudged,
        wall_not_judged=wall_unlike,
        base=_side(base, sb),
        head=_side(head, sh),
        not_comparable=reasons,
        forced=bool(reasons),
        matching=matching,
        op_clock=clock,
        noise_rule=rule,
        figures=figures,
        ops=ops,
        op_types=rows.op_types(ba, ha, rel_thr),
        kernels=kernel_rows,
        added=added,
        resolved=resolved,
        persisting=persisting,
        notes=tuple(notes),
    )
