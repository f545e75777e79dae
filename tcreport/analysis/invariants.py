"""What must hold for every analysed run, checked after every analysis.

Matrix-unit time never exceeds GPU kernel time; eligible time never exceeds it either; an op's
matrix-unit, missed and other time add up to its GPU time; each GPU's iteration windows come in
order and do not overlap; a step's parts add up to its span; the kernel rows add up to the
kernel time and, by verdict, to the matrix-unit time; the work an iteration's row shows on
a GPU fits in its window's span; no op group runs above its precision's peak unless an
algorithm or an unknown verdict explains it; nothing is negative and every share is a share. A
figure that breaks one of these is a bug (a reader's or the analysis'), never a result to show
as if it were right.

:func:`check` lists the violations; :func:`enforce` puts them on the analysed run, where every
output shows them as a note naming the broken figure, or, when ``TCREPORT_STRICT_INVARIANTS`` is
set (the test suite and the fuzzer set it), raises :class:`InvariantError` so the run fails.
Everything checked is an aggregate (per op name, kernel name, iteration and GPU): small.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
import os
from collections.abc import Iterable

from tcreport.analysis.op_throughput import PeakExcess
from tcreport.analysis.sections import Analysis
from tcreport.analysis.violation import Invariant, Violation

#: Set (to anything but "" or "0") to make a violation an error instead of a note.
STRICT_ENV = "TCREPORT_STRICT_INVARIANTS"
#: In strict mode, violations known to be open (a bug being fixed), as comma-separated
#: ``INVARIANT@TRACE``: the invariant's id and the trace's file name (a glob). They stay notes.
OPEN_ENV = "TCREPORT_OPEN_VIOLATIONS"
#: The fields of :attr:`StepRow.parts`, in its order.
STEP_PARTS = (
    "tc_compute_ns",
    "other_compute_ns",
    "unknown_compute_ns",
    "communication_ns",
    "memory_ns",
    "idle_launch_ns",
    "idle_host_ns",
)


class InvariantError(AssertionError):
    """An analysis broke an invariant under ``TCREPORT_STRICT_INVARIANTS``: a bug, not bad input
    (so not a :class:`~tcreport.errors.TcreportError` the CLI would turn into a usage line)."""

    def __init__(self, source: str, violations: tuple[Violation, ...]) -> None:
        self.violations = violations
        super().__init__(f"{source}: " + "; ".join(str(v) for v in violations))


def strict() -> bool:
    return os.environ.get(STRICT_ENV, "") not in ("", "0")


def _negative(figures: Iterable[tuple[str, float | int | None]]) -> list[Violation]:
    return [
        Violation(Invariant.NOT_NEGATIVE, name, f"{value} is negative")
        for name, value in figures
        if value is not None and value < 0
    ]


def _not_shares(figures: Iterable[tuple[str, float | None]]) -> list[Violation]:
    return [
        Violation(Invariant.SHARE, name, f"{value} is not a share in [0, 1]")
        for name, value in figures
        if value is not None and (math.isnan(value) or not 0.0 <= value <= 1.0)
    ]


def _above(
    invariant: Invariant, part: tuple[str, int | None], whole: tuple[str, int | None]
) -> list[Violation]:
    (pn, p), (wn, w) = part, whole
    if p is None or w is None or p <= w:
        return []
    return [Violation(invariant, pn, f"{p} ns exceeds {wn} ({w} ns)")]


def _counts_add_up(
    eligible: int | None,
    using: int | None,
    not_using: int | None,
    partly: int | None,
    unknown: int | None,
) -> list[Violation]:
    """Every eligible op used the matrix units (in all or some calls: ``partly`` of them in some),
    used them in none, or has no verdict (``unknown``): the counts add up, as DLProf's own do."""
    found: list[Violation] = []
    known = eligible is not None and using is not None and not_using is not None
    if known and (using or 0) + (not_using or 0) + (unknown or 0) != eligible:
        found.append(
            Violation(
                Invariant.COUNTS_ADD_UP,
                "verdict.eligible_not_using_op_count",
                f"using_op_count {using} + eligible_not_using_op_count {not_using} + "
                f"unknown_op_count {unknown or 0} is not eligible_op_count {eligible}",
            )
        )
    if partly is not None and using is not None and partly > using:
        found.append(
            Violation(
                Invariant.COUNTS_ADD_UP,
                "verdict.partly_using_op_count",
                f"{partly} exceeds using_op_count {using}",
            )
        )
    return found


