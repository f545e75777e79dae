"""Per-call figures of op groups: the mean and median TFLOP/s of single calls, the memsets each op
launched, and whether its kernels ran on the matrix units.

TraceLens reports an op's rate per call and averages (``TFLOPS/s_mean``), with the memsets the
call launched counted in its time; tcreport's headline rate is the group's FLOPs over its kernel
time. Both are worth showing (a mean far above the aggregate says a few slow calls dominate the
time), so this module computes TraceLens's per-call view beside the aggregate, vectorised: one
sort of the selected rows, never a loop over rows or a mask per group.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from tcreport._arrays import exact_sums
from tcreport.analysis import _codes
from tcreport.analysis.op_throughput import MatrixUse
from tcreport.model import Run
from tcreport.schema import MemoryKind


def rates(
    key: np.ndarray,
    per_call_flops: np.ndarray,
    gpu_ns: np.ndarray,
    calls: np.ndarray,
    groups: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Mean and median per-call TFLOP/s of each group in ``groups`` (NaN: none).

    Only rows that are one call each count (a Kineto or nsys op instance); a group with a row
    that aggregates several calls (DLProf) has no per-call figures: its calls' times are unknown.
    """
    n = len(groups)
    nan = np.full(n, np.nan)
    if not n or not key.size:
        return nan, nan.copy()
    size = int(key.max()) + 1
    slot = np.full(size, -1, np.int64)
    slot[groups] = np.arange(n)
    several = np.zeros(size, bool)
    several[key[calls != 1]] = True
    sel = (slot[key] >= 0) & (calls == 1) & np.isfinite(per_call_flops) & (gpu_ns > 0)
    g = slot[key[sel]]
    r = per_call_flops[sel] / gpu_ns[sel] / 1e3
    order = np.lexsort((r, g))
    g, r = g[order], r[order]
    starts = np.searchsorted(g, np.arange(n), "left")
    counts = np.searchsorted(g, np.arange(n), "right") - starts
    has = (counts > 0) & ~several[groups]
    mean = nan.copy()
    mean[has] = np.bincount(g, weights=r, minlength=n)[has] / counts[has]
    lo = starts + np.maximum(counts - 1, 0) // 2
    hi = starts + counts // 2
    median = nan.copy()
    if r.size:
        median[has] = (r[np.minimum(lo, r.size - 1)][has] + r[np.minimum(hi, r.size - 1)][has]) / 2
    return mean, median


def memset_ns(run: Run, ops: pa.Table, keep: np.ndarray) -> np.ndarray:
    """Per kept op row, the GPU time of the memsets it launched (int64; 0 without any)."""
    mem = run.memory
    if mem is None or mem.num_rows == 0:
        return np.zeros(int(keep.sum()), np.int64)
    j = _codes.joint(ops.column("op_id"), mem.column("op_id"))
    memset = np.asarray(_codes.equals(mem.column("kind"), MemoryKind.MEMSET.value), bool)
    sel = memset & (j.other >= 0)
    dur = np.asarray(mem.column("duration_ns").to_numpy(zero_copy_only=False), np.int64)
    per_key = exact_sums(j.other[sel], np.maximum(dur[sel], 0), j.size)
    per_row = np.where(j.ops >= 0, per_key[np.maximum(j.ops, 0)], 0)
    result: np.ndarray = per_row[keep]
    return result


def matrix_use(key: np.ndarray, uses_tc: np.ndarray, groups: np.ndarray) -> list[MatrixUse]:
    """Per group in ``groups``: did its rows' kernels run on the matrix units (``uses_tc`` per
    row as 1 yes, 0 no, -1 unknown)."""
    size = int(key.max()) + 1 if key.size else 0
    seen = np.zeros((3, size), bool)  # yes, no, unknown
    for i, v in enumerate((1, 0, -1)):
        seen[i, key[uses_tc == v]] = True
    out = []
    for g in groups.tolist():  # at most TOP_OPS
        yes, no, unknown = (bool(seen[i, g]) for i in range(3))
        out.append(
            MatrixUse.MIXED
            if yes and no
            else MatrixUse.YES
            if yes and not unknown
            else MatrixUse.NO
            if no and not unknown
            else MatrixUse.UNKNOWN
        )
    return out
