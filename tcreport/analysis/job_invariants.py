"""What must hold for every distributed job, checked after every job analysis.

Each rank is one analysed run, checked by :mod:`tcreport.analysis.invariants` like any other; its
violations travel in :attr:`RankFigures.violations` (only the figures are kept of a rank) and the
job lists them under the rank's number. On top of those, the job's own figures:

* every cell's parts (compute, exposed communication, exposed memory, idle) add up to its span,
  and its GPU step time is no shorter than the span;
* a cell's time outside collectives is its compute beside no collective plus its exposed copies
  and idle (the straggler is named by it);
* collective wait is never negative, and the rank that waited least in an iteration waited zero
  (the wait is measured from it);
* the job's matrix-unit time never exceeds its kernel time, and its shares are shares.

As for one run, :func:`enforce` attaches the violations to the section (every job output shows
them) or, under ``TCREPORT_STRICT_INVARIANTS``, raises :class:`InvariantError`. Everything checked
is per cell or per rank: small.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from tcreport.analysis.invariants import InvariantError, strict
from tcreport.analysis.job import JobSection
from tcreport.analysis.job_ranks import RankFigures
from tcreport.analysis.violation import Invariant, Violation


def _cells(sec: JobSection) -> list[Violation]:
    out: list[Violation] = []
    least: dict[int, int] = {}
    for c in sec.cells:
        s, where = c.step, f"job.cells[rank {c.rank}, {c.label}]"
        parts = s.compute_ns + s.communication_ns + s.memory_ns + s.idle_ns
        if parts != s.span_ns or s.step_ns < s.span_ns:
            out.append(
                Violation(
                    Invariant.JOB_CELL_PARTS,
                    where,
                    f"parts sum to {parts:,} ns over a span of {s.span_ns:,} ns "
                    f"(step {s.step_ns:,} ns)",
                )
            )
        own = s.compute_ns - s.compute_in_collectives_ns + s.memory_ns + s.idle_ns
        if s.own_ns != own:
            out.append(
                Violation(
                    Invariant.JOB_OWN_TIME,
                    where,
                    f"{s.own_ns:,} ns outside collectives, but its compute beside none, "
                    f"copies and idle make {own:,} ns",
                )
            )
        if c.wait_ns < 0:
            out.append(Violation(Invariant.JOB_WAIT, where, f"wait {c.wait_ns:,} ns is negative"))
        least[c.iteration] = min(least.get(c.iteration, c.wait_ns), c.wait_ns)
    out += [
        Violation(Invariant.JOB_WAIT, f"job.iterations[{i}]", f"the least wait is {w:,} ns, not 0")
        for i, w in sorted(least.items())
        if w != 0
    ]
    return out


def _verdict(sec: JobSection) -> list[Violation]:
    v = sec.verdict
    out: list[Violation] = []
    if (
        v.tc_kernel_ns is not None
        and v.gpu_kernel_ns is not None
        and v.tc_kernel_ns > v.gpu_kernel_ns
    ):
        out.append(
            Violation(
                Invariant.TC_WITHIN_KERNEL,
                "job.verdict.tc_kernel_ns",
                f"{v.tc_kernel_ns:,} ns exceeds the kernel time {v.gpu_kernel_ns:,} ns",
            )
        )
    shares = [("job.verdict.tc_share", v.tc_share)]
    shares += [("job.verdict.eligible_not_tc_share", v.eligible_not_tc_share)]
    shares += [(f"job.ranks[{r.rank}].tc_share", r.tc_share) for r in sec.ranks]
    out += [
        Violation(Invariant.SHARE, name, f"{value} is not within 0-1")
        for name, value in shares
        if value is not None and not 0 <= value <= 1 + 1e-9
    ]
    return out


def _of_ranks(ranks: Sequence[RankFigures]) -> tuple[Violation, ...]:
    return tuple(
        dataclasses.replace(v, figure=f"rank {r.rank}: {v.figure}")
        for r in sorted(ranks, key=lambda r: r.rank)
        for v in r.violations
    )


def check(sec: JobSection, ranks: Sequence[RankFigures] = ()) -> tuple[Violation, ...]:
    """The job's violations: each rank's own (figure prefixed ``rank N:``), then the job's."""
    return (*_of_ranks(ranks), *_cells(sec), *_verdict(sec))


def enforce(sec: JobSection, ranks: Sequence[RankFigures], source: str) -> JobSection:
    """``sec`` with its violations attached, or, in strict mode, an :class:`InvariantError` for
    any of the job's own. A rank's own reach here only where strict mode let them through (an
    open one, :data:`tcreport.analysis.invariants.OPEN_ENV`): its analysis raises the others."""
    job = (*_cells(sec), *_verdict(sec))
    if job and strict():
        raise InvariantError(source, job)
    found = (*_of_ranks(ranks), *job)
    return dataclasses.replace(sec, violations=found) if found else sec
