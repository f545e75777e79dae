"""Achieved throughput: FLOPs and bytes per op from recorded shapes, TFLOP/s, % of the GPU's peak,
the roofline, and MFU.

A Tensor Core verdict says the matrix units ran; this says how hard. Each op instance that owns GPU
time (the op its kernels are attributed to, so a wrapper such as ``aten::linear`` over
``aten::addmm`` is not counted twice) gets a FLOP and byte count from
:mod:`tcreport.analysis.flops`. Counts are computed once per distinct (type, shapes, scalar
arguments, dtype) and spread to the rows with numpy. Ops are then grouped by (name, what was
counted): achieved TFLOP/s is their FLOPs over their GPU time, beside the per-call mean and median
(:mod:`tcreport.analysis.per_call`); % of peak uses the peak of the precision they ran at
(:mod:`tcreport.analysis.peaks`), and the roofline (:mod:`tcreport.analysis.roofline`) places the
heavy groups between that peak and the memory bandwidth.

Model FLOP utilisation (FLOPs of the aggregated range over its wall time × the peak × the GPUs)
is given only when every heavy op (GEMM, convolution, attention) has a count and the ops with
counts cover the Tensor Core kernel time; otherwise ``mfu`` is ``None`` and ``mfu_note`` says
which ops lacked shapes. Never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport import fmt
from tcreport._arrays import exact_sums
from tcreport.analysis import _codes, flops, peaks, per_call, roofline
from tcreport.analysis.counts import Count
from tcreport.analysis.op_throughput import OpThroughput
from tcreport.analysis.shapes import normalise_dtype
from tcreport.model import Run

__all__ = ["IterationThroughput", "OpThroughput", "Throughput", "compute"]

#: Op groups kept (by GPU time); the rest are summed into the totals only.
TOP_OPS = 50
#: Tensor Core kernel time not under an op with a FLOP count, beyond this share, rules MFU out.
UNCOVERED_TC_SHARE = 0.05


@dataclass(frozen=True)
class IterationThroughput:
    iteration: int
    duration_ns: int
    #: counted FLOPs of the iteration's ops; ``None`` where none of its op calls has a FLOP count
    #: (0 would claim a measured zero, as :attr:`Throughput.tflops` says)
    flops: int | None

    def tflops(self) -> float | None:
        """Achieved TFLOP/s over the iteration's duration; ``None`` where not measured."""
        if self.flops is None or self.duration_ns <= 0:
            return None
        return self.flops / self.duration_ns / 1e3


