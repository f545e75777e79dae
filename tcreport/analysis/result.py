"""One run, analysed: classification, iteration slicing, figures and per-iteration rows.

This is the single object findings rules and renderers read. It is built once per run by
:func:`compute`; nothing downstream goes back to the raw tables except through the evidence keys
(op ids, kernel names) that rows carry.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from tcreport.analysis import figures, iterations
from tcreport.analysis.figures import KernelRow, OpRow, OpTypeRow, TcFigures, TimeFigures
from tcreport.analysis.iterations import Selection
from tcreport.model import Run, RunMeta


@dataclass(frozen=True)
class IterationRow:
    iteration: int
    duration_ns: int
    tc_ns: int
    non_tc_ns: int
    memory_ns: int
    kernel_count: int
    aggregated: bool


@dataclass(frozen=True)
class Agreement:
    """How often tcreport's verdict matched the profiler's own label (DLProf's ``Uses TC``)."""

    compared: int
    agreeing: int
    disagreements: tuple[tuple[str, bool | None, bool | None], ...]  # (name, ours, profiler's)


@dataclass(frozen=True)
class WhyNotRow:
    op_id: str
    op_name: str
    reason: str  # reason code
    message: str
    fix: str
    padding: str | None


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
    why_not: tuple[WhyNotRow, ...]
    kernel_agreement: Agreement | None
    has_kernels: bool
    has_ops: bool


def _classify(run: Run) -> Run:
    from tcreport.analysis import eligibility, tc_kernels

    kernels = tc_kernels.classify_kernels(run.kernels) if run.kernels is not None else None
    ops = eligibility.classify_ops(run.ops, kernels) if run.ops is not None else None
    return run.replace(kernels=kernels, ops=ops)


def _agreement(kernels: pa.Table | None) -> Agreement | None:
    from tcreport.analysis import tc_kernels

    if kernels is None or kernels.column("profiler_uses_tc").null_count == kernels.num_rows:
        return None
    a = tc_kernels.tc_agreement(kernels)
    return Agreement(
        compared=a.compared,
        agreeing=a.agreeing,
        disagreements=tuple((d[0], d[1], d[2]) for d in a.disagreements),
    )


def _why_not(run: Run) -> tuple[WhyNotRow, ...]:
    from tcreport.analysis import why_not

    if run.ops is None or run.ops.num_rows == 0:
        return ()
    rows = why_not.explain(run.ops, run.meta.framework, run.meta.gpus)
    return tuple(
        WhyNotRow(
            op_id=w.op_id,
            op_name=w.op_name,
            reason=str(w.reason),
            message=w.message,
            fix=w.fix,
            padding=w.padding,
        )
        for w in rows
    )


def _iteration_rows(run: Run, sel: Selection) -> tuple[IterationRow, ...]:
    """Per-iteration stacks (TC / non-TC / memory) from rows that carry an iteration number."""
    it = run.iterations
    if it is None or it.num_rows == 0 or run.kernels is None:
        return ()
    k = run.kernels
    kt = pa.table(
        {
            "iteration": k.column("iteration"),
            "tc": pc.if_else(pc.fill_null(k.column("uses_tc"), False), k.column("duration_ns"), 0),
            "all": k.column("duration_ns"),
            "calls": k.column("calls"),
        }
    ).filter(pc.is_valid(k.column("iteration")))
    kg = {
        r["iteration"]: r
        for r in kt.group_by("iteration")
        .aggregate([("tc", "sum"), ("all", "sum"), ("calls", "sum")])
        .to_pylist()
    }
    mg: dict[int, int] = {}
    if run.memory is not None and run.memory.num_rows:
        m = run.memory.filter(pc.is_valid(run.memory.column("iteration")))
        mg = {
            r["iteration"]: r["duration_ns_sum"]
            for r in m.group_by("iteration").aggregate([("duration_ns", "sum")]).to_pylist()
        }
    lo, hi = sel.info.start or 0, sel.info.stop if sel.info.stop is not None else it.num_rows - 1
    rows: list[IterationRow] = []
    for r in it.sort_by("iteration").to_pylist():  # one per iteration: small
        i = r["iteration"]
        kr = kg.get(i, {})
        tc = int(kr.get("tc_sum") or 0)
        rows.append(
            IterationRow(
                iteration=i,
                duration_ns=int(r["end_ns"] - r["start_ns"]),
                tc_ns=tc,
                non_tc_ns=int(kr.get("all_sum") or 0) - tc,
                memory_ns=int(mg.get(i, 0)),
                kernel_count=int(kr.get("calls_sum") or 0),
                aggregated=lo <= i <= hi,
            )
        )
    return tuple(rows)


def compute(
    run: Run,
    key_node: str | None = None,
    iter_start: int | None = None,
    iter_stop: int | None = None,
) -> tuple[Analysis, Run]:
    """Analyse ``run``; returns the analysis and the classified, iteration-sliced run."""
    from tcreport.analysis import tc_kernels

    classified = _classify(run)
    full = classified
    sliced, selection = iterations.select(classified, key_node, iter_start, iter_stop)
    time = figures.time_figures(sliced)
    ops = figures.op_rows(sliced, time.gpu_kernel_ns)
    classified_share = (
        tc_kernels.classified_share(sliced.kernels) if sliced.kernels is not None else None
    )
    tc = figures.tc_figures(sliced, time, ops, classified_share)
    # Per-iteration rows need every iteration (warm-up included), so they come from the unsliced
    # run with the same boundaries.
    all_iters, _ = (
        iterations.select(full, key_node, None, None)
        if selection.info.total
        else (sliced, selection)
    )
    analysis = Analysis(
        meta=sliced.meta,
        selection=selection,
        time=time,
        tc=tc,
        ops=tuple(ops),
        op_types=tuple(figures.op_type_rows(ops, time.gpu_kernel_ns)),
        kernels=tuple(figures.kernel_rows(sliced, time.gpu_kernel_ns)),
        iterations=_iteration_rows(all_iters, selection),
        why_not=_why_not(sliced),
        kernel_agreement=_agreement(sliced.kernels),
        has_kernels=sliced.kernels is not None,
        has_ops=sliced.ops is not None,
    )
    return analysis, sliced