def _headline(a: Analysis) -> list[Violation]:
    """The run's times, counts and shares."""
    t, v = a.time, a.verdict
    times = ("wall_ns", "gpu_kernel_ns", "tc_kernel_ns", "memory_ns", "unknown_kernel_ns")
    counts = ("eligible_op_count", "using_op_count", "eligible_not_using_op_count")
    found = _negative(
        [(f"time.{n}", getattr(t, n)) for n in (*times, "kernel_launches", "unique_kernels")]
        + [(f"verdict.{n}", getattr(v, n)) for n in counts]
        + [("verdict.eligible_gpu_ns", v.eligible_gpu_ns)]
        + [("verdict.eligible_not_using_gpu_ns", v.eligible_not_using_gpu_ns)]
    )
    kernel = ("time.gpu_kernel_ns", t.gpu_kernel_ns)
    found += _above(Invariant.TC_WITHIN_KERNEL, ("time.tc_kernel_ns", t.tc_kernel_ns), kernel)
    found += _above(
        Invariant.ELIGIBLE_WITHIN_KERNEL, ("verdict.eligible_gpu_ns", v.eligible_gpu_ns), kernel
    )
    found += _above(
        Invariant.MISSED_WITHIN_ELIGIBLE,
        ("verdict.eligible_not_using_gpu_ns", v.eligible_not_using_gpu_ns),
        ("verdict.eligible_gpu_ns", v.eligible_gpu_ns),
    )
    c = a.communication
    found += _not_shares(
        [
            ("verdict.tc_share", v.tc_share),
            ("verdict.classified_share", v.classified_share),
            ("verdict.eligible_not_tc_share", v.eligible_not_tc_share),
            ("time.busy.share", t.busy.share if t.busy else None),
            ("communication.wall_share", c.wall_share),
            (
                "communication.collectives.kernel_share",
                c.collectives.kernel_share if c.collectives is not None else None,
            ),
        ]
    )
    return found


def _rows(a: Analysis) -> list[Violation]:
    """Per op, kernel and GPU: parts add up, nothing negative, shares are shares."""
    found: list[Violation] = []
    for o in a.breakdown.ops:
        name = f"breakdown.ops[{o.name!r}]"
        parts = (o.tc_ns, o.missed_ns, o.other_ns)
        found += _negative([(f"{name}.gpu_ns", o.gpu_ns), (f"{name}.cpu_ns", o.cpu_ns)])
        found += _negative(
            zip((f"{name}.tc_ns", f"{name}.missed_ns", f"{name}.other_ns"), parts, strict=True)
        )
        if sum(parts) != (o.gpu_ns or 0):
            found.append(
                Violation(
                    Invariant.OP_PARTS,
                    f"{name}.gpu_ns",
                    f"matrix-unit {o.tc_ns} + missed {o.missed_ns} + other {o.other_ns} ns "
                    f"!= {o.gpu_ns or 0} ns",
                )
            )
    found += _not_shares((f"breakdown.ops[{o.name!r}].share", o.share) for o in a.breakdown.ops)
    found += _not_shares(
        (f"breakdown.kernels[{k.name!r}].share", k.share) for k in a.breakdown.kernels
    )
    found += _negative(
        (f"breakdown.kernels[{k.name!r}].gpu_ns", k.gpu_ns) for k in a.breakdown.kernels
    )
    for d in a.breakdown.devices:
        name = f"breakdown.devices[{d.device_id}]"
        found += _not_shares([(f"{name}.tc_share", d.tc_share)])
        found += _above(
            Invariant.TC_WITHIN_KERNEL,
            (f"{name}.tc_kernel_ns", d.tc_kernel_ns),
            (f"{name}.gpu_kernel_ns", d.gpu_kernel_ns),
        )
    return found


