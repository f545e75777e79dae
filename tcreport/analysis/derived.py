"""Figures derived from the headline ones: GPU busy share, per-iteration stacks per GPU, the
iterations that stand out, and figures per aggregated iteration.

Each had two or three definitions before (the HTML card, the low-utilisation finding and the
iteration chart each worked its own out, so one page said "GPU busy 59.5 %" beside "the GPU is
busy 55.5 %"). They live here once; rules, renderers, diff and batch read the result.

Per-iteration idle time has one source where kernels carry per-launch timestamps: the step
breakdown (:mod:`tcreport.analysis.steps`), an interval sweep that counts overlapped work once.
:func:`with_steps` puts its figures on the iteration rows; the older estimate (iteration duration
minus kernel and memory time summed over launches) is kept only for inputs without timestamps
(DLProf's aggregated reports), and every row says which of the two it holds (``idle_estimated``).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.compute as pc

from tcreport._group_by import aggregate_by
from tcreport.analysis.figures import TimeFigures
from tcreport.analysis.iterations import Selection
from tcreport.analysis.steps import StepRow
from tcreport.analysis.timeline import TimelineFigures
from tcreport.model import IterationInfo, Run, RunMeta

#: An iteration this many times slower (or faster) than the median of the aggregated ones stands
#: out: steady training steps vary by a few per cent, a recompilation or a data stall by far more.
OUTLIER_FACTOR = 1.5
#: Fewer iterations than this have no meaningful median.
OUTLIER_MIN_ITERATIONS = 4
#: A first aggregated iteration this many times the median of the others is warm-up (cuDNN
#: autotuning, XLA / torch.compile compilation, allocator growth), not a training step: an outlier
#: whatever :data:`OUTLIER_MIN_ITERATIONS` says, from this many aggregated iterations on.
WARMUP_RATIO = 2.0
WARMUP_MIN_ITERATIONS = 3
#: Tensor Core share of kernel time the report calls good (most GEMM/conv time on TC) or low.
TC_SHARE_GOOD = 0.5
TC_SHARE_LOW = 0.2


@dataclass(frozen=True)
class GpuBusy:
    """How much of the aggregated range the GPUs computed.

    ``share`` is the profiler's own figure where it states one; else busy time (the union of
    kernel intervals per GPU, or summed kernel time without timestamps, an upper bound) over the
    aggregated wall time times the number of GPUs. ``None`` without a range or kernel time."""

    share: float | None
    busy_ns: int | None  # summed over GPUs
    range_ns: int | None  # the aggregated wall time (per GPU)
    devices: int
    source: str  # how ``share`` was obtained, for the report

    @property
    def idle_wall_ns(self) -> int | None:
        """Wall time in which an average GPU computed nothing."""
        if self.range_ns is None or self.share is None:
            return None
        return max(0, round(self.range_ns * (1.0 - self.share)))


def gpu_busy(meta: RunMeta, time: TimeFigures, timeline: TimelineFigures | None) -> GpuBusy:
    devices = max(1, timeline.devices if timeline is not None else len(meta.gpus))
    wall = time.wall_ns
    busy = timeline.busy_ns if timeline is not None else time.gpu_kernel_ns
    reported = meta.reported.gpu_utilization
    if reported is not None:
        return GpuBusy(
            min(1.0, max(0.0, reported)), busy, wall, devices, "as the profiler reported"
        )
    if not wall or busy is None:
        return GpuBusy(None, busy, wall, devices, "")
    how = (
        "kernels running (union per GPU) over the aggregated range"
        if timeline is not None
        else "estimate: summed kernel time over the aggregated range"
    )
    return GpuBusy(min(1.0, busy / (wall * devices)), busy, wall, devices, how)


@dataclass(frozen=True)
class GpuTime:
    """One iteration's GPU time as the iteration chart stacks it: Tensor Core kernels, other
    kernels (collectives and kernels of unknown verdict included), memory copies/sets, idle.

    From the step breakdown where there is one: each instant counted once (compute before
    communication before memory), so the parts sum to the GPU span exactly. Without per-launch
    timestamps: kernel and memory time summed over launches, and the estimated idle."""

    tc_ns: int
    other_ns: int
    memory_ns: int
    idle_ns: int

    @property
    def total_ns(self) -> int:
        return self.tc_ns + self.other_ns + self.memory_ns + self.idle_ns

    def __add__(self, o: GpuTime) -> GpuTime:
        return GpuTime(
            self.tc_ns + o.tc_ns,
            self.other_ns + o.other_ns,
            self.memory_ns + o.memory_ns,
            self.idle_ns + o.idle_ns,
        )


def step_idle_ns(s: StepRow) -> int:
    """A step's idle time: launch-bound plus host-bound gaps inside its GPU span."""
    return s.idle_launch_ns + s.idle_host_ns