@dataclass(frozen=True)
class Throughput:
    gpu: peaks.GpuPeaks | None  # None: GPU model (or its peaks) not in the device table
    ops: tuple[OpThroughput, ...]  # heavy op groups first by GPU time, at most TOP_OPS
    flops: int  # counted FLOPs of the aggregated range
    counted_gpu_ns: int  # GPU time of the ops with a count
    heavy_gpu_ns: int  # GPU time of GEMM / conv / attention ops, counted or not
    missing: tuple[str, ...]  # heavy op names without a count, most GPU time first
    precision: str | None  # the precision with the most FLOPs: MFU's peak
    wall_ns: int | None
    gpus: int
    iterations: tuple[IterationThroughput, ...]
    mfu_note: str | None  # why there is no MFU, when there is none
    # the heavy groups between the GPU's compute and memory roofs; None without heavy ops
    roofline: roofline.Roofline | None = None
    #: why ``gpu`` is None although the table knows the GPU (a MIG instance of it), else None
    no_peaks: str | None = None

    @property
    def peak_tflops(self) -> float | None:
        return self.gpu.peak(self.precision) if self.gpu is not None else None

    @property
    def tflops(self) -> float | None:
        """Achieved over the wall time of the aggregated range, all GPUs together; ``None`` where
        no op's FLOPs were counted (no recorded shapes): 0.0 would claim a measured zero."""
        if not self.wall_ns or (not self.flops and not self.counted_gpu_ns):
            return None
        return self.flops / self.wall_ns / 1e3

    @property
    def mfu(self) -> float | None:
        t, p = self.tflops, self.peak_tflops
        if self.mfu_note is not None or t is None or not p:
            return None
        return t / (p * max(1, self.gpus))

    @property
    def sentence(self) -> str:
        """The report's line on model FLOP utilisation and the peak it is against."""
        gpu = self.gpu
        if self.mfu is not None and self.tflops is not None:
            mfu = (
                f"Model FLOP utilisation {fmt.pct(self.mfu, 2)}: {fmt.flops(self.flops)} in "
                f"{fmt.ns(self.wall_ns)} on {fmt.plural(self.gpus, 'GPU')}, "
                f"{fmt.tflops(self.tflops)} achieved."
            )
        else:
            mfu = f"No model FLOP utilisation: {self.mfu_note}."
        if gpu is not None and self.peak_tflops:
            peak = f"Peak: {gpu.model} {self.precision} {self.peak_tflops} TFLOP/s dense ({gpu.source})."
        elif gpu is not None:
            peak = f"Peak: {gpu.model} ({gpu.source}); no % of peak without counted FLOPs."
        elif self.no_peaks:
            peak = f"Peak: none, {self.no_peaks}; so no % of peak."
        else:
            peak = "Peak: the trace does not name a GPU model in the peaks table, so no % of peak."
        return f"{mfu} {peak}"

    def iteration_mfu(self, it: IterationThroughput) -> float | None:
        t, p = it.tflops(), self.peak_tflops
        if self.mfu_note is not None or t is None or not p:
            return None
        return t / (p * max(1, self.gpus))


@dataclass(frozen=True)
class _Rows:
    """The op rows that own GPU time, as arrays (nothing of the ops table is copied whole).

    Codes are taken from the whole table's columns (views of their index buffers) and then
    gathered for these rows; the numeric columns are gathered from views of their buffers."""

    keep: np.ndarray  # per op row of the table: does it own GPU time
    gpu_ns: np.ndarray  # int64, > 0
    calls: np.ndarray  # int64, -1 where not counted

    def codes(self, ops: pa.Table, name: str) -> _codes.Codes:
        """The column's codes, of the kept rows (the whole column's are dropped at once)."""
        c = _codes.codes(ops.column(name))
        return _codes.Codes(c.codes[self.keep], c.values)

    def numbers(self, ops: pa.Table, name: str, fill: int | bool) -> np.ndarray:
        """The column's kept rows, nulls as ``fill``, in the column's own type."""
        result: np.ndarray = _numbers(ops.column(name), fill)[self.keep]
        return result


def _numbers(col: pa.ChunkedArray, fill: int | bool) -> np.ndarray:
    """A column as numpy in its own type, nulls as ``fill``: a view when it has no null."""
    if col.num_chunks == 1 and col.null_count == 0:
        return np.asarray(col.chunk(0).to_numpy(zero_copy_only=False))
    return np.asarray(pc.fill_null(col, fill).to_numpy(zero_copy_only=False))


def _rows(ops: pa.Table) -> _Rows | None:
    gpu = _numbers(ops.column("gpu_ns"), 0)
    keep = gpu > 0
    if not keep.any():
        return None
    return _Rows(
        keep=keep,
        gpu_ns=gpu[keep].astype(np.int64, copy=False),
        calls=_numbers(ops.column("calls"), -1)[keep].astype(np.int64, copy=False),
    )


@dataclass(frozen=True)
class _Counted:
    """Per kept row: one call's FLOPs and bytes (NaN: none) and the code of what was counted,
    the group key beside the op name: rows whose type, shapes and counts agree are one group,
    whatever scalar arguments or dtype their count did not depend on."""

    flops: np.ndarray
    bytes: np.ndarray
    sig: np.ndarray
    counts: list[Count]  # per code of ``sig``: few


