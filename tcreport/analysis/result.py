"""One run, analysed: classification, iteration slicing, figures and per-iteration rows.

This is the single object findings rules and renderers read. It is built once per run by
:func:`compute`; nothing downstream goes back to the raw tables except through the evidence keys
(op ids, kernel names) that rows carry.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.analysis import (
    _codes,
    autotune,
    communication,
    compilation,
    derived,
    figures,
    iterations,
    key_nodes,
    timeline,
    vendor,
)
from tcreport.analysis.communication import Communication
from tcreport.analysis.compilation import Compilation
from tcreport.analysis.counters import CounterDisagreement
from tcreport.analysis.derived import GpuBusy, IterationRow
from tcreport.analysis.devices import DeviceRow, device_rows
from tcreport.analysis.figures import KernelRow, OpRow, TcFigures, TimeFigures
from tcreport.analysis.groups import OpTypeRow, op_type_rows, scope_rows
from tcreport.analysis.host_time import HostRow, HostTime, host_rows, host_time, is_cpu_only
from tcreport.analysis.iteration_timeline import IterationTimeline
from tcreport.analysis.iterations import Selection
from tcreport.analysis.key_nodes import KeyNodeCandidate
from tcreport.analysis.overlap import CommOverlap
from tcreport.analysis.steps import StepRow
from tcreport.analysis.tc_kernels import Agreement
from tcreport.analysis.throughput import Throughput
from tcreport.analysis.timeline import HostMarkers, TimelineFigures
from tcreport.analysis.vendor import Vendor
from tcreport.analysis.why_not import WhyNot
from tcreport.model import Run, RunMeta


@dataclass(frozen=True)
class Analysis:
    meta: RunMeta
    selection: Selection
    time: TimeFigures
    tc: TcFigures
    ops: tuple[OpRow, ...]
    op_types: tuple[OpTypeRow, ...]
    kernels: tuple[KernelRow, ...]
    iterations: tuple[IterationRow, ...]
    why_not: tuple[WhyNot, ...]
    kernel_agreement: Agreement | None
    has_kernels: bool
    has_ops: bool
    timeline: TimelineFigures | None = None  # None without per-launch kernel timestamps
    data_loader_names: tuple[str, ...] = ()  # host ranges/ops that name a data loader
    data_loader_ns: int | None = None  # time those ranges cover (interval union), when timed
    autotuned_ops: tuple[str, ...] = ()  # op names whose kernels span several cuDNN algorithms
    devices: tuple[DeviceRow, ...] = ()  # per-GPU figures (empty without kernel rows)
    # Kernels whose name verdict Nsight Compute's tensor-pipe counters contradict (counters.py).
    counter_disagreements: tuple[CounterDisagreement, ...] = ()
    busy: GpuBusy | None = None  # GPU busy share of the aggregated range (derived.gpu_busy)
    # whether any op row carries a data type / input shapes: an export whose ranges hold none
    # says so instead of showing empty columns
    ops_have_dtype: bool = False
    ops_have_shapes: bool = False
    scopes: tuple[OpTypeRow, ...] = ()  # time by layer/module, when scopes cover most of it
    # tcreport's own op verdicts against the profiler's TC Eligible / Using TC (which decide):
    # None where the input states neither
    op_eligibility_agreement: Agreement | None = None
    op_tc_agreement: Agreement | None = None
    # Whose GPU ran it, and what its matrix units are called ("AMD Matrix Cores" on ROCm).
    vendor: Vendor = Vendor.UNKNOWN
    # XLA / torch.compile compilation inside the aggregated range (analysis.compilation)
    compile_names: tuple[str, ...] = ()
    compile_ns: int | None = None
    # NCCL/collective kernel time and its exposed part (analysis.communication); None: no kernels
    communication: Communication | None = None
    # CPU-only capture (analysis.host_time.is_cpu_only): no Tensor Core verdict, host-time rows
    cpu_only: bool = False
    host_ops: tuple[HostRow, ...] = ()
    host_op_types: tuple[HostRow, ...] = ()
    host_time: HostTime | None = None  # host time in ops, nested ops once (host_time.host_time)
    # key nodes that could split a run that was not split, with their evidence (analysis.key_nodes)
    key_node_suggestions: tuple[KeyNodeCandidate, ...] = ()
    # Step breakdown per (iteration, GPU) from per-launch timestamps (steps.py); () without them.
    steps: tuple[StepRow, ...] = ()
    # Collective time, its overlap with compute and its streams (overlap.py); None without any.
    comm_overlap: CommOverlap | None = None
    # FLOPs from recorded shapes, TFLOP/s, % of peak, MFU (throughput.py); None without op rows.
    throughput: Throughput | None = None
    # One representative iteration as drawable blocks (iteration_timeline.py); None without
    # per-launch timestamps.
    iteration_timeline: IterationTimeline | None = None

    @property
    def eligible_not_using_per_iteration_ns(self) -> float | None:
        """Eligible GPU time not on Tensor Cores per aggregated iteration (the HTML card)."""
        return derived.per_iteration(self.tc.eligible_not_using_gpu_ns, self.selection.info)

    @property
    def matrix_unit(self) -> str:
        return vendor.MATRIX_UNIT[self.vendor]

    @property
    def matrix_unit_one(self) -> str:
        """As an adjective: "Tensor Core share", "AMD Matrix Core share"."""
        return self.matrix_unit.removesuffix("s")


def run_vendor(run: Run) -> Vendor:
    """The run's GPU vendor (:mod:`tcreport.analysis.vendor`), from metadata, else kernel names."""
    names = _codes.as_strings(run.kernels.column("name")) if run.kernels is not None else []
    return vendor.detect(run.meta, (n for n in names if n))


