"""One run, analysed: a few sections, each built by the module that owns its figures.

:func:`compute` classifies the kernels and ops, slices the iterations the :class:`Slice` selects,
and builds the sections (:mod:`tcreport.analysis.sections`): the verdict, the times, where the
time goes, the iterations, the step breakdown, communication, throughput, host time, precision and
the signals only the finding rules read. Findings rules and renderers read this one object;
nothing downstream goes back to the raw tables except through the evidence keys (op ids, kernel
names) that rows carry.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.analysis import (
    _codes,
    activity,
    derived,
    eligibility,
    figures,
    host_wait,
    invariants,
    iteration_timeline,
    iterations,
    kernel_verdicts,
    key_nodes,
    overlap,
    readable_names,
    slicing,
    steps,
    tc_kernels,
    throughput,
    vendor,
)
from tcreport.analysis.derived import IterationRow
from tcreport.analysis.figures import TimeFigures
from tcreport.analysis.host_wait import HostWait
from tcreport.analysis.iteration_timeline import IterationTimeline
from tcreport.analysis.iterations import Selection
from tcreport.analysis.key_nodes import KeyNodeCandidate
from tcreport.analysis.overlap import CommOverlap
from tcreport.analysis.sections import Analysis as Analysis  # what rules and renderers import
from tcreport.analysis.sections import (
    breakdown,
    communication,
    host,
    precision,
    signals,
    time,
    verdict,
)
from tcreport.analysis.sections import iterations as iterations_section
from tcreport.analysis.sections import steps as steps_section
from tcreport.analysis.slicing import WHOLE, Slice
from tcreport.analysis.steps import StepRow
from tcreport.analysis.throughput import Throughput
from tcreport.analysis.vendor import Vendor
from tcreport.errors import OptionError
from tcreport.model import IterationMethod, Run


def run_vendor(run: Run) -> Vendor:
    """The run's GPU vendor (:mod:`tcreport.analysis.vendor`), from metadata, else kernel names."""
    names = _codes.as_strings(run.kernels.column("name")) if run.kernels is not None else []
    return vendor.detect(run.meta, (n for n in names if n))


def _classify(run: Run, gpu_vendor: Vendor) -> Run:
    pack = tc_kernels.pack_for(gpu_vendor.value)
    named = readable_names.with_readable_names(run.kernels) if run.kernels is not None else None
    kernels = kernel_verdicts.classify(named, run, pack) if named is not None else None
    ops = eligibility.classify_ops(run.ops, kernels, judged=True) if run.ops is not None else None
    return run.replace(kernels=kernels, ops=ops)


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
    note: str | None = None  # steps with GPU work but no row (steps.swallowed_note)
    host_wait: HostWait | None = None  # the named host work the aggregated steps waited for


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
    whole_run = run.iterations is None or run.iterations.num_rows == 0
    act = activity.collect(run.kernels, run.memory)
    if act is None:
        return _StepParts((), None, None)
    breakdown, gaps = steps.breakdown_with_gaps(act, run.ranges, run.ops, whole_run, run.memory)
    info = sel.info
    span = (info.start or 0, info.stop if info.stop is not None else 1 << 31)
    comm = overlap.from_steps(act, run.kernels, breakdown, None if whole_run else span)
    # a run not split into steps: its one "step" holds the start-up, no per-step wait
    wait = None if whole_run else host_wait.host_wait(breakdown, info, act, run.ranges, run.ops)
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
    return _StepParts(breakdown, tl, comm, steps.swallowed_note(act, breakdown), wait)


def _dtype_rows(run: Run, gpu_kernel_ns: int | None, cpu_only: bool) -> list[figures.OpRow]:
    """The op rows the precision mix sums: one per op name and data type, so the calls of one
    op in float16 are not counted under the float32 of its first call."""
    rows = figures.op_rows(run, gpu_kernel_ns, by_dtype=True)
    return host.without_gpu_figures(rows) if cpu_only else rows


def _throughput(run: Run, t: TimeFigures, unit: str) -> Throughput | None:
    """FLOPs and the roofline; ``unit``: the verdict section's name for the matrix units, which
    the roofline's legend uses."""
    k = run.kernels
    gpus = len(pc.unique(k.column("device_id")).drop_null()) if k is not None else 0
    return throughput.compute(run, t.wall_ns, t.tc_kernel_ns, max(1, gpus), unit)


def _suggestions(
    classified: Run, selection: Selection
) -> tuple[Selection, tuple[KeyNodeCandidate, ...]]:
    """Key nodes worth suggesting when the run was not split (or the given one never occurred)."""
    if selection.key_node_found and selection.info.method is not IterationMethod.WHOLE_RUN:
        return selection, ()
    found = key_nodes.validated_candidates(classified)
    return dataclasses.replace(selection, candidates=tuple(c.name for c in found)), found


def _refuse_ineffective(slc: Slice, selection: Selection) -> None:
    """A slice that would silently select nothing is an error unless ``slc.allow_empty``."""
    if slc.allow_empty:
        return
    problem = slicing.ineffective(
        slc, selection.info, selection.key_node_found, selection.candidates
    )
    if problem is not None:
        raise OptionError(problem)


T = TypeVar("T")


#: A run with fewer kernels than this is analysed in one thread: its step analysis takes a few
#: milliseconds, less than a second thread's start and hand-offs (``threaded``, below).
SMALL_RUN = 10_000