_COUNTED_BY = ("type", "input_shapes", "output_shapes", "concrete_inputs", "dtype")


def _per_distinct(ops: pa.Table, rows: _Rows) -> _Counted:
    """One count per distinct (type, shapes, scalar arguments, dtype), spread to the rows."""
    cols = [rows.codes(ops, c) for c in _COUNTED_BY]
    key = _codes.combine(*(c.codes for c in cols))
    first = _codes.first_rows(key)
    vals = [c.take(c.codes[first]) for c in cols]
    del cols
    counts = [flops.count(*v) for v in zip(*vals, strict=True)]  # one per distinct: small
    sig_of: dict[tuple[object, ...], int] = {}
    sig_counts: list[Count] = []
    sig = np.empty(len(counts), np.int64)
    for d, (c, t, shapes, out) in enumerate(zip(counts, vals[0], vals[1], vals[2], strict=True)):
        k = (t, shapes, out, c.flops, c.bytes, c.formula, c.kind)
        if k not in sig_of:
            sig_of[k] = len(sig_counts)
            sig_counts.append(c)
        sig[d] = sig_of[k]
    per_flops = np.array([np.nan if c.flops is None else float(c.flops) for c in counts])
    per_bytes = np.array([np.nan if c.bytes is None else float(c.bytes) for c in counts])
    return _Counted(per_flops[key], per_bytes[key], sig[key], sig_counts)


def _gpu_name(run: Run) -> str | None:
    return next((g.name for g in run.meta.gpus if peaks.for_gpu(g.name) is not None), None)


def compute(
    run: Run, wall_ns: int | None, tc_kernel_ns: int | None, gpus: int, matrix_unit: str
) -> Throughput | None:
    """Throughput of the aggregated range; ``None`` when the run has no op rows with GPU time.
    ``matrix_unit``: what the run's matrix units are called (the roofline's legend)."""
    ops = run.ops
    if ops is None or ops.num_rows == 0:
        return None
    # the rows that own GPU time as arrays, never a filtered copy of the table: millions of rows
    rows = _rows(ops)
    if rows is None:
        return None
    d = _per_distinct(ops, rows)
    calls = rows.calls
    row_flops = np.where(calls >= 0, d.flops * calls, np.nan)
    gpu_ns = rows.gpu_ns
    heavy = np.array([c.kind != "other" for c in d.counts], bool)[d.sig]
    has = ~np.isnan(row_flops)
    gpu = peaks.for_gpu(_gpu_name(run))
    no_peaks = None if gpu is not None else peaks.mig_reason(g.name for g in run.meta.gpus)
    prec_code, prec_names = _row_precision(ops, rows)
    name = rows.codes(ops, "name")
    groups = _groups(run, rows, name, d, row_flops, gpu, (prec_code, prec_names))
    del d
    miss = heavy & ~has
    missing: tuple[str, ...] = ()
    if miss.any():
        per_name = np.bincount(name.codes[miss], weights=gpu_ns[miss])
        order = np.argsort(-per_name, kind="stable")
        missing = tuple(str(v) for v in name.take(order[per_name[order] > 0]) if v is not None)
    per_prec = np.bincount(prec_code[has], weights=row_flops[has], minlength=len(prec_names))
    seen = np.zeros(len(prec_names), bool)
    seen[np.unique(prec_code[has])] = True
    total = {prec_names[i]: float(per_prec[i]) for i in np.flatnonzero(seen)}
    precision = max(total, key=lambda p: total[p]) if total else None
    counted = int(gpu_ns[has].sum())
    note = _mfu_note(
        missing, counted, tc_kernel_ns, gpu, precision, bool(has.any()), no_peaks,
        shaped=not has.any() and _any_shapes(ops),
    )  # fmt: skip
    iters = _iterations(run, ops, rows, row_flops)
    if wall_ns is None and iters:  # one iteration: no reported wall, but its own span
        wall_ns = sum(i.duration_ns for i in iters)
    return Throughput(
        gpu=gpu,
        ops=groups,
        flops=int(row_flops[has].sum()),
        counted_gpu_ns=counted,
        heavy_gpu_ns=int(gpu_ns[heavy].sum()),
        missing=missing,
        precision=str(precision) if precision else None,
        wall_ns=wall_ns,
        gpus=gpus,
        iterations=iters,
        mfu_note=note,
        roofline=roofline.build(groups, gpu, matrix_unit, no_peaks),
        no_peaks=no_peaks,
    )