def _classify(run: Run, gpu_vendor: Vendor) -> Run:
    from tcreport.analysis import eligibility, tc_kernels, triton_ops

    pack = tc_kernels.pack_for(gpu_vendor.value)
    kernels = tc_kernels.classify_kernels(run.kernels, pack) if run.kernels is not None else None
    kernels = triton_ops.refine(kernels, run.ops, run.meta.gpus) if kernels is not None else None
    ops = eligibility.classify_ops(run.ops, kernels, judged=True) if run.ops is not None else None
    return run.replace(kernels=kernels, ops=ops)


def _agreement(kernels: pa.Table | None) -> Agreement | None:
    from tcreport.analysis import tc_kernels

    if kernels is None or kernels.column("profiler_uses_tc").null_count == kernels.num_rows:
        return None
    return tc_kernels.tc_agreement(kernels)


def _op_agreements(
    ops: pa.Table | None, kernels: pa.Table | None
) -> tuple[Agreement | None, Agreement | None]:
    from tcreport.analysis import eligibility

    if ops is None or ops.num_rows == 0:
        return None, None
    elig = (
        eligibility.eligibility_agreement(ops, kernels)
        if ops.column("profiler_tc_eligible").null_count < ops.num_rows
        else None
    )
    uses = (
        eligibility.op_tc_agreement(ops, kernels)
        if ops.column("profiler_uses_tc").null_count < ops.num_rows
        else None
    )
    return elig, uses


def _why_not(run: Run) -> tuple[WhyNot, ...]:
    from tcreport.analysis import why_not

    if run.ops is None or run.ops.num_rows == 0:
        return ()
    from tcreport.analysis.kernel_evidence import fp32_kernel_per_op, tf32_families

    ops = run.ops.append_column("fp32_kernel", fp32_kernel_per_op(run.ops, run.kernels))
    return tuple(
        why_not.explain(
            ops, run.meta.framework, run.meta.gpus, tf32_seen_in=tf32_families(run.kernels)
        )
    )


def _ranges_in(run: Run, sel: Selection) -> pa.Table | None:
    """Host ranges inside the aggregated iterations (ranges carry no iteration column)."""
    r, it = run.ranges, run.iterations
    if r is None or it is None or it.num_rows == 0 or not sel.sliced:
        return r
    lo, hi = sel.info.start or 0, sel.info.stop if sel.info.stop is not None else it.num_rows - 1
    kept = it.filter(
        pc.and_(
            pc.greater_equal(it.column("iteration"), lo), pc.less_equal(it.column("iteration"), hi)
        )
    )
    if kept.num_rows == 0:
        return r
    first, last = pc.min(kept.column("start_ns")).as_py(), pc.max(kept.column("end_ns")).as_py()
    inside = pc.and_(
        pc.greater_equal(r.column("start_ns"), first), pc.less_equal(r.column("start_ns"), last)
    )
    return r.filter(inside)


@dataclass(frozen=True)
class _StepParts:
    steps: tuple[StepRow, ...]
    timeline: IterationTimeline | None
    communication: CommOverlap | None


