"""One run, analysed: classification, iteration slicing, figures and per-iteration rows.

This is the single object findings rules and renderers read. It is built once per run by
:func:`compute`; nothing downstream goes back to the raw tables except through the evidence keys
(op ids, kernel names) that rows carry.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.analysis import _codes, figures, iterations, timeline
from tcreport.analysis.counters import CounterDisagreement
from tcreport.analysis.figures import DeviceRow, KernelRow, OpRow, OpTypeRow, TcFigures, TimeFigures
from tcreport.analysis.iterations import Selection
from tcreport.analysis.tc_kernels import Agreement
from tcreport.analysis.timeline import TimelineFigures
from tcreport.analysis.why_not import WhyNot
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


def _classify(run: Run) -> Run:
    from tcreport.analysis import eligibility, tc_kernels

    kernels = tc_kernels.classify_kernels(run.kernels) if run.kernels is not None else None
    ops = eligibility.classify_ops(run.ops, kernels) if run.ops is not None else None
    return run.replace(kernels=kernels, ops=ops)


def _agreement(kernels: pa.Table | None) -> Agreement | None:
    from tcreport.analysis import tc_kernels

    if kernels is None or kernels.column("profiler_uses_tc").null_count == kernels.num_rows:
        return None
    return tc_kernels.tc_agreement(kernels)


def _why_not(run: Run) -> tuple[WhyNot, ...]:
    from tcreport.analysis import why_not

    if run.ops is None or run.ops.num_rows == 0:
        return ()
    return tuple(why_not.explain(run.ops, run.meta.framework, run.meta.gpus))


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


#: cuDNN convolution algorithm families, recognised from kernel names. One op launching kernels of
#: several families in the aggregated range is cuDNN trying every algorithm (cudnnFind, i.e.
#: ``cudnn.benchmark`` autotuning), which only happens in the first iterations.
_CONV_FAMILIES = (
    ("implicit-gemm", r"implicit_convolve|implicit_gemm|scudnn_.*interior|xmma_fprop_implicit"),
    ("explicit-gemm", r"explicit_convolve|im2col"),
    ("fft", r"fft2d|fft_|flip_filter|gcgemm|cgemm_"),
    ("winograd", r"winograd"),
    ("direct", r"conv2d_grouped_direct|direct_conv|convolve_common_engine"),
)
AUTOTUNE_MIN_FAMILIES = 3


def _autotuned_ops(kernels: pa.Table | None, ops: pa.Table | None) -> tuple[str, ...]:
    """Names of ops whose kernels cover several cuDNN algorithm families (autotuning)."""
    if kernels is None or ops is None or kernels.num_rows == 0 or ops.num_rows == 0:
        return ()

    def family(names: pa.Array) -> pa.Array:  # per distinct kernel name: 0 = none, 1.. = family
        fam = pa.array(np.zeros(len(names), dtype=np.int64))
        for i, (_, pattern) in enumerate(_CONV_FAMILIES, start=1):
            hit = pc.fill_null(pc.match_substring_regex(names, pattern), False)
            fam = pc.if_else(pc.and_(hit, pc.equal(fam, 0)), i, fam)
        return fam

    fam = np.asarray(
        pc.fill_null(_codes.per_value(kernels.column("name"), family), 0).to_numpy(), np.int64
    )
    if not fam.any():
        return ()
    j = _codes.joint(ops.column("op_id"), kernels.column("op_id"))
    ok = (fam > 0) & (j.other >= 0)
    pairs = np.unique(j.other[ok] * (len(_CONV_FAMILIES) + 1) + fam[ok])
    per_op = np.bincount(pairs // (len(_CONV_FAMILIES) + 1), minlength=j.size)
    many = per_op >= AUTOTUNE_MIN_FAMILIES
    if not many.any():
        return ()
    hit_rows = (j.ops >= 0) & many[np.maximum(j.ops, 0)]
    names = _codes.as_strings(ops.column("name").filter(pa.array(hit_rows)))
    return tuple(sorted(str(n) for n in names))


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


def compute(
    run: Run,
    key_node: str | None = None,
    iter_start: int | None = None,
    iter_stop: int | None = None,
) -> Analysis:
    """Analyse ``run``: classify, slice the iterations, compute every figure."""
    from tcreport.analysis import counters, tc_kernels

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
    markers = timeline.host_markers(_ranges_in(sliced, selection), sliced.ops)
    return Analysis(
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
        timeline=timeline.kernel_timeline(sliced.kernels),
        data_loader_names=markers.data_loader_names,
        data_loader_ns=markers.data_loader_ns,
        autotuned_ops=_autotuned_ops(sliced.kernels, sliced.ops),
        devices=tuple(figures.device_rows(sliced)),
        counter_disagreements=(
            counters.disagreements(sliced.kernels) if sliced.kernels is not None else ()
        ),
    )