def _any_shapes(ops: pa.Table) -> bool:
    """Whether any Tensor Core eligible op recorded input shapes (none of them countable)."""
    shaped = pc.and_(
        pc.fill_null(ops.column("tc_eligible"), False), pc.is_valid(ops.column("input_shapes"))
    )
    return bool(pc.any(shaped).as_py())


def _mfu_note(
    missing: tuple[str, ...], counted: int, tc_ns: int | None, gpu: peaks.GpuPeaks | None,
    precision: str | None, any_count: bool, no_peaks: str | None = None, *, shaped: bool = False,
) -> str | None:  # fmt: skip
    if not any_count and shaped:  # an XLA dot: operand shapes, no contracting dimensions
        return (
            "no GEMM, convolution or attention op has shapes a FLOP count can be made from "
            "(their recorded shapes do not say which dimensions are contracted: XLA's dots)"
        )
    if not any_count:
        return "no GEMM, convolution or attention op has recorded shapes"
    if missing:
        n = len(missing)
        return (
            f"{fmt.plural(n, 'heavy op')} {fmt.noun(n, 'has', 'have')} no FLOP count (shapes "
            "absent or incomplete): " + ", ".join(missing[:3])
        )
    if tc_ns and tc_ns - counted > UNCOVERED_TC_SHARE * tc_ns:
        return "Tensor Core kernels ran outside the ops with recorded shapes"
    if gpu is None:
        return f"no peaks: {no_peaks}" if no_peaks else "GPU model not in the peaks table"
    if gpu.peak(precision) is None:
        return f"no {precision} peak for {gpu.model} in the peaks table"
    return None


def _row_precision(ops: pa.Table, rows: _Rows) -> tuple[np.ndarray, list[str]]:
    """Per row, a code into the returned precision names ("" when the dtype is unknown): the
    normalised dtype, with fp32 on Tensor Cores counted as tf32. Codes, not strings: millions of
    rows share a handful of dtypes."""
    d = rows.codes(ops, "dtype")
    labels = [normalise_dtype(v) or "" for v in d.values.to_pylist()] + [""]
    names = sorted(set(labels) | {"tf32"})
    index = {n: i for i, n in enumerate(names)}
    code_of = np.array([index[v] for v in labels], np.int32)
    dt = code_of[np.where(d.codes >= 0, d.codes, len(labels) - 1)]
    if "fp32" in index:
        tc = rows.numbers(ops, "uses_tc", False).astype(bool, copy=False)
        dt[(dt == index["fp32"]) & tc] = index["tf32"]
    return dt, names