def _steps(
    run: Run,
    rows: tuple[IterationRow, ...],
    sel: Selection,
    timeline_iter: int | None,
    with_timeline: bool,
) -> _StepParts:
    """Step breakdown of every iteration (warm-up included, like the per-iteration rows), the
    communication overlap of the aggregated ones, and the timeline of the requested iteration,
    else of the median aggregated one: one activity collection and one sweep shared by the
    three, which is what keeps a multi-million-launch trace fast."""
    from tcreport.analysis import activity, iteration_timeline, overlap, steps

    whole_run = run.iterations is None or run.iterations.num_rows == 0
    act = activity.collect(run.kernels, run.memory)
    if act is None:
        return _StepParts((), None, None)
    breakdown, gaps = steps.breakdown_with_gaps(act, run.ranges, run.ops, whole_run, run.memory)
    info = sel.info
    span = (info.start or 0, info.stop if info.stop is not None else 1 << 31)
    comm = overlap.from_steps(act, run.kernels, breakdown, None if whole_run else span)
    if not with_timeline:  # only the HTML report draws it; it is the costly part on big traces
        pick: tuple[int, str] | None = None
    elif whole_run:
        pick = (0, "whole run")
    else:
        active = set(np.unique(act.iteration).tolist())
        pool = [r for r in rows if r.iteration in active]
        steady = [r for r in pool if r.aggregated] or pool
        pick = iteration_timeline.choose(
            {r.iteration: r.duration_ns for r in steady}
            | ({r.iteration: r.duration_ns for r in pool if r.iteration == timeline_iter}),
            timeline_iter,
        )
    tl = (
        iteration_timeline.build(act, run.kernels, run.ranges, run.ops, *pick, gaps=gaps)
        if pick is not None
        else None
    )
    return _StepParts(breakdown, tl, comm)


def _throughput(run: Run, time: TimeFigures, gpu_vendor: Vendor) -> Throughput | None:
    from tcreport.analysis import throughput

    k = run.kernels
    gpus = len(pc.unique(k.column("device_id")).drop_null()) if k is not None else 0
    unit = vendor.MATRIX_UNIT[gpu_vendor]
    return throughput.compute(run, time.wall_ns, time.tc_kernel_ns, max(1, gpus), unit)


def _suggestions(
    classified: Run, selection: Selection
) -> tuple[Selection, tuple[KeyNodeCandidate, ...]]:
    """Key nodes worth suggesting when the run was not split (or the given one never occurred)."""
    if selection.key_node_found and selection.info.method != "whole run":
        return selection, ()
    found = key_nodes.validated_candidates(classified)
    return dataclasses.replace(selection, candidates=tuple(c.name for c in found)), found


def _classified_share(run: Run) -> float | None:
    from tcreport.analysis import tc_kernels

    return tc_kernels.classified_share(run.kernels) if run.kernels is not None else None


@dataclass(frozen=True)
class _PerName:
    """The figures :func:`compute` makes beside the step analysis."""

    time: TimeFigures
    ops: list[OpRow]
    tc: TcFigures
    tl: TimelineFigures | None
    op_elig: Agreement | None
    op_uses: Agreement | None
    markers: HostMarkers
    cpu_only: bool
    host_ops: tuple[HostRow, ...]
    host_types: tuple[HostRow, ...]
    compiling: Compilation
    why_not: tuple[WhyNot, ...]
    throughput: Throughput | None


def _per_name(sliced: Run, selection: Selection, gpu_vendor: Vendor) -> _PerName:
    time = figures.time_figures(sliced)
    ops = figures.op_rows(sliced, time.gpu_kernel_ns)
    op_elig, op_uses = _op_agreements(sliced.ops, sliced.kernels)
    cpu_only = is_cpu_only(sliced.meta, time, ops)
    host_ops, host_types = host_rows(ops) if cpu_only else ((), ())
    return _PerName(
        time=time,
        ops=ops,
        tc=figures.tc_figures(sliced, time, ops, _classified_share(sliced)),
        tl=timeline.kernel_timeline(sliced.kernels),
        op_elig=op_elig,
        op_uses=op_uses,
        markers=timeline.host_markers(_ranges_in(sliced, selection), sliced.ops),
        cpu_only=cpu_only,
        host_ops=host_ops,
        host_types=host_types,
        compiling=compilation.compilation(_ranges_in(sliced, selection), sliced.ops),
        why_not=() if cpu_only else _why_not(sliced),
        throughput=_throughput(sliced, time, gpu_vendor),
    )


