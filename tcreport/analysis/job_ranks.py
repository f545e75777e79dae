"""One rank of a distributed job, reduced to the figures the job analysis compares across ranks.

A job of 64 ranks cannot keep 64 analysed runs in memory (each holds its ops, kernels and step
rows; the traces themselves are far larger). So each rank is analysed on its own, exactly as a
single trace is (:func:`tcreport.analysis.result.compute`), and only what the job section needs is
kept: its Tensor Core figures, one :class:`RankStep` per iteration, GPU time per kernel and per op
name (to say what a slow rank spent its extra time on) and its collective calls with their sizes.
These are small, picklable values: a rank can be analysed in another process or on a Dask worker.

A rank's iterations are those of its busiest GPU (the one with the most compute in its steps): a
PyTorch rank drives one GPU, and a trace that touched another (a stray copy) must not split it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np
import pyarrow as pa

from tcreport.analysis import activity
from tcreport.analysis.derived import step_idle_ns
from tcreport.analysis.result import Analysis
from tcreport.analysis.slicing import method_text
from tcreport.analysis.steps import StepRow
from tcreport.analysis.violation import Violation
from tcreport.model import Distributed, IterationMethod, Run

#: The methods that cut a run at its ``ProfilerStep#N`` ranges (whose numbers label the steps)
_STEP_METHODS = (IterationMethod.PROFILER_STEP, IterationMethod.PROFILER_STEP_RANGES)


@dataclass(frozen=True)
class RankStep:
    """One iteration of one rank, on its busiest GPU; times in ns.

    ``span_ns`` is first to last GPU activity (HTA's span); it splits into compute, exposed
    communication, exposed memory and idle. ``communication_total_ns`` is the union of the
    collectives, hidden or not; ``compute_in_collectives_ns`` the compute that ran beside them.
    """

    iteration: int  # the rank's own iteration number (0 = its first)
    label: str | None  # "ProfilerStep#551" where the trace numbers its steps
    aggregated: bool
    span_ns: int
    window_ns: int | None  # to the next step's first activity (None for the last)
    compute_ns: int
    tc_compute_ns: int
    communication_ns: int  # exposed: no compute beside it
    communication_total_ns: int
    compute_in_collectives_ns: int
    memory_ns: int  # exposed
    memory_total_ns: int
    idle_ns: int
    host_cause: str | None  # the host range covering most of its host-bound idle time

    @property
    def step_ns(self) -> int:
        """The GPU step time: the window where there is a next step, else the span."""
        return self.window_ns if self.window_ns is not None else self.span_ns

    @property
    def own_ns(self) -> int:
        """Time outside collectives: what the rank itself spent (compute, copies, idle) before
        the others could go on. The straggler is the rank with the most."""
        return self.span_ns - self.communication_total_ns


@dataclass(frozen=True)
class NameTime:
    name: str
    gpu_ns: int


@dataclass(frozen=True)
class RankFigures:
    """What the job analysis keeps of one rank."""

    rank: int
    file: str
    distributed: Distributed | None
    gpu_name: str | None
    device_id: int | None
    devices: int  # GPUs the rank's steps ran on (1 for a PyTorch rank)
    matrix_unit: str  # "Tensor Cores", "AMD Matrix Cores"
    tc_kernel_ns: int | None
    gpu_kernel_ns: int | None
    unknown_kernel_ns: int | None
    eligible_gpu_ns: int | None
    eligible_not_using_gpu_ns: int | None
    tc_share: float | None
    iterations_aggregated: int | None
    steps: tuple[RankStep, ...]
    kernels: tuple[NameTime, ...]  # compute kernels (no collectives), aggregated iterations
    ops: tuple[NameTime, ...]  # ops with GPU time, aggregated iterations
    calls: pa.Table | None  # collective calls with their sizes (analysis.collectives.calls)
    finding_ids: tuple[str, ...] = ()  # the rank's own findings, in their order
    #: the rank's analysis' broken invariants (analysis.invariants): the job lists them
    violations: tuple[Violation, ...] = ()
    #: how its iterations were found (``key node 'train_step'``, ``ProfilerStep#N ranges``)
    split_by: str | None = None

    @property
    def aggregated_steps(self) -> tuple[RankStep, ...]:
        return tuple(s for s in self.steps if s.aggregated)


def _labels(run: Run, a: Analysis, count: int) -> list[str | None]:
    """``ProfilerStep#N`` of each iteration, where the analysis split the run by those steps and
    counted as many as the trace has (iteration k is the k-th step in time)."""
    it = run.iterations
    if it is None or a.iterations.info.method not in _STEP_METHODS or it.num_rows != count:
        return [None] * count
    ordered = it.sort_by([("start_ns", "ascending")]).column("iteration").to_pylist()
    return [f"ProfilerStep#{n}" for n in ordered]


def _busiest(steps: tuple[StepRow, ...]) -> int | None:
    compute: dict[int | None, int] = {}
    for s in steps:  # one per (iteration, GPU): small
        compute[s.device_id] = compute.get(s.device_id, 0) + s.tc_compute_ns + s.other_compute_ns
    return max(compute, key=lambda d: (compute[d], -(d or 0))) if compute else None


def _step(s: StepRow, label: str | None, aggregated: bool) -> RankStep:
    top = s.host_causes[0].name if s.host_causes else None
    return RankStep(
        iteration=s.iteration,
        label=label,
        aggregated=aggregated,
        span_ns=s.span_ns,
        window_ns=s.window_ns,
        compute_ns=s.compute_ns,
        tc_compute_ns=s.tc_compute_ns,
        communication_ns=s.communication_ns,
        communication_total_ns=s.communication_total_ns,
        compute_in_collectives_ns=s.communication_overlap_ns,
        memory_ns=s.memory_ns,
        memory_total_ns=s.memory_total_ns,
        idle_ns=step_idle_ns(s),
        host_cause=top,
    )


def _kernel_times(a: Analysis) -> tuple[NameTime, ...]:
    """GPU time per kernel name (a name whose launches got different verdicts is several rows of
    the breakdown, one per verdict; a rank's time in it is their sum), collectives left out."""
    totals: dict[str, int] = {}
    for k in a.breakdown.kernels:  # one per kernel name and verdict: small
        totals[k.name] = totals.get(k.name, 0) + k.gpu_ns
    names = list(totals)
    coll = activity.is_collective(pa.array(names, pa.string())) if names else np.zeros(0, bool)
    return tuple(
        NameTime(n, totals[n])
        for n, c in zip(names, coll.tolist(), strict=True)
        if not c and totals[n] > 0
    )


def _op_times(a: Analysis) -> tuple[NameTime, ...]:
    totals: dict[str, int] = {}
    for o in a.breakdown.ops:  # one per op row of the analysis: its per-name figures
        if o.gpu_ns:
            totals[o.name] = totals.get(o.name, 0) + o.gpu_ns
    return tuple(NameTime(n, t) for n, t in totals.items())


def rank_figures(
    rank: int, file: str, a: Analysis, run: Run, finding_ids: tuple[str, ...] = ()
) -> RankFigures:
    """The job's figures of one analysed rank (``run``: the run the analysis was made from)."""
    rows = a.steps.rows
    device = _busiest(rows)
    mine = tuple(s for s in rows if s.device_id == device)
    aggregated = {r.iteration for r in a.iterations.rows if r.aggregated}
    count = len(a.iterations.rows)
    labels = _labels(run, a, count) if count else []
    whole = a.iterations.whole_run
    steps = tuple(
        _step(s, labels[s.iteration] if s.iteration < len(labels) else None,
              whole or s.iteration in aggregated)
        for s in mine
    )  # fmt: skip
    gpus = {g.device_id: g.name for g in a.meta.gpus}
    t = a.time
    return RankFigures(
        rank=rank,
        file=file,
        distributed=a.meta.distributed,
        gpu_name=gpus.get(device) if device is not None else next(iter(gpus.values()), None),
        device_id=device,
        devices=len({s.device_id for s in rows}),
        matrix_unit=a.verdict.words.unit,
        tc_kernel_ns=t.tc_kernel_ns,
        gpu_kernel_ns=t.gpu_kernel_ns,
        unknown_kernel_ns=t.unknown_kernel_ns,
        eligible_gpu_ns=a.verdict.eligible_gpu_ns,
        eligible_not_using_gpu_ns=a.verdict.eligible_not_using_gpu_ns,
        tc_share=a.verdict.tc_share,
        iterations_aggregated=a.iterations.info.aggregated,
        steps=steps,
        kernels=_kernel_times(a),
        ops=_op_times(a),
        calls=a.communication.calls,
        finding_ids=finding_ids,
        violations=a.violations,
        split_by=method_text(a.iterations.info),
    )


class KernelTimes(Protocol):
    """A rank's kernel time and its matrix-unit part (:class:`RankFigures`, the job's rank rows)."""

    @property
    def gpu_kernel_ns(self) -> int | None: ...

    @property
    def tc_kernel_ns(self) -> int | None: ...


_K = TypeVar("_K", bound=KernelTimes)


def with_kernel_times(ranks: Sequence[_K]) -> list[_K]:
    """The ranks whose kernel time and matrix-unit kernel time are both known."""
    return [r for r in ranks if r.gpu_kernel_ns and r.tc_kernel_ns is not None]


def weighted_tc_share(ranks: Sequence[KernelTimes]) -> tuple[float | None, int, int]:
    """The job's matrix-unit share, time-weighted: the matrix-unit kernel time over the kernel
    time of the ranks that hold both (and those two sums). The job verdict's figure, and a job
    diff's over the ranks it compares."""
    known = with_kernel_times(ranks)
    tc = sum(r.tc_kernel_ns or 0 for r in known)
    total = sum(r.gpu_kernel_ns or 0 for r in known)
    return (tc / total if total else None), tc, total
