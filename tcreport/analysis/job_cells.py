"""The ranks of a job side by side, iteration by iteration: which iterations match across ranks,
each rank's cell in each (its step, its collective wait, the part of the step that dominates)
and the straggler of each iteration. :mod:`tcreport.analysis.job` builds the job section on it.

Iterations are matched by their ``ProfilerStep#N`` number where every rank's trace numbers its
steps, else by position (each rank's first, second, ...), and only iterations every rank
aggregated are compared. The straggler of an iteration is the rank with the most time outside
collectives (:attr:`RankStep.own_ns`); none is named when no rank exceeds the others' median. A
rank's collective wait is its collective time beyond the least any rank spent in that iteration.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from tcreport.analysis.job_ranks import RankFigures, RankStep

#: Parts a step's time is coloured by in the heatmap, in the order of the legend.
PARTS = ("compute", "communication", "memory", "idle")


@dataclass(frozen=True)
class Cell:
    """One rank in one iteration (the heatmap and the per-rank, per-iteration rows)."""

    rank: int
    iteration: int  # the job's iteration (0 = the first compared)
    label: str
    step: RankStep
    wait_ns: int  # collective time beyond the least any rank spent in this iteration
    dominant: str  # the largest of PARTS
    straggler: bool

    def part_ns(self, part: str) -> int:
        s = self.step
        return {
            "compute": s.compute_ns,
            "communication": s.communication_ns,
            "memory": s.memory_ns,
            "idle": s.idle_ns + (s.step_ns - s.span_ns),
        }[part]


@dataclass(frozen=True)
class IterationRow:
    iteration: int
    label: str
    step_ns: int  # the slowest rank's step time: the job's
    straggler: int | None  # None with one rank
    excess_ns: int  # the straggler's own time beyond the others' median
    max_wait_ns: int
    median_wait_ns: int  # of the ranks other than the straggler


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else 0.0


def mean(values: Sequence[float]) -> float | None:
    """The mean, or None of nothing (a figure no iteration measured is unknown, not zero)."""
    return sum(values) / len(values) if values else None


def aligned(ranks: Sequence[RankFigures]) -> tuple[list[str], dict[int, dict[str, RankStep]], str]:
    """The iterations every rank aggregated, in order, each rank's step of each, and how they
    were matched."""
    per = {r.rank: r.aggregated_steps for r in ranks}
    labelled = all(s.label is not None for steps in per.values() for s in steps) and all(
        per.values()
    )
    if labelled:
        keyed = {r: {s.label or "": s for s in steps} for r, steps in per.items()}
        how = "matched by ProfilerStep number"
    else:
        keyed = {r: {f"iteration {i}": s for i, s in enumerate(steps)} for r, steps in per.items()}
        how = "matched by position (each rank's first aggregated iteration, second, ...)"
    common = set.intersection(*(set(k) for k in keyed.values())) if keyed else set()
    order = [k for k in next(iter(keyed.values()), {}) if k in common]
    dropped = max((len(k) - len(common) for k in keyed.values()), default=0)
    if dropped:
        how += f"; {dropped} iteration{'s' if dropped != 1 else ''} not on every rank left out"
    return order, keyed, how


def _dominant(cell_parts: dict[str, int]) -> str:
    return max(PARTS, key=lambda p: cell_parts[p])


def cells(
    order: list[str], keyed: dict[int, dict[str, RankStep]]
) -> tuple[list[Cell], list[IterationRow]]:
    cells: list[Cell] = []
    rows: list[IterationRow] = []
    for i, label in enumerate(order):  # one per compared iteration: small
        steps = {r: keyed[r][label] for r in sorted(keyed)}
        least = min(s.communication_total_ns for s in steps.values())
        own = {r: s.own_ns for r, s in steps.items()}
        slow = max(own, key=lambda r: (own[r], -r)) if len(steps) > 1 else None
        if slow is not None and own[slow] <= median([own[r] for r in own if r != slow]):
            slow = None  # every rank as fast as the others' median: no straggler to name
        for r, s in steps.items():
            c = Cell(r, i, label, s, s.communication_total_ns - least, "", r == slow)
            cells.append(_with_dominant(c))
        others = [own[r] for r in own if r != slow]
        waits = [steps[r].communication_total_ns - least for r in steps if r != slow]
        rows.append(
            IterationRow(
                iteration=i,
                label=label,
                step_ns=max(s.step_ns for s in steps.values()),
                straggler=slow,
                excess_ns=int(own[slow] - median(others)) if slow is not None else 0,
                max_wait_ns=max(s.communication_total_ns - least for s in steps.values()),
                median_wait_ns=int(median(waits)) if waits else 0,
            )
        )
    return cells, rows


def _with_dominant(c: Cell) -> Cell:
    return replace(c, dominant=_dominant({p: c.part_ns(p) for p in PARTS}))