def step_time(s: StepRow) -> GpuTime:
    """A step's parts as the chart's four: unknown-verdict compute and exposed communication
    join the other kernels, as they do in the kernel-time columns."""
    other = s.other_compute_ns + s.unknown_compute_ns + s.communication_ns
    return GpuTime(s.tc_compute_ns, other, s.memory_ns, step_idle_ns(s))


@dataclass(frozen=True)
class IterationStack:
    """One GPU's share of one iteration: what its kernels and copies took, and its idle time."""

    device_id: int | None
    tc_ns: int  # kernel time summed over launches, like every kernel-time figure
    non_tc_ns: int
    memory_ns: int
    kernel_count: int
    #: Idle time. Measured where ``step`` is set: the step breakdown's launch- and host-bound gaps
    #: inside the GPU span of the iteration's work. Otherwise an estimate: the iteration's wall
    #: time minus kernel and memory time (too low where streams overlap).
    idle_ns: int
    step: StepRow | None = None  # this (iteration, GPU) in the step breakdown

    @property
    def idle_estimated(self) -> bool:
        return self.step is None

    @property
    def stacked(self) -> GpuTime:
        if self.step is not None:
            return step_time(self.step)
        return GpuTime(self.tc_ns, self.non_tc_ns, self.memory_ns, self.idle_ns)


@dataclass(frozen=True)
class IterationRow:
    iteration: int
    duration_ns: int
    tc_ns: int  # summed over GPUs, as every figure is
    non_tc_ns: int
    memory_ns: int
    kernel_count: int
    aggregated: bool
    #: one stack per GPU when the run has several (a wall-clock row cannot hold two GPUs' time)
    gpus: tuple[IterationStack, ...] = ()
    outlier: bool = False
    #: the step breakdown of this iteration, one row per GPU with timed activity (:func:`with_steps`);
    #: () without per-launch timestamps, and the idle time is then an estimate
    steps: tuple[StepRow, ...] = ()
    #: the run's last iteration of several: its window ends at the trace's last event, not at a
    #: next step's start, so its host duration is not like the others' (variance leaves it out)
    open_end: bool = False

    @property
    def idle_ns(self) -> int:
        """Idle GPU time in the iteration: per GPU where there are several, summed; measured by
        the step breakdown where it covers the iteration (see :attr:`idle_estimated`)."""
        if self.gpus:
            return sum(g.idle_ns for g in self.gpus)
        if self.steps:
            return sum(step_idle_ns(s) for s in self.steps)
        return max(0, self.duration_ns - self.tc_ns - self.non_tc_ns - self.memory_ns)

    @property
    def idle_estimated(self) -> bool:
        """Whether :attr:`idle_ns` is (partly) the estimate rather than the step breakdown's."""
        if self.gpus:
            return any(g.idle_estimated for g in self.gpus)
        return not self.steps

    @property
    def span_ns(self) -> int | None:
        """The GPU span of the iteration's work (first to last activity), summed over GPUs;
        ``None`` without the step breakdown."""
        return sum(s.span_ns for s in self.steps) if self.steps else None

    @property
    def gpu_step_ns(self) -> int | None:
        """The GPU step time: the slowest GPU's window, from the iteration's first GPU activity to
        the next iteration's first (analysis.windows); ``None`` for the last iteration (its
        window has no end) and without the step breakdown. Where the host runs ahead of the GPU,
        or waits on it, host step lengths (``duration_ns``) swing while this stays steady."""
        ends = [s.window_ns for s in self.steps]
        known = [e for e in ends if e is not None]
        return max(known) if known and len(known) == len(ends) else None

    @property
    def idle_split_ns(self) -> tuple[int, int] | None:
        """(launch-bound, host-bound) idle, summed over GPUs; ``None`` unless all of it is measured."""
        if self.idle_estimated:
            return None
        return (
            sum(s.idle_launch_ns for s in self.steps),
            sum(s.idle_host_ns for s in self.steps),
        )

    @property
    def stacked(self) -> GpuTime:
        """The chart's stack, summed over GPUs (:class:`GpuTime`)."""
        if self.gpus:
            return sum((g.stacked for g in self.gpus), GpuTime(0, 0, 0, 0))
        if self.steps:
            return sum((step_time(s) for s in self.steps), GpuTime(0, 0, 0, 0))
        return GpuTime(self.tc_ns, self.non_tc_ns, self.memory_ns, self.idle_ns)

    @property
    def per_gpu_divisor(self) -> int:
        return max(1, len(self.gpus))


def _sums(
    table: pa.Table, keys: list[str], cols: dict[str, str]
) -> dict[tuple[object, ...], dict[str, int]]:
    g = aggregate_by(table, keys, [(c, "sum") for c in cols.values()], use_threads=False)
    out: dict[tuple[object, ...], dict[str, int]] = {}
    for r in g.to_pylist():  # one row per (iteration, GPU): small
        out[tuple(r[k] for k in keys)] = {n: int(r[f"{c}_sum"] or 0) for n, c in cols.items()}
    return out