def _sums(key: np.ndarray, values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per group: the sum of the rows' values, and whether any row had none (NaN). The sums are
    added in row order, as bincount adds them (a NaN row would add 0.0 there: no sum changes)."""
    nan_rows = np.isnan(values)
    g_nan = np.zeros(n, bool)
    g_nan[key[nan_rows]] = True
    counted = np.flatnonzero(~nan_rows)
    del nan_rows
    g_sum = np.zeros(n)
    np.add.at(g_sum, key[counted], values[counted])
    return g_sum, g_nan


def _groups(
    run: Run, rows: _Rows, name: _codes.Codes, d: _Counted, row_flops: np.ndarray,
    gpu: peaks.GpuPeaks | None, prec: tuple[np.ndarray, list[str]],
) -> tuple[OpThroughput, ...]:  # fmt: skip
    """Op groups by (name, what was counted, the precision the calls ran at), heavy first, by GPU
    time; at most TOP_OPS. The precision is in the key because it picks the group's peak: one
    float32 ``mm`` call on TF32 Tensor Cores beside one on CUDA cores are two rows, each against
    its own peak, not one row whose first call's precision decides for both (a "131.8 % of
    peak" of the CUDA-core peak on the H200 ``mix`` trace); bf16 beside fp16 likewise."""
    ops = run.ops
    assert ops is not None
    key = _codes.combine(name.codes, d.sig, prec[0])
    n = int(key.max()) + 1
    # per group, without bincount's intp copy of the keys and float64 copies of the weights:
    # the integer sums exactly (a slice at a time)
    g_ns = exact_sums(key, rows.gpu_ns, n)
    g_calls = exact_sums(key, rows.numbers(ops, "calls", 1).astype(np.int64, copy=False), n)
    g_memset = exact_sums(key, per_call.memset_ns(run, ops, rows.keep), n)
    g_flops, g_nan = _sums(key, row_flops, n)
    g_bytes, g_bnan = _sums(key, np.where(rows.calls >= 0, d.bytes * rows.calls, np.nan), n)
    first = _codes.first_rows(key)
    heavy = np.array([d.counts[s].kind != "other" for s in d.sig[first]])
    order = np.lexsort((-g_ns, ~heavy))[:TOP_OPS]
    mean, median = per_call.rates(key, d.flops, rows.gpu_ns, rows.calls, order)
    uses = pc.fill_null(ops.column("uses_tc").cast(pa.int8()), -1).to_numpy().astype(np.int8)
    matrix = per_call.matrix_use(key, uses[rows.keep], order)
    names = name.take(name.codes[first[order]])
    shapes = rows.codes(ops, "input_shapes")
    shape_text = shapes.take(shapes.codes[first[order]])
    bandwidth = gpu.memory_gbs if gpu is not None else None
    out = []
    for i, g in enumerate(order):  # at most TOP_OPS
        c = d.counts[d.sig[first[g]]]
        p = prec[1][prec[0][first[g]]] or None
        out.append(
            OpThroughput(
                name=str(names[i]),
                kind=c.kind,
                input_shapes=shape_text[i],
                precision=p,
                calls=int(g_calls[g]),
                gpu_ns=int(g_ns[g]),
                flops=None if g_nan[g] else int(g_flops[g]),
                formula=c.formula,
                peak_tflops=gpu.peak(p) if gpu is not None else None,
                bytes=None if g_bnan[g] else int(g_bytes[g]),
                mean_tflops=None if np.isnan(mean[i]) else float(mean[i]),
                median_tflops=None if np.isnan(median[i]) else float(median[i]),
                memset_ns=int(g_memset[g]),
                matrix_units=matrix[i],
                memory_gbs=bandwidth,
            )
        )
    return tuple(out)


def _iterations(
    run: Run, ops: pa.Table, kept: _Rows, row_flops: np.ndarray
) -> tuple[IterationThroughput, ...]:
    it = run.iterations
    if it is None or it.num_rows == 0:
        return ()
    itc = kept.numbers(ops, "iteration", -1)
    ok = (itc >= 0) & ~np.isnan(row_flops)
    if not ok.any():
        return ()
    per = np.bincount(itc[ok], weights=row_flops[ok])
    counted = np.bincount(itc[ok])  # op rows with a count, per iteration: 0 = not measured
    rows = []
    for r in it.sort_by("iteration").to_pylist():  # one per iteration
        i = int(r["iteration"])
        flops = int(per[i]) if i < counted.size and counted[i] else None
        rows.append(IterationThroughput(i, int(r["end_ns"] - r["start_ns"]), flops))
    return tuple(rows)