class _Inline(Executor):
    """An executor that runs each job at once, in the caller's thread."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        done: Future[T] = Future()
        done.set_result(fn(*args, **kwargs))
        return done


def _step_pool(run: Run, threaded: bool) -> Executor:
    """Where the step analysis runs. It (a third of the time on big traces) shares nothing with
    the per-name figures: it runs beside them in a second thread (numpy and Arrow release the
    GIL), unless the caller says not to or the run is small (``SMALL_RUN``)."""
    big = run.kernels is not None and run.kernels.num_rows >= SMALL_RUN
    if threaded and big:
        return ThreadPoolExecutor(1, thread_name_prefix="tcreport-steps")
    return _Inline()


def compute(
    run: Run, slc: Slice = WHOLE, with_timeline: bool = False, *, threaded: bool = True
) -> Analysis:
    """Analyse the part of ``run`` that ``slc`` selects: classify, slice the iterations, build
    every section. A slice that selects nothing is refused here, before the costly figures.

    ``with_timeline``: also lay out one iteration for the HTML report's timeline
    (:attr:`Steps.timeline`); the other outputs do not draw it, and on a multi-million-launch
    trace it costs more than the rest of the step analysis.

    ``threaded``: run the step analysis in a second thread, beside the per-name figures (about a
    third of the time on big traces; False: one after the other, for the same CPU and about
    half the temporaries, where a caller holds much beside the run: a multi-process export's
    other ranks). A small run is analysed in one thread whatever this says (``SMALL_RUN``)."""
    gpu_vendor = run_vendor(run)
    run = run.replace(meta=vendor.resolve_gpus(run.meta, gpu_vendor))
    classified = _classify(run, gpu_vendor)
    sliced, selection = iterations.select(classified, slc)
    selection, suggestions = _suggestions(classified, selection)
    _refuse_ineffective(slc, selection)
    info = selection.info
    # Per-iteration rows need every iteration (warm-up included), so they come from the unsliced
    # run with the same boundaries; a slice that narrows no iteration already holds them all (no
    # second filtered copy of the ops and kernels, held to the end).
    narrowed = (slc.iter_start, slc.iter_stop) != (None, None)
    all_iters = (
        iterations.select(classified, slc.every_iteration())[0]
        if info.total and narrowed
        else sliced
    )
    iteration_rows = derived.iteration_rows(all_iters, selection)
    with _step_pool(run, threaded) as pool:
        steps_job = pool.submit(
            _steps, all_iters, iteration_rows, selection, slc.timeline_iter, with_timeline
        )
        t = time.build(sliced, info)
        ops = figures.op_rows(sliced, t.gpu_kernel_ns)
        on_host = host.build(sliced, t, ops, verdict.words_for(gpu_vendor).unit)
        if on_host.cpu_only:  # GPU figures unknown, not 0, in every section after this
            ops, t = host.without_gpu_figures(ops), host.time_without_gpu(t)
        rows = breakdown.build(sliced, t, ops)
        judged = verdict.build(sliced, gpu_vendor, t, ops, rows.kernels, info, on_host.cpu_only)
        dtypes = precision.build(_dtype_rows(sliced, t.gpu_kernel_ns, on_host.cpu_only), gpu_vendor)
        found = signals.build(sliced, _ranges_in(sliced, selection))
        flops = _throughput(sliced, t, judged.words.unit)
        parts = steps_job.result()
    its = iterations_section.build(
        selection,
        suggestions,
        derived.with_steps(iteration_rows, parts.steps),  # measured idle: one truth
        t.wall_ns,
        iterations_section.step_numbers(classified, info, len(iteration_rows)),
    )
    meta = sliced.meta
    if parts.note is not None:
        meta = dataclasses.replace(meta, notes=(*meta.notes, parts.note))
    split = breakdown.split_note(rows.kernels, judged.words.unit, judged.words.unit_one)
    if split is not None:
        meta = dataclasses.replace(meta, notes=(*meta.notes, split))
    analysed = Analysis(
        meta=meta,
        verdict=judged,
        time=t,
        breakdown=rows,
        iterations=its,
        steps=steps_section.build(
            parts.steps, parts.timeline, info, its.whole_run, slc.timeline_iter, parts.host_wait
        ),
        communication=communication.build(
            sliced, parts.communication, t.wall_ns, [o.name for o in rows.ops]
        ),
        throughput=flops,
        host=on_host,
        precision=dtypes,
        signals=found,
    )
    return invariants.enforce(analysed)  # what must always hold: a note, or an error in tests


def classified_run(run: Run, slc: Slice = WHOLE) -> Run:
    """The run with every kernel's verdict, sliced to the iterations ``slc`` selects: the bulk
    rows an export writes (the :class:`Analysis` keeps only per-name rows). A slice that selects
    nothing is refused as :func:`compute` refuses it."""
    gpu_vendor = run_vendor(run)
    run = run.replace(meta=vendor.resolve_gpus(run.meta, gpu_vendor))
    sliced, selection = iterations.select(_classify(run, gpu_vendor), slc)
    if not slc.allow_empty:
        selection, _ = _suggestions(sliced, selection)  # the names an error can offer
        _refuse_ineffective(slc, selection)
    return sliced