def _kernel_rows(a: Analysis) -> list[Violation]:
    """The kernel rows add up to the run's kernel time, and, by verdict, to its matrix-unit and
    unknown time: a row whose verdict is not that of every launch in it (a name's first launch
    speaking for all) shows a kernel on the matrix units that the time figures do not count."""
    t, rows = a.time, a.breakdown.kernels
    if not rows or t.gpu_kernel_ns is None:
        return []
    sums: list[tuple[str, int, int | None]] = [
        ("gpu_kernel_ns", sum(k.gpu_ns for k in rows), t.gpu_kernel_ns)
    ]
    if any(k.uses_tc is not None for k in rows):  # else the TC time is the profiler's own
        sums += [
            ("tc_kernel_ns", sum(k.gpu_ns for k in rows if k.uses_tc), t.tc_kernel_ns),
            (
                "unknown_kernel_ns",
                sum(k.gpu_ns for k in rows if k.uses_tc is None),
                t.unknown_kernel_ns,
            ),
        ]
    return [
        Violation(
            Invariant.KERNEL_ROWS_SUM, f"time.{name}", f"the kernel rows sum to {part}, not {whole}"
        )
        for name, part, whole in sums
        if whole is not None and part != whole
    ]


def _iterations(a: Analysis) -> list[Violation]:
    """Iteration rows are not negative; each GPU's step windows are ordered and disjoint, and a
    step's parts add up to its span."""
    found: list[Violation] = []
    for r in a.iterations.rows:
        name = f"iterations.rows[{r.iteration}]"
        found += _negative(
            [
                (f"{name}.duration_ns", r.duration_ns),
                (f"{name}.tc_ns", r.tc_ns),
                (f"{name}.non_tc_ns", r.non_tc_ns),
                (f"{name}.memory_ns", r.memory_ns),
                (f"{name}.idle_ns", r.idle_ns),
            ]
        )
    found += _within_span(a)
    last_end: dict[int | None, tuple[int, int]] = {}
    for s in sorted(
        a.steps.rows, key=lambda s: (s.device_id is None, s.device_id or 0, s.iteration)
    ):
        name = f"steps.rows[{s.iteration}, GPU {s.device_id}]"
        found += _negative([(f"{name}.span_ns", s.span_ns)])
        found += _negative(zip((f"{name}.{p}" for p in STEP_PARTS), s.parts, strict=True))
        if sum(s.parts) != s.span_ns:
            found.append(
                Violation(
                    Invariant.STEP_PARTS,
                    f"{name}.span_ns",
                    f"parts sum to {sum(s.parts)} ns, not {s.span_ns} ns",
                )
            )
        prev = last_end.get(s.device_id)
        if prev is not None and s.start_ns < prev[1]:
            found.append(
                Violation(
                    Invariant.WINDOWS,
                    f"{name}.start_ns",
                    f"starts {prev[1] - s.start_ns} ns before iteration {prev[0]}'s window ends "
                    "on the same GPU",
                )
            )
        last_end[s.device_id] = (s.iteration, s.start_ns + s.span_ns)
    return found


def _within_span(a: Analysis) -> list[Violation]:
    """Per GPU, the kernel and memory time an iteration's row shows (its stack: the step
    breakdown's where measured) fits in the GPU span of its window: a straggler cut at a window's
    edge is shown cut in the iteration table too, not whole in a window too short for it."""
    found: list[Violation] = []
    for r in a.iterations.rows:
        stacks = [(g.device_id, g.step, g.stacked) for g in r.gpus] or [
            (s.device_id, s, r.stacked) for s in r.steps[:1] if len(r.steps) == 1
        ]
        for dev, step, shown in stacks:
            if step is None:
                continue
            work = shown.tc_ns + shown.other_ns + shown.memory_ns
            found += _above(
                Invariant.ITERATION_WITHIN_SPAN,
                (f"iterations.rows[{r.iteration}, GPU {dev}].work_ns", work),
                (f"steps.rows[{r.iteration}, GPU {dev}].span_ns", step.span_ns),
            )
    return found