def iteration_rows(run: Run, sel: Selection) -> tuple[IterationRow, ...]:
    """Per-iteration stacks (TC / non-TC / memory) from rows that carry an iteration number,
    per GPU when the kernels ran on several; outliers marked (:func:`outliers`)."""
    it = run.iterations
    if it is None or it.num_rows == 0 or run.kernels is None:
        return ()
    k = run.kernels.select(["iteration", "device_id", "duration_ns", "uses_tc", "calls"])
    if k.column("iteration").null_count:  # after the select: kernel tables are wide
        k = k.filter(pc.is_valid(k.column("iteration")))
    dur = k.column("duration_ns")
    kt = pa.table(
        {
            "iteration": k.column("iteration"),
            "device": k.column("device_id"),
            "tc": pc.if_else(pc.fill_null(k.column("uses_tc"), False), dur, 0),
            "all": dur,
            "calls": k.column("calls"),
        }
    )
    kg = _sums(kt, ["iteration", "device"], {"tc": "tc", "all": "all", "calls": "calls"})
    mg: dict[tuple[object, ...], dict[str, int]] = {}
    if run.memory is not None and run.memory.num_rows:
        m = run.memory.select(["iteration", "device_id", "duration_ns"])
        if m.column("iteration").null_count:  # a filter copies even when it keeps every row
            m = m.filter(pc.is_valid(m.column("iteration")))
        mt = pa.table(
            {
                "iteration": m.column("iteration"),
                "device": m.column("device_id"),
                "dur": m.column("duration_ns"),
            }
        )
        mg = _sums(mt, ["iteration", "device"], {"mem": "dur"})
    found = {d for _, d in kg} | {d for _, d in mg}
    devices: list[int | None] = sorted(
        (d if isinstance(d, int) else None for d in found), key=lambda d: (d is None, d or 0)
    )
    lo, hi = sel.info.start or 0, sel.info.stop if sel.info.stop is not None else it.num_rows - 1
    rows: list[IterationRow] = []
    for r in it.sort_by("iteration").to_pylist():  # one per iteration: small
        i, duration = r["iteration"], int(r["end_ns"] - r["start_ns"])
        stacks = []
        for d in devices:
            kr, mem = kg.get((i, d), {}), mg.get((i, d), {}).get("mem", 0)
            tc, total = kr.get("tc", 0), kr.get("all", 0)
            idle = max(0, duration - total - mem)
            stacks.append(IterationStack(d, tc, total - tc, mem, kr.get("calls", 0), idle))
        rows.append(
            IterationRow(
                iteration=i,
                duration_ns=duration,
                tc_ns=sum(s.tc_ns for s in stacks),
                non_tc_ns=sum(s.non_tc_ns for s in stacks),
                memory_ns=sum(s.memory_ns for s in stacks),
                kernel_count=sum(s.kernel_count for s in stacks),
                aggregated=lo <= i <= hi,
                gpus=tuple(stacks) if len(stacks) > 1 else (),
            )
        )
    if len(rows) > 1:
        rows[-1] = replace(rows[-1], open_end=True)
    out = outliers(rows)
    return tuple(r if r.iteration not in out else _flag(r) for r in rows)


def with_steps(
    rows: tuple[IterationRow, ...], steps: tuple[StepRow, ...]
) -> tuple[IterationRow, ...]:
    """The rows with the step breakdown's figures in place of the estimated idle, per
    (iteration, GPU) where the breakdown has that pair; a pair it lacks (no timed activity of
    that iteration on that GPU) keeps the estimate, flagged as such."""
    if not steps:
        return rows
    by_iter: dict[int, list[StepRow]] = {}
    for s in steps:  # one per (iteration, GPU): small
        by_iter.setdefault(s.iteration, []).append(s)
    out = []
    for r in rows:
        mine = tuple(by_iter.get(r.iteration, ()))
        if not mine:
            out.append(r)
            continue
        dev = {s.device_id: s for s in mine}
        gpus = tuple(_measured(g, dev.get(g.device_id)) for g in r.gpus)
        out.append(replace(r, steps=mine, gpus=gpus))
    flagged = outliers(out)  # again: on the GPU step time, now that the rows have it
    return tuple(replace(r, outlier=r.iteration in flagged) for r in out)


def _measured(g: IterationStack, s: StepRow | None) -> IterationStack:
    return g if s is None else replace(g, idle_ns=step_idle_ns(s), step=s)


