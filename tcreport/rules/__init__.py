"""Finding rules: one module per rule, a stable id each, evaluated in a sorted registry.

Findings are ranked high and medium severity first, each group by estimated saving (largest
first), then severity, then id, so the ordering is deterministic and the most valuable change a
reviewer should act on comes first. Savings are normalised here, once, for
every rule: clamped to [0, the aggregated wall or GPU time] so no rule can promise more time than
the run has, and expressed as a share of the aggregated wall time and per iteration.
"""

from __future__ import annotations

import dataclasses

from tcreport.analysis import derived
from tcreport.analysis.result import Analysis
from tcreport.rules import (
    au001_unaligned_layers,
    au002_loss_scaling,
    au003_tf32_off,
    au004_cudnn_benchmark,
    au005_channels_last,
    au006_float32_model,
    au007_xla_off,
    cm001_communication,
    cm002_comm_overlap,
    cv001_cudnn_benchmark_off,
    cv002_slow_half_wgrad,
    cv003_layout_conversions,
    dlprof_feedback,
    gp001_low_utilisation,
    gp002_launch_bound,
    it001_iterations,
    it002_warmup_in_range,
    it003_iteration_variance,
    it004_autotuning_in_range,
    it005_compilation_in_range,
    op001_heavy_non_tc_op,
    pr001_fp16_where_bf16,
    pr002_half_softmax_loss,
    pr003_loss_scaling_overhead,
    st001_host_sync,
    st002_pageable_copies,
    st003_tiny_copies,
    tc001_mixed_precision_off,
    tc002_unclassified,
    tc003_unaligned_dims,
    tc004_eligible_missed_tc,
    tc005_no_matrix_units,
    tc006_matrix_units_unsure,
)
from tcreport.rules.base import SEVERITY_ORDER, Evidence, EvidenceKind, Finding, Rule, Severity

__all__ = [
    "IDLE_SAVINGS",
    "REGISTRY",
    "Evidence",
    "EvidenceKind",
    "Finding",
    "Severity",
    "evaluate",
    "fix_first",
    "no_fix_first",
]

#: rule id -> rule, sorted by id. ``DLPROF`` emits DLProf's own findings as ``dlprof:<detector>``.
REGISTRY: dict[str, Rule] = dict(
    sorted(
        {
            "AU001": au001_unaligned_layers.check,
            "AU002": au002_loss_scaling.check,
            "AU003": au003_tf32_off.check,
            "AU004": au004_cudnn_benchmark.check,
            "AU005": au005_channels_last.check,
            "AU006": au006_float32_model.check,
            "AU007": au007_xla_off.check,
            "CM001": cm001_communication.check,
            "CM002": cm002_comm_overlap.check,
            "CV001": cv001_cudnn_benchmark_off.check,
            "CV002": cv002_slow_half_wgrad.check,
            "CV003": cv003_layout_conversions.check,
            "DLPROF": dlprof_feedback.check,
            "GP001": gp001_low_utilisation.check,
            "GP002": gp002_launch_bound.check,
            "IT001": it001_iterations.check,
            "IT002": it002_warmup_in_range.check,
            "IT003": it003_iteration_variance.check,
            "IT004": it004_autotuning_in_range.check,
            "IT005": it005_compilation_in_range.check,
            "OP001": op001_heavy_non_tc_op.check,
            "PR001": pr001_fp16_where_bf16.check,
            "PR002": pr002_half_softmax_loss.check,
            "PR003": pr003_loss_scaling_overhead.check,
            "ST001": st001_host_sync.check,
            "ST002": st002_pageable_copies.check,
            "ST003": st003_tiny_copies.check,
            "TC001": tc001_mixed_precision_off.check,
            "TC002": tc002_unclassified.check,
            "TC003": tc003_unaligned_dims.check,
            "TC004": tc004_eligible_missed_tc.check,
            "TC005": tc005_no_matrix_units.check,
            "TC006": tc006_matrix_units_unsure.check,
        }.items()
    )
)


def _bound(analysis: Analysis) -> int | None:
    """The most time any saving can be: the aggregated wall time, GPU kernel time, kernel span (the
    wall-time stand-in when the input has no wall time) or op GPU time (when it has no kernels),
    the largest."""
    tl = analysis.time.timeline
    span = tl.span_ns // max(1, tl.devices) if tl is not None else None
    op_gpu = sum(o.gpu_ns or 0 for o in analysis.breakdown.ops) if analysis.breakdown.ops else None
    figures = (analysis.time.wall_ns, analysis.time.gpu_kernel_ns, span, op_gpu)
    known = [v for v in figures if v is not None]
    return max(known) if known else None


def _normalise(f: Finding, analysis: Analysis, bound: int | None) -> Finding:
    ns = f.estimated_saving_ns
    if ns is None:
        return f
    ns = max(0, ns) if bound is None else min(max(0, ns), max(0, bound))
    wall = analysis.time.wall_ns
    per = derived.per_iteration(ns, analysis.iterations.info)
    return dataclasses.replace(
        f,
        estimated_saving_ns=ns,
        saving_share=min(1.0, ns / wall) if wall else None,
        saving_per_iteration_ns=None if per is None else int(per),
        saving_iterations=analysis.iterations.info.aggregated if per is not None else None,
    )


#: Findings whose saving is GPU idle given back (the others save kernel or collective time). They
#: split the idle between them, never claiming one gap twice: GP002 the launch-bound gaps, ST001-ST003
#: the gaps a host synchronisation or copy opened, GP001 the named host wait left beside those
#: (:attr:`tcreport.analysis.host_wait.HostWait.claim_ns`); a test holds their sum to the idle.
IDLE_SAVINGS = frozenset({"GP001", "GP002", "ST001", "ST002", "ST003"})