def _sums(a: Analysis) -> list[Violation]:
    """Rows that must add up to the run's figures: ops' time, per-GPU rows, eligible counts."""
    t, v, b = a.time, a.verdict, a.breakdown
    found: list[Violation] = []
    if b.has_ops and b.kernels and t.gpu_kernel_ns is not None:
        found += _above(
            Invariant.OPS_WITHIN_KERNEL,
            ("breakdown.ops[*].gpu_ns", sum(o.gpu_ns or 0 for o in b.ops)),
            ("time.gpu_kernel_ns", t.gpu_kernel_ns),
        )
    found += _kernel_rows(a)
    eligible = v.eligible_op_count
    for name, n in (
        ("using_op_count", v.using_op_count),
        ("eligible_not_using_op_count", v.eligible_not_using_op_count),
    ):
        if eligible is not None and n is not None and n > eligible:
            found.append(
                Violation(
                    Invariant.COUNTS, f"verdict.{name}", f"{n} exceeds eligible_op_count {eligible}"
                )
            )
    found += _counts_add_up(
        v.eligible_op_count,
        v.using_op_count,
        v.eligible_not_using_op_count,
        v.partly_using_op_count,
        v.unknown_op_count,
    )
    if b.devices:
        for name, part, whole in (
            ("gpu_kernel_ns", sum(d.gpu_kernel_ns for d in b.devices), t.gpu_kernel_ns),
            ("tc_kernel_ns", sum(d.tc_kernel_ns for d in b.devices), t.tc_kernel_ns),
            ("memory_ns", sum(d.memory_ns for d in b.devices), t.memory_ns or 0),
            ("kernel_launches", sum(d.launches for d in b.devices), t.kernel_launches),
        ):
            if part != whole:
                found.append(
                    Violation(
                        Invariant.DEVICES_SUM,
                        f"time.{name}",
                        f"the GPUs' rows sum to {part}, not {whole}",
                    )
                )
    for r in a.iterations.rows:
        if r.gpus and (sum(g.tc_ns for g in r.gpus), sum(g.non_tc_ns for g in r.gpus)) != (
            r.tc_ns,
            r.non_tc_ns,
        ):
            found.append(
                Violation(
                    Invariant.ITERATION_GPUS,
                    f"iterations.rows[{r.iteration}].tc_ns",
                    "its per-GPU stacks do not add up to the iteration's kernel time",
                )
            )
    return found


def _throughput(a: Analysis) -> list[Violation]:
    """No op group runs above the peak of the precision it ran at, unless the words beside its
    % of peak explain how it can (:attr:`OpThroughput.above_peak`)."""
    t = a.throughput
    if t is None:
        return []
    return [
        Violation(
            Invariant.WITHIN_PEAK,
            f"throughput.ops[{o.name!r}, {o.input_shapes}, {o.precision}].peak_share",
            f"{o.peak_share:.3f} of the {o.precision} peak ({o.peak_tflops} TFLOP/s)",
        )
        for o in t.ops
        if o.peak_excess is PeakExcess.IMPOSSIBLE
    ]


def check(a: Analysis) -> tuple[Violation, ...]:
    """Every violation in ``a``, in a fixed order; () when all holds."""
    return (*_headline(a), *_rows(a), *_sums(a), *_iterations(a), *_throughput(a))


def _open(v: Violation, trace: str) -> bool:
    """Whether ``v`` on ``trace`` is listed in :data:`OPEN_ENV` as a known, open bug."""
    for entry in filter(None, os.environ.get(OPEN_ENV, "").split(",")):
        invariant, _, pattern = entry.strip().partition("@")
        if invariant == v.invariant and fnmatch.fnmatchcase(trace, pattern or "*"):
            return True
    return False


def enforce(a: Analysis) -> Analysis:
    """``a`` with its violations attached (every output shows them), or, in strict mode, an
    :class:`InvariantError` for any that is not a known open bug (:data:`OPEN_ENV`)."""
    found = check(a)
    if found and strict():
        trace = os.path.basename(a.meta.path.rstrip("/"))
        unexpected = tuple(v for v in found if not _open(v, trace))
        if unexpected:
            raise InvariantError(a.meta.path, unexpected)
    return dataclasses.replace(a, violations=found) if found else a