@dataclass(frozen=True)
class StepIdle:
    """The step breakdown's idle time over the aggregated iterations, summed over GPUs: the one
    launch-bound figure the launch-bound finding (GP002) and the step chart share."""

    span_ns: int  # GPU spans of the aggregated iterations' work
    launch_ns: int  # idle in gaps under timeline.LAUNCH_GAP_NS
    host_ns: int  # idle in longer gaps
    devices: int

    @property
    def launch_share(self) -> float | None:
        return self.launch_ns / self.span_ns if self.span_ns > 0 else None


def aggregated_idle(steps: tuple[StepRow, ...], info: IterationInfo) -> StepIdle | None:
    """Sum the step rows of the aggregated iterations (``info.start`` to ``info.stop``; a run
    without iterations is one step, iteration 0); ``None`` without any."""
    lo = info.start or 0
    hi = info.stop if info.stop is not None else 1 << 31
    kept = [s for s in steps if lo <= s.iteration <= hi]
    if not kept:
        return None
    return StepIdle(
        span_ns=sum(s.span_ns for s in kept),
        launch_ns=sum(s.idle_launch_ns for s in kept),
        host_ns=sum(s.idle_host_ns for s in kept),
        devices=len({s.device_id for s in kept}),
    )


def mean_gpu_span(rows: Sequence[IterationRow], gpus: int) -> tuple[float, float, float]:
    """Mean GPU span, launch-bound idle and host-bound idle per (iteration, GPU) over ``rows``
    (the iteration chart's note); zeros for rows without a step breakdown."""
    n = max(1, len(rows) * max(1, gpus))
    span = sum(r.span_ns or 0 for r in rows) / n
    launch = sum((r.idle_split_ns or (0, 0))[0] for r in rows) / n
    host = sum((r.idle_split_ns or (0, 0))[1] for r in rows) / n
    return span, launch, host


def per_iteration(ns: int | None, info: IterationInfo) -> float | None:
    """A time per aggregated iteration (the diff, the cards and the findings compare runs of
    different lengths this way); ``None`` when the time or the iteration count is unknown."""
    n = info.aggregated or 0
    return ns / n if ns is not None and n > 0 else None


def _flag(r: IterationRow) -> IterationRow:
    return replace(r, outlier=True)


def step_times(rows: Sequence[IterationRow]) -> tuple[dict[int, int], str]:
    """Per iteration, the step time that outliers and the variance rule judge, and which it is:
    the GPU step time (:attr:`IterationRow.gpu_step_ns`) where enough iterations have one, since
    host step lengths swing when the host runs ahead of the GPU or waits on it while the GPU's
    pace stays steady; else the host (wall-clock) duration."""
    gpu = {r.iteration: r.gpu_step_ns for r in rows if r.gpu_step_ns is not None}
    # the run's last step has no GPU step time (its window has no next step to end at), so "every
    # row has one" leaves the last row out: a 4-step run whose host ran ahead has 3 GPU step times
    # and a last host "step" that runs to the end of the GPU backlog, which must not be judged
    last = max((r.iteration for r in rows), default=None)
    every = all(r.gpu_step_ns is not None for r in rows if r.iteration != last)
    if len(gpu) >= OUTLIER_MIN_ITERATIONS or (gpu and every):
        return {i: int(v) for i, v in gpu.items() if v is not None}, "GPU"
    # likewise the last host window runs to the trace's end, not to a next step's start
    return {r.iteration: r.duration_ns for r in rows if not r.open_end}, "host"


def warmup(rows: Sequence[IterationRow]) -> tuple[IterationRow, float] | None:
    """(first aggregated iteration, median of the other aggregated ones' host durations) when the
    first is a warm-up (:data:`WARMUP_RATIO`); the warm-up finding (IT002) and the rows'
    ``outlier`` flag both read this, so the finding never names a row the table calls steady."""
    kept = [r for r in rows if r.aggregated and r.duration_ns > 0]
    if len(kept) < WARMUP_MIN_ITERATIONS:
        return None
    median = statistics.median(r.duration_ns for r in kept[1:])
    return (kept[0], float(median)) if 0 < WARMUP_RATIO * median <= kept[0].duration_ns else None


def outliers(rows: list[IterationRow] | tuple[IterationRow, ...]) -> set[int]:
    """Iterations :data:`OUTLIER_FACTOR` times slower or faster than the median (of the
    aggregated ones when there are enough, else of all), by :func:`step_times`, and the
    :func:`warmup` iteration."""
    times, _ = step_times(rows)
    base = sorted(times[r.iteration] for r in rows if r.aggregated and r.iteration in times)
    if len(base) < OUTLIER_MIN_ITERATIONS:
        base = sorted(times.values())
    found = {w[0].iteration} if (w := warmup(rows)) is not None else set()
    if len(base) < OUTLIER_MIN_ITERATIONS:
        return found
    median = base[len(base) // 2]
    f = OUTLIER_FACTOR
    return found | {i for i, t in times.items() if median and (t > f * median or t * f < median)}