#: Rule families that judge GPU work (Tensor Cores, precision on them, convolutions, heavy
#: non-TC ops, GPU utilisation, communication): meaningless on a CPU-only run.
GPU_ONLY_PREFIXES = ("TC", "PR", "CV", "OP", "GP", "CM")
#: ...except the rules that judge the ops' dtypes, which a CPU trace records as well: a float16
#: softmax is as unstable on a laptop as on a GPU (the model audit's rules, AU*, run everywhere).
CPU_TOO = frozenset({"PR002"})
#: The model audit's rules (AU001-AU007): advice read from the model object, GPU or none.
AUDIT_PREFIX = "AU"


#: What a finding of a CPU-only run says instead of a saving: the run's words (Host.gpu_run_adds)
#: promise savings only from a GPU run, and host step times without GPU work say nothing of one.
CPU_ONLY_NO_SAVING = (
    "no saving claimed: a CPU-only run measures none (a GPU run of the script does)"
)


def _no_saving(f: Finding) -> Finding:
    if f.estimated_saving_ns is None:
        return f
    return dataclasses.replace(f, estimated_saving_ns=None, assumptions=CPU_ONLY_NO_SAVING)


def evaluate(analysis: Analysis) -> tuple[Finding, ...]:
    bound = _bound(analysis)
    rules = list(REGISTRY.items())
    if analysis.host.cpu_only:  # no GPU kernels: no Tensor Core verdict, so no TC findings either
        rules = [
            (rid, r) for rid, r in rules if rid in CPU_TOO or not rid.startswith(GPU_ONLY_PREFIXES)
        ]
    elif analysis.verdict.no_matrix_units:  # a Pascal GPU: TC advice is void
        rules = [
            (rid, r) for rid, r in rules if rid not in tc005_no_matrix_units.PRESUME_MATRIX_UNITS
        ]
    cpu_only = analysis.host.cpu_only
    found = [
        _normalise(_no_saving(f) if cpu_only else f, analysis, bound)
        for _, rule in rules
        for f in rule(analysis)
    ]
    # by severity, then by saving within each severity: the list reads [high] before [medium]
    # as its labels promise, and "fix first" (the first actionable one) is never below a finding
    # of higher severity, nor "no actionable finding" above a high one with a fix. On a CPU-only
    # run the model audit's and the dtype findings lead: they are the advice such a run can give,
    # and no saving is measured to rank anything else above them.
    found.sort(
        key=lambda f: (
            cpu_only and not _model_advice(f),
            SEVERITY_ORDER[f.severity],
            -(f.estimated_saving_ns or 0),
            f.id,
            f.title,
        )
    )
    return tuple(found)


#: Findings about the measurement or the input (where to aggregate, what the names cannot tell),
#: not about a change to the model: they never take the "fix first" place.
NOT_A_FIX = frozenset({"IT001", "IT002", "IT004", "IT005", "TC002", "TC005", "TC006"})


def _model_advice(f: Finding) -> bool:
    """A finding about the model itself that holds without a GPU: the audit's (AU*) and the
    dtype rules a CPU trace can judge (:data:`CPU_TOO`)."""
    return f.id.startswith(AUDIT_PREFIX) or f.id in CPU_TOO


def fix_first(findings: tuple[Finding, ...], cpu_only: bool = False) -> Finding | None:
    """The one change a reviewer should make first: the first finding, in the findings' order
    (:func:`evaluate`: severity, then saving), that a user can act on: high or medium severity,
    a fix, not a measurement note, tcreport's own. So it is the largest saving of the highest
    severity that has one, else (a high finding whose saving cannot be measured, GP001 with no
    named host wait) the first of that severity; "no actionable finding" is said only when no
    high or medium finding has a fix. Computed here, once; every renderer shows this one.

    A CPU-only run measures no saving, so there the first high or medium audit or dtype finding
    with a fix is the one to make first (ranked first by :func:`evaluate`)."""
    if cpu_only:
        for f in findings:
            if _model_advice(f) and f.fix and f.severity in (Severity.HIGH, Severity.MEDIUM):
                return f
    for f in findings:
        if (
            f.severity in (Severity.HIGH, Severity.MEDIUM)
            and f.fix
            and f.id not in NOT_A_FIX
            and f.source == "tcreport"
        ):
            return f
    return None


#: What every output says where no finding takes the "fix first" place.
NO_FIX_FIRST = "no actionable finding"


def no_fix_first(findings: tuple[Finding, ...]) -> str:
    """The words for a report with no fix-first finding, and why where it is not obvious: the
    highest high or medium finding that does not qualify, and the reason (a reader who sees a
    ``[high]`` finding beside "no actionable finding" is told why it is not the one to fix)."""
    for f in findings:
        if f.severity not in (Severity.HIGH, Severity.MEDIUM):
            continue
        if f.id in NOT_A_FIX:
            why = "is about the measurement or the input, not a change to the model"
        elif f.source != "tcreport":
            why = f"comes from {f.source}, not from tcreport's rules"
        elif not f.fix:
            why = "names no fix"
        else:
            continue  # qualifies: fix_first would have taken it (a CPU-only run's order aside)
        return f"{NO_FIX_FIRST} ({f.id} [{f.severity.value}] {why})"
    return NO_FIX_FIRST
