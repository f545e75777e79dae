"""The job section: the ranks of one distributed job side by side, every figure and word decided here.

Per rank it keeps the Tensor Core share and the step breakdown of each iteration; across ranks it
finds what no single trace shows:

* **the straggler** of each iteration: the rank with the most time outside collectives
  (:attr:`RankStep.own_ns`: compute, copies and idle). Collective time is not the rank's own:
  a collective ends when the last rank arrives, so the fast ranks spend *more* time in it;
* **collective wait**: each rank's collective time beyond the least any rank spent in that
  iteration's collectives. The rank that arrives last waits least; what the others spend beyond
  it is the price of the imbalance, and it is what making the straggler as fast as the others
  would give back;
* what the straggler spent its extra time on: the parts of its step (compute, copies, idle)
  and the kernels and ops whose GPU time exceeds the other ranks' median the most.

The job's verdict is the whole job's: Tensor Core time over kernel time summed over the ranks
present (time-weighted), with the spread of the per-rank shares beside it. Nothing is
extrapolated to ranks that are not present: "2 of 128 ranks" stays two.

How iterations are matched across ranks and each rank's cell made: :mod:`.job_cells`; the
straggler and what it spent its extra time on: :mod:`.job_straggler`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tcreport import fmt
from tcreport.analysis.collectives import Bandwidth, bandwidth
from tcreport.analysis.job_cells import Cell, IterationRow, aligned, mean, median
from tcreport.analysis.job_cells import cells as cells_of
from tcreport.analysis.job_ranks import RankFigures, weighted_tc_share, with_kernel_times
from tcreport.analysis.job_straggler import Excess, Straggler
from tcreport.analysis.job_straggler import straggler as straggler_of
from tcreport.analysis.sections.headline import Tone
from tcreport.analysis.sections.verdict import share_tone, words_for
from tcreport.analysis.vendor import MATRIX_UNIT, Vendor
from tcreport.analysis.violation import Violation

__all__ = ["Excess", "JobIdentity", "JobSection", "JobVerdict", "RankRow", "Straggler", "section"]


@dataclass(frozen=True)
class JobIdentity:
    label: str
    detected_by: str
    world_size: int | None
    backend: str | None
    ranks: tuple[int, ...]  # present, sorted

    @property
    def presence(self) -> str:
        """``2 of 128 ranks present``: never more than what was read."""
        of = f" of {self.world_size}" if self.world_size is not None else ""
        return f"{len(self.ranks)}{of} ranks present"


@dataclass(frozen=True)
class Spread:
    low: float
    median: float
    high: float
    low_rank: int
    high_rank: int


@dataclass(frozen=True)
class JobVerdict:
    tc_share: float | None  # Tensor Core time / kernel time, summed over the ranks present
    tc_kernel_ns: int | None
    gpu_kernel_ns: int | None
    spread: Spread | None  # of the per-rank shares; None with fewer than two known
    text: str  # the verdict line
    #: eligible GPU time not on the matrix units, summed over the ranks, and its share of the
    #: kernel time (the CI gate's figure, as for one run)
    eligible_not_using_gpu_ns: int | None = None
    eligible_not_tc_share: float | None = None

    @property
    def tone(self) -> Tone:
        """Good or bad news by the single run's thresholds (the verdict section's)."""
        return share_tone(self.tc_share)


@dataclass(frozen=True)
class RankRow:
    rank: int
    file: str
    gpu: str | None
    tc_share: float | None
    gpu_kernel_ns: int | None
    iterations: int  # compared iterations it ran
    step_ns: float | None  # means per compared iteration
    compute_ns: float | None
    communication_ns: float | None  # union of collectives, hidden or not
    memory_ns: float | None
    idle_ns: float | None
    own_ns: float | None
    wait_ns: float | None
    straggler_in: int  # iterations it was the straggler in
    findings: tuple[str, ...]
    tc_kernel_ns: int | None = None  # its kernel time on the matrix units (the share's numerator)


@dataclass(frozen=True)
class JobSection:
    identity: JobIdentity
    verdict: JobVerdict
    ranks: tuple[RankRow, ...]
    iterations: tuple[IterationRow, ...]
    cells: tuple[Cell, ...]
    straggler: Straggler | None
    bandwidth: Bandwidth
    matching: str  # how iterations were matched across ranks
    step_ns: float | None  # the job's step time per compared iteration (slowest rank), mean
    wait_ns: float | None  # the ranks' median collective wait per compared iteration, mean
    matrix_unit: str = "Tensor Cores"
    notes: tuple[str, ...] = ()
    #: figures that break what must always hold (analysis.job_invariants); every output names them
    violations: tuple[Violation, ...] = ()
    #: ranks present but with no timed GPU step in the aggregated iterations (a CPU-only or
    #: damaged trace): left out of the per-iteration figures, named in the notes. Decided here
    #: once; a job diff and the rank shown in full read it (empty when no rank is timed: then
    #: there are no per-iteration figures to leave a rank out of)
    untimed: tuple[int, ...] = ()

    @property
    def timed(self) -> tuple[int, ...]:
        """The ranks the per-iteration figures are of: every rank present but the untimed."""
        return tuple(r for r in self.identity.ranks if r not in self.untimed)

    @property
    def share_head(self) -> str:
        """The per-rank share's column head in the ranks' words ("TC share", "Matrix Cores
        share"), from the verdict section's words for their vendor."""
        gpu_vendor = next(
            (v for v, unit in MATRIX_UNIT.items() if unit == self.matrix_unit), Vendor.UNKNOWN
        )
        return f"{words_for(gpu_vendor).short} share"


def verdict(ranks: Sequence[RankFigures]) -> JobVerdict:
    known = with_kernel_times(ranks)
    share, tc, total = weighted_tc_share(known)
    shares = sorted((r.tc_share, r.rank) for r in ranks if r.tc_share is not None)
    spread = (
        Spread(
            shares[0][0],
            median([s for s, _ in shares]),
            shares[-1][0],
            shares[0][1],
            shares[-1][1],
        )
        if len(shares) >= 2
        else None
    )
    unit = ranks[0].matrix_unit if ranks else "Tensor Cores"
    n = len(known)
    if share is None:
        text = f"{unit} use unknown: no rank's trace holds kernel times."
    else:
        # "read" counts the traces read; a rank without kernel times is read but not counted here
        over = f"the {n} rank{'s' if n != 1 else ''} read"
        if n < len(ranks):
            over = f"the {n} of {len(ranks)} ranks read that hold kernel times"
        text = f"{fmt.pct(share)} of GPU kernel time ran on {unit} across {over} (time-weighted)"
        if spread is None:
            text += "."
        elif fmt.pct(spread.low) == fmt.pct(spread.high):
            text += "; the same on every rank."
        else:
            text += (
                f"; per rank {fmt.pct(spread.low)} (rank {spread.low_rank}) to "
                f"{fmt.pct(spread.high)} (rank {spread.high_rank})."
            )
    misses = [r.eligible_not_using_gpu_ns for r in known if r.eligible_not_using_gpu_ns is not None]
    miss = sum(misses) if misses else None
    return JobVerdict(
        share,
        tc if known else None,
        total if known else None,
        spread,
        text,
        miss,
        miss / total if miss is not None and total else None,
    )


def _rank_rows(ranks: Sequence[RankFigures], cells: list[Cell]) -> tuple[RankRow, ...]:
    out = []
    for r in ranks:  # one per rank
        mine = [c for c in cells if c.rank == r.rank]
        s = [c.step for c in mine]
        out.append(
            RankRow(
                rank=r.rank,
                file=r.file,
                gpu=r.gpu_name,
                tc_share=r.tc_share,
                gpu_kernel_ns=r.gpu_kernel_ns,
                iterations=len(mine),
                step_ns=mean([x.step_ns for x in s]),
                compute_ns=mean([x.compute_ns for x in s]),
                communication_ns=mean([x.communication_total_ns for x in s]),
                memory_ns=mean([x.memory_ns for x in s]),
                idle_ns=mean([x.idle_ns for x in s]),
                own_ns=mean([x.own_ns for x in s]),
                wait_ns=mean([c.wait_ns for c in mine]),
                straggler_in=sum(1 for c in mine if c.straggler),
                findings=r.finding_ids,
                tc_kernel_ns=r.tc_kernel_ns,
            )
        )
    return tuple(out)


def _sizes_note(ranks: Sequence[RankFigures], said: str | None) -> str | None:
    """Why no message sizes, where no rank kept a kernel with times (damaged or absent kernel
    events): then no collective kernel was read at all, whatever args the files hold."""
    if said is not None or any(r.gpu_kernel_ns for r in ranks):
        return said
    return (
        "no message sizes: no rank's trace yielded a GPU kernel with times, collectives "
        "included (see each trace's notes)"
    )


def _split_note(ranks: Sequence[RankFigures]) -> str | None:
    """Ranks whose iterations were found differently (a key node some ranks never ran, so their
    ProfilerSteps were used): their iterations are matched by position all the same."""
    ways: dict[str, list[int]] = {}
    for r in ranks:
        ways.setdefault(r.split_by or "the whole run", []).append(r.rank)
    if len(ways) < 2:
        return None
    each = "; ".join(
        f"{how} on rank{'s' if len(rs) > 1 else ''} {', '.join(map(str, rs))}"
        for how, rs in ways.items()
    )
    return (
        f"the ranks' iterations were found in different ways ({each}): those cut "
        "differently are not the same work, though compared by position"
    )


def section(
    identity: JobIdentity, ranks: Sequence[RankFigures], sizes_note: str | None = None
) -> JobSection:
    """The job section of the ranks present (sorted by rank); ``sizes_note``: what the traces'
    format says of collective message sizes when they record none (an nsys export's NVTX)."""
    ranks = sorted(ranks, key=lambda r: r.rank)
    # A rank with no timed GPU step (a CPU-only or damaged trace) is compared like an absent one:
    # the others' iterations are still the job's, and the notes name it.
    timed = [r for r in ranks if r.aggregated_steps] or ranks
    untimed = [r.rank for r in ranks if r not in timed]
    order, keyed, how = aligned(timed)
    cells, rows = cells_of(order, keyed)
    straggler = straggler_of(timed, cells, rows) if len(timed) > 1 else None
    names = [r.gpu_name for r in ranks if r.gpu_name]
    notes = []
    multi = [r.rank for r in ranks if r.devices > 1]
    if multi:
        notes.append(
            f"ranks {', '.join(map(str, multi))} ran on several GPUs: their figures are of the busiest"
        )
    if untimed:
        which = ", ".join(map(str, untimed))
        notes.append(
            f"rank{'s' if len(untimed) > 1 else ''} {which}: no GPU activity with timestamps in "
            "the aggregated iterations (see that trace's own notes), so left out of the "
            "per-iteration figures"
        )
    if (split := _split_note(timed)) is not None:
        notes.append(split)
    if not cells:
        notes.append(
            "no per-launch GPU timestamps, or no iteration every rank ran: no per-iteration figures"
        )
    return JobSection(
        identity=identity,
        verdict=verdict(ranks),
        ranks=_rank_rows(ranks, cells),
        iterations=tuple(rows),
        cells=tuple(cells),
        straggler=straggler,
        bandwidth=bandwidth(
            [(r.rank, r.calls) for r in ranks], names, _sizes_note(ranks, sizes_note)
        ),
        matching=how,
        step_ns=mean([float(r.step_ns) for r in rows]),
        wait_ns=mean([float(r.median_wait_ns) for r in rows]) if len(timed) > 1 else None,
        matrix_unit=ranks[0].matrix_unit if ranks else "Tensor Cores",
        notes=tuple(notes),
        untimed=tuple(untimed),
    )