def compute(
    run: Run,
    key_node: str | None = None,
    iter_start: int | None = None,
    iter_stop: int | None = None,
    timeline_iter: int | None = None,
    with_timeline: bool = False,
) -> Analysis:
    """Analyse ``run``: classify, slice the iterations, compute every figure.

    ``with_timeline``: also lay out one iteration for the HTML report's timeline
    (:attr:`Analysis.iteration_timeline`); the other outputs do not draw it, and on a
    multi-million-launch trace it costs more than the rest of the step analysis."""
    from tcreport.analysis import counters

    gpu_vendor = run_vendor(run)
    run = run.replace(meta=vendor.resolve_gpus(run.meta, gpu_vendor))
    classified = _classify(run, gpu_vendor)
    full = classified
    sliced, selection = iterations.select(classified, key_node, iter_start, iter_stop)
    selection, suggestions = _suggestions(classified, selection)
    # Per-iteration rows need every iteration (warm-up included), so they come from the unsliced
    # run with the same boundaries.
    all_iters, _ = (
        iterations.select(full, key_node, None, None)
        if selection.info.total and (iter_start, iter_stop) != (None, None)
        else (sliced, selection)
    )
    iteration_rows = derived.iteration_rows(all_iters, selection)
    # The step analysis (a third of the time on big traces) shares nothing with the per-name
    # figures: it runs beside them in a second thread (numpy and Arrow release the GIL).
    with ThreadPoolExecutor(1, thread_name_prefix="tcreport-steps") as pool:
        steps_job = pool.submit(
            _steps, all_iters, iteration_rows, selection, timeline_iter, with_timeline
        )
        f = _per_name(sliced, selection, gpu_vendor)
        parts = steps_job.result()
    time, ops, tl, cpu_only = f.time, f.ops, f.tl, f.cpu_only
    return Analysis(
        meta=sliced.meta,
        selection=selection,
        time=time,
        tc=f.tc,
        ops=tuple(ops),
        op_types=tuple(op_type_rows(ops, time.gpu_kernel_ns)),
        kernels=tuple(figures.kernel_rows(sliced, time.gpu_kernel_ns)),
        iterations=derived.with_steps(iteration_rows, parts.steps),  # measured idle: one truth
        why_not=f.why_not,
        kernel_agreement=_agreement(sliced.kernels),
        has_kernels=sliced.kernels is not None,
        has_ops=sliced.ops is not None,
        timeline=tl,
        data_loader_names=f.markers.data_loader_names,
        data_loader_ns=f.markers.data_loader_ns,
        autotuned_ops=autotune.autotuned_ops(sliced.kernels, sliced.ops),
        devices=tuple(device_rows(sliced)),
        counter_disagreements=(
            counters.disagreements(sliced.kernels) if sliced.kernels is not None else ()
        ),
        busy=derived.gpu_busy(sliced.meta, time, tl),
        ops_have_dtype=any(o.dtype for o in ops),
        ops_have_shapes=any(o.input_shapes for o in ops),
        scopes=tuple(scope_rows(ops, time.gpu_kernel_ns)),
        op_eligibility_agreement=f.op_elig,
        op_tc_agreement=f.op_uses,
        vendor=gpu_vendor,
        compile_names=f.compiling.names,
        compile_ns=f.compiling.ns,
        communication=communication.communication(sliced.kernels, parts.communication),
        cpu_only=cpu_only,
        host_ops=f.host_ops,
        host_op_types=f.host_types,
        host_time=host_time(sliced.ops, ops) if cpu_only else None,
        key_node_suggestions=suggestions,
        steps=parts.steps,
        iteration_timeline=parts.timeline,
        comm_overlap=parts.communication,
        throughput=f.throughput,
    )


def classified_run(
    run: Run,
    key_node: str | None = None,
    iter_start: int | None = None,
    iter_stop: int | None = None,
) -> Run:
    """The run with every kernel's verdict, sliced to the aggregated iterations: the bulk rows an
    export writes (the :class:`Analysis` keeps only per-name rows)."""
    return classified_selection(run, key_node, iter_start, iter_stop)[0]


def classified_selection(
    run: Run,
    key_node: str | None = None,
    iter_start: int | None = None,
    iter_stop: int | None = None,
) -> tuple[Run, Selection]:
    """:func:`classified_run` and the iteration selection it made (to refuse options that
    selected nothing, as the reports do)."""
    gpu_vendor = run_vendor(run)
    run = run.replace(meta=vendor.resolve_gpus(run.meta, gpu_vendor))
    sliced, selection = iterations.select(
        _classify(run, gpu_vendor), key_node, iter_start, iter_stop
    )
    if not selection.key_node_found or selection.info.method == "whole run":
        selection, _ = _suggestions(sliced, selection)  # the names an error can offer
    return sliced, selection
