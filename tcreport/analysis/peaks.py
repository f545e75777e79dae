"""The GPU's dense peak throughput per data type and its memory bandwidth, from ``peaks.toml``
(each value with its source): the two roofs of a roofline.

A % of peak is only meaningful against the right peak: an fp32 GEMM on a V100 cannot use Tensor
Cores at all, a float32 GEMM on an A100 that ran TF32 kernels can reach the TF32 peak. So the peak
is picked by the op's precision as it ran: bf16/fp16/fp8 as recorded, float32 as tf32 when its
kernels used Tensor Cores, else the CUDA-core fp32 peak. Unknown GPUs and dtypes give ``None``.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

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
    raw = tomllib.loads(
        resources.files("tcreport.analysis").joinpath("peaks.toml").read_text(encoding="utf-8")
    )
    out = []
    for g in raw["gpu"]:
        vals = tuple((p, float(g[p])) for p in PRECISIONS if p in g)
        bandwidth = float(g["memory_gbs"]) if "memory_gbs" in g else None
        out.append(
            (
                re.compile(g["match"], re.IGNORECASE),
                GpuPeaks(g["model"], vals, g["source"], bandwidth),
            )
        )
    return tuple(out)


def for_gpu(name: str | None) -> GpuPeaks | None:
    """The peaks of the GPU model this name denotes (first matching entry), else ``None``."""
    if not name:
        return None
    for pattern, peaks in table():
        if pattern.search(name):
            return peaks
    return None


def precision(dtype: str | None, used_tc: bool | None) -> str | None:
    """The precision an op ran at, for choosing its peak (``dtype`` already normalised)."""
    if dtype == "fp32":
        return "tf32" if used_tc else "fp32"
    return dtype if dtype in PRECISIONS else None
