"""The straggler of a distributed job: which rank the others wait for, by how much, and on what.

Split from :mod:`tcreport.analysis.job` because it is the one part of the job section that
compares a rank's own time with the others' medians part by part and name by name. The job's
straggler is the rank furthest beyond the other ranks' median time outside collectives
(:attr:`RankStep.own_ns`) over every compared iteration; what it spent its extra time on is the
parts of its step (compute, copies, idle) and the kernels and ops whose GPU time beats the other
ranks' median the most, all per compared iteration, so one line can set them side by side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tcreport import fmt
from tcreport.analysis.job_cells import Cell, IterationRow, mean, median
from tcreport.analysis.job_ranks import NameTime, RankFigures, RankStep
from tcreport.kernel_names import short_name

#: Excess rows kept per kind (kernels, ops) for the straggler.
TOP_EXCESS = 5


@dataclass(frozen=True)
class Excess:
    name: str
    kind: str  # "part" | "kernel" | "op"
    excess_ns: float  # per iteration, beyond the other ranks' median


@dataclass(frozen=True)
class Straggler:
    rank: int
    named_in: int  # iterations it was the straggler in
    of: int  # iterations compared
    excess_ns: float  # own time beyond the others' median, per compared iteration
    wait_caused_ns: float  # the other ranks' median collective wait, per compared iteration
    parts: tuple[Excess, ...]
    kernels: tuple[Excess, ...]
    ops: tuple[Excess, ...]
    host_cause: str | None  # the host range behind most of its idle, where recorded
    text: str  # one line: who, how much, on what


def _excess(
    mine: Sequence[NameTime], per: int, others: Sequence[tuple[Sequence[NameTime], int]], kind: str
) -> tuple[Excess, ...]:
    """Names whose GPU time per iteration beats the other ranks' median the most. Each rank's
    time is divided by its own aggregated iterations before the median, so a rank that
    aggregated more iterations is not taken for one that spends more per iteration."""
    theirs = [({n.name: n.gpu_ns for n in o}, max(1, k)) for o, k in others]
    out = []
    for n in mine:  # one per distinct name on the straggler
        typical = median([t.get(n.name, 0) / k for t, k in theirs])
        if n.gpu_ns / per > typical:
            out.append(Excess(n.name, kind, n.gpu_ns / per - typical))
    out.sort(key=lambda e: (-e.excess_ns, e.name))
    return tuple(out[:TOP_EXCESS])


#: The parts of a rank's time outside collectives (they sum to :attr:`RankStep.own_ns`).
OWN_PARTS = ("compute outside collectives", "memory copies/sets", "idle")


def _own_part(s: RankStep, part: str) -> int:
    if part == OWN_PARTS[0]:
        return s.compute_ns - s.compute_in_collectives_ns
    return s.memory_ns if part == OWN_PARTS[1] else s.idle_ns


def _part_excess(part: str, mine: list[Cell], theirs: list[Cell], n: int) -> Excess:
    """The straggler's time in ``part`` beyond the other ranks' median, per iteration."""
    by_iter = [
        _own_part(c.step, part)
        - median([_own_part(o.step, part) for o in theirs if o.iteration == c.iteration])
        for c in mine
    ]
    return Excess(part, "part", sum(by_iter) / n)


def _own_excess(rank: int, cells: list[Cell]) -> float:
    """``rank``'s time outside collectives beyond the other ranks' median, per compared
    iteration (its mean over the iterations it ran; 0 when it ran none)."""
    mine = [c for c in cells if c.rank == rank]
    theirs = [c for c in cells if c.rank != rank]
    return (
        mean(
            [
                c.step.own_ns
                - median([o.step.own_ns for o in theirs if o.iteration == c.iteration])
                for c in mine
            ]
        )
        or 0.0
    )


def straggler(
    ranks: Sequence[RankFigures], cells: list[Cell], rows: list[IterationRow]
) -> Straggler | None:
    named = [r.straggler for r in rows if r.straggler is not None]
    if not named:
        return None
    # The job's straggler is the rank furthest beyond the others' median over every compared
    # iteration, not the one named most often: when the slow rank rotates, a rank a little late in
    # most iterations can be faster than the median overall. None is named when no rank is slower.
    own = {r: _own_excess(r, cells) for r in set(named)}
    slow = max(own, key=lambda r: (own[r], named.count(r), -r))
    own_excess = own[slow]
    if own_excess <= 0:
        return None
    n = len(rows)
    mine = [c for c in cells if c.rank == slow]
    theirs = [c for c in cells if c.rank != slow]
    parts = [_part_excess(part, mine, theirs, n) for part in OWN_PARTS]
    parts.sort(key=lambda e: -e.excess_ns)
    figures = {r.rank: r for r in ranks}
    others = [figures[r] for r in figures if r != slow]
    per = max(1, figures[slow].iterations_aggregated or n)
    kernels = _excess(
        figures[slow].kernels,
        per,
        [(o.kernels, o.iterations_aggregated or n) for o in others],
        "kernel",
    )
    ops = _excess(
        figures[slow].ops, per, [(o.ops, o.iterations_aggregated or n) for o in others], "op"
    )
    causes = [c.step.host_cause for c in mine if c.step.host_cause]
    cause = max(set(causes), key=causes.count) if causes else None
    wait = mean([float(r.median_wait_ns) for r in rows if r.straggler == slow]) or 0.0
    return Straggler(
        rank=slow,
        named_in=named.count(slow),
        of=n,
        excess_ns=own_excess,
        wait_caused_ns=wait,
        parts=tuple(parts),
        kernels=kernels,
        ops=ops,
        host_cause=cause,
        text=_straggler_text(slow, named.count(slow), n, own_excess, parts, kernels, cause),
    )


def _straggler_text(
    rank: int,
    named: int,
    n: int,
    excess: float,
    parts: list[Excess],
    kernels: tuple[Excess, ...],
    cause: str | None,
) -> str:
    first = next((p for p in parts if p.excess_ns > 0), None)
    text = (
        f"rank {rank} is the straggler in {named} of {n} iteration{'s' if n != 1 else ''}: "
        f"{fmt.ns(excess)} more per iteration outside collectives than the other ranks' median"
    )
    if first is None:
        return text + "."
    why = ""
    if first.name == "idle" and cause:
        why = f", the host in {cause}"
    elif first.name.startswith("compute") and kernels:
        why = _kernel_words(first, kernels[0])
    # The parts are signed (a rank can copy more and compute less), so the largest is "most of
    # it" only when it is at least half of the whole and no more than it.
    if first.excess_ns > excess:
        return (
            f"{text}: {fmt.ns(first.excess_ns)} more {first.name}{why}, "
            f"{fmt.ns(first.excess_ns - excess)} less in its other parts."
        )
    lead = "most of it" if 2 * first.excess_ns >= excess else "the largest part"
    return f"{text}, {lead} {first.name} (+{fmt.ns(first.excess_ns)}){why}."


def _kernel_words(part: Excess, kernel: Excess) -> str:
    """The kernel beside the compute part it explains. Both are per iteration beyond the other
    ranks' median, but the kernel's is all its time (some of it may run under a collective) and
    the part is the net of every kernel (others may run shorter): the kernel "leads" the part only
    where its excess fits in it; beyond, the line says both, so it never claims more than the
    part holds."""
    name, extra = short_name(kernel.name), fmt.ns(kernel.excess_ns)
    if kernel.excess_ns <= part.excess_ns:
        return f", led by {name} (+{extra})"
    return (
        f" ({name} alone +{extra}, more than the part: other kernels ran shorter or under "
        "collectives)"
    )
