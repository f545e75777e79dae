"""The precision section: op GPU time per data type, the run's precision mode, and what the
matrix units of its vendor can run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tcreport.analysis.figures import OpRow
from tcreport.analysis.groups import OpGroup, group_ops
from tcreport.analysis.shapes import normalise_dtype
from tcreport.analysis.vendor import Vendor

#: What the matrix units run, per vendor; only said where tcreport knows it (nothing NVIDIA-specific
#: is said of another vendor's GPU).
_TENSOR_CORES = (
    "Tensor Cores run fp16, bf16, fp8 and int8; fp32 reaches them only as TF32 (compute "
    "capability 8.0 and later, when enabled)."
)
_NOTE = {Vendor.NVIDIA: _TENSOR_CORES, Vendor.UNKNOWN: _TENSOR_CORES}


@dataclass(frozen=True)
class Precision:
    #: op GPU time per each call's main data type, by time; () when no op records a data type
    groups: tuple[OpGroup, ...]
    ops_have_dtype: bool  # any op row records a data type
    #: the run's compute precision from its ops' data types ("bf16 mixed", "fp32"); ``None``
    #: when no op records one
    mode: str | None
    note: str | None  # what the vendor's matrix units run, where tcreport knows it


def _mode(ops: Sequence[OpRow]) -> str | None:
    """The run's precision in two words: the half type with the most GPU time ("fp16 mixed"
    beside a few bfloat16 calls), in bf16, fp16, fp8 order where no time tells them apart (a
    CPU-only run); "fp32" when no op is in a half type."""
    time: dict[str, int] = {}
    for o in ops:
        d = normalise_dtype(o.dtype) if o.dtype else None
        if d:
            time[d] = time.get(d, 0) + (o.gpu_ns or 0)
    halves = [h for h in ("bf16", "fp16", "fp8") if h in time]
    if halves:
        return f"{max(halves, key=lambda h: time[h])} mixed"  # max keeps the first of a tie
    return "fp32" if "fp32" in time else None


def build(ops: Sequence[OpRow], gpu_vendor: Vendor) -> Precision:
    """``ops``: one row per op name and data type (:func:`tcreport.analysis.figures.op_rows`
    ``by_dtype``), so an op's float16 calls are not summed under its first call's float32."""
    total = sum(o.gpu_ns or 0 for o in ops)
    groups = group_ops(ops, lambda o: o.dtype, total)
    if all(g.name == "(unknown)" for g in groups):
        groups = []  # the input records no data types: a one-colour bar would say nothing
    return Precision(
        groups=tuple(groups),
        ops_have_dtype=any(o.dtype for o in ops),
        mode=_mode(ops),
        note=_NOTE.get(gpu_vendor),
    )
