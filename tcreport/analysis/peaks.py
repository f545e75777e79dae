"""The GPU's dense peak throughput per data type and its memory bandwidth, from the device table
(each value with its source; :mod:`tcreport.analysis.device_table`): the two roofs of a roofline.

A % of peak is only meaningful against the right peak: an fp32 GEMM on a V100 cannot use Tensor
Cores at all, a float32 GEMM on an A100 that ran TF32 kernels can reach the TF32 peak. So the peak
is picked by the op's precision as it ran: bf16/fp16/fp8 as recorded, float32 as tf32 when its
kernels used Tensor Cores, else the CUDA-core fp32 peak. Unknown GPUs and dtypes give ``None``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from tcreport.analysis import device_table

PRECISIONS = ("fp8", "bf16", "fp16", "tf32", "fp32")


@dataclass(frozen=True)
class GpuPeaks:
    model: str
    tflops: tuple[tuple[str, float], ...]  # (precision, dense TFLOP/s)
    source: str
    memory_gbs: float | None = None  # DRAM bandwidth, GB/s (10^9 B/s): the roofline's memory roof

    def peak(self, precision: str | None) -> float | None:
        return dict(self.tflops).get(precision or "")


@cache
def table() -> tuple[tuple[re.Pattern[str], GpuPeaks], ...]:
    """The models of the device table that have at least one peak, in its order."""
    return tuple(
        (m.pattern, GpuPeaks(m.model, m.tflops, m.source, m.memory_gbs))
        for m in device_table.table().models
        if m.tflops
    )


def for_gpu(name: str | None) -> GpuPeaks | None:
    """The peaks of the GPU model this name denotes (its device-table row), else ``None``: a
    model the table knows without peaks (a GeForce GTX 1060) has none to give, and neither has a
    MIG instance of a known GPU (the row's peaks are the whole GPU's; a slice has a part of its
    SMs and bandwidth that the table does not hold per profile)."""
    row = device_table.for_name(name)
    if row is None or not row.tflops or device_table.mig_profile(name) is not None:
        return None
    return GpuPeaks(row.model, row.tflops, row.source, row.memory_gbs)


def mig_reason(names: Iterable[str | None]) -> str | None:
    """Why a run on a MIG instance of a GPU the table has peaks for gets none (words every
    output can show), else ``None``."""
    for name in names:
        profile = device_table.mig_profile(name)
        row = device_table.for_name(name)
        if profile is not None and row is not None and row.tflops:
            return (
                f"the GPU is a MIG instance ({profile}) of the {row.model}, and the device table "
                "holds the whole GPU's peaks, not a slice's share of its SMs and bandwidth"
            )
    return None


def precision(dtype: str | None, used_tc: bool | None) -> str | None:
    """The precision an op ran at, for choosing its peak (``dtype`` already normalised)."""
    if dtype == "fp32":
        return "tf32" if used_tc else "fp32"
    return dtype if dtype in PRECISIONS else None
