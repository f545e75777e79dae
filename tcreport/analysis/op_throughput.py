"""One op name with one set of shapes, over its calls: FLOPs, bytes, rates, and its roofline place.

The row TraceLens's perf model reports per (op, shapes), with tcreport's own definitions beside
its: achieved TFLOP/s as the group's FLOPs over its kernel time (what the group did in the time
it took), and the per-call mean and median (TraceLens's ``TFLOPS/s_mean``/``_median``: each
call's FLOPs over that call's time, then averaged, which weighs a fast call as much as a slow
one). TraceLens also counts the memsets an op launches in the op's time; tcreport keeps them
apart (``memset_ns``), because a memset is memory traffic, not the op's arithmetic.

The roofline verdict compares the op with the GPU's two roofs: peak FLOP/s of its precision and
memory bandwidth. Moving ``bytes`` takes at least bytes / bandwidth, computing ``flops`` at least
flops / peak; the larger bounds the call, so the op is memory-bound when its arithmetic intensity
(FLOPs per byte) is below the ridge point peak / bandwidth, compute-bound otherwise (TraceLens's
``Roofline Bound``). The attainable rate is the lower roof at the op's intensity; the share of it
that was achieved is TraceLens's ``Pct Roofline``.

A % of peak above 100 % is never shown bare: :attr:`OpThroughput.above_peak` says why it can be
(a convolution's Winograd or FFT, float32 kernels of unknown verdict that likely ran TF32), and
where nothing can explain it the invariant checker names the group as a broken figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Bound(StrEnum):
    COMPUTE = "compute-bound"
    MEMORY = "memory-bound"


class MatrixUse(StrEnum):
    """Whether an op group's kernels ran on the GPU's matrix units (Tensor Cores, AMD Matrix
    Cores): every call, no call, some calls, or not known."""

    YES = "yes"
    NO = "no"
    MIXED = "mixed"
    UNKNOWN = "unknown"


def bound(
    flops: int | None, nbytes: int | None, peak_tflops: float | None, memory_gbs: float | None
) -> Bound | None:
    """Which roof bounds an op with these FLOPs and bytes; ``None`` without both roofs."""
    if flops is None or not nbytes or not peak_tflops or not memory_gbs:
        return None
    compute_s = flops / (peak_tflops * 1e12)
    memory_s = nbytes / (memory_gbs * 1e9)
    return Bound.COMPUTE if compute_s >= memory_s else Bound.MEMORY


def ridge(peak_tflops: float, memory_gbs: float) -> float:
    """FLOPs per byte where the memory roof meets the compute roof."""
    return peak_tflops * 1e12 / (memory_gbs * 1e9)


def attainable_tflops(intensity: float, peak_tflops: float, memory_gbs: float) -> float:
    """The roofline at this intensity: the lower of the compute roof and bandwidth × intensity."""
    return min(peak_tflops, memory_gbs * 1e9 * intensity / 1e12)


#: The most a convolution algorithm can beat the direct formula's multiplications by: Winograd
#: F(4x4,3x3) does 4x fewer, F(6x6,3x3) about 5x, FFT more for large filters but not by orders of
#: magnitude. Past this, a "Winograd" excuse hides a broken figure (a kernel time read 1000x too
#: short gave 23,000 % of peak), so the group breaks the within-peak invariant instead.
ALGORITHM_MAX_GAIN = 8.0


class PeakExcess(StrEnum):
    """Why an op group's achieved TFLOP/s can be above the peak of the precision it ran at."""

    #: a convolution: Winograd and FFT do fewer multiplications than the direct formula counts
    ALGORITHM = "algorithm"
    #: float32 kernels whose Tensor Core verdict is unknown: compared with the CUDA-core peak,
    #: they most likely ran TF32 on Tensor Cores
    UNKNOWN_TF32 = "unknown-tf32"
    #: none of those: a direct formula's count is exact and no kernel beats its precision's
    #: peak, so a figure is wrong (an invariant, :mod:`tcreport.analysis.invariants`)
    IMPOSSIBLE = "impossible"


_ABOVE_PEAK = {
    PeakExcess.ALGORITHM: (
        "the convolution algorithm (Winograd, FFT) did fewer multiplications than the direct "
        "formula counts"
    ),
    PeakExcess.UNKNOWN_TF32: (
        "its kernels' Tensor Core use is unknown, and above the CUDA-core fp32 peak they most "
        "likely ran TF32 on Tensor Cores"
    ),
    PeakExcess.IMPOSSIBLE: (
        "no GEMM or attention kernel beats the peak of the precision it ran at, so the FLOP "
        "count, the kernel time or the GPU's identity is wrong (the report's checks name it)"
    ),
}


@dataclass(frozen=True)
class OpThroughput:
    """One op name with one set of shapes, over its calls in the aggregated range."""

    name: str
    kind: str  # gemm | conv | attention | other
    input_shapes: str | None
    precision: str | None  # bf16 / fp16 / tf32 / fp32 / fp8, as it ran
    calls: int
    gpu_ns: int  # compute-kernel time of its calls (memsets not included)
    flops: int | None  # all calls; None: no count (formula says why)
    formula: str
    peak_tflops: float | None
    bytes: int | None = None  # all calls: operands read once, results written once
    # per call (each call's FLOPs over its own kernel time), then the mean and the median; None
    # where the op rows aggregate several calls (DLProf) or there is no count
    mean_tflops: float | None = None
    median_tflops: float | None = None
    memset_ns: int = 0  # GPU time of the memsets its calls launched (TraceLens counts them in)
    matrix_units: MatrixUse = MatrixUse.UNKNOWN
    memory_gbs: float | None = None  # the GPU's memory bandwidth: the roofline's memory roof

    @property
    def tflops(self) -> float | None:
        return self.flops / self.gpu_ns / 1e3 if self.flops is not None and self.gpu_ns else None

    @property
    def peak_share(self) -> float | None:
        t = self.tflops
        return t / self.peak_tflops if t is not None and self.peak_tflops else None

    @property
    def peak_excess(self) -> PeakExcess | None:
        """Why this group's % of peak is above 100 % (``None`` when it is not)."""
        share = self.peak_share
        if share is None or share <= 1.0:
            return None
        if self.kind == "conv" and share <= ALGORITHM_MAX_GAIN:
            return PeakExcess.ALGORITHM
        if self.precision == "fp32" and self.matrix_units is not MatrixUse.NO:
            return PeakExcess.UNKNOWN_TF32
        return PeakExcess.IMPOSSIBLE

    @property
    def above_peak(self) -> str | None:
        """The words every output shows beside a % of peak above 100 %, so none is printed as if
        it were real; ``None`` when it is not above."""
        excess = self.peak_excess
        return None if excess is None else _ABOVE_PEAK[excess]

    @property
    def intensity(self) -> float | None:
        """Arithmetic intensity, FLOPs per byte moved."""
        return self.flops / self.bytes if self.flops is not None and self.bytes else None

    @property
    def bound(self) -> Bound | None:
        return bound(self.flops, self.bytes, self.peak_tflops, self.memory_gbs)

    @property
    def attainable_tflops(self) -> float | None:
        i = self.intensity
        if i is None or not self.peak_tflops or not self.memory_gbs:
            return None
        return attainable_tflops(i, self.peak_tflops, self.memory_gbs)

    @property
    def roofline_share(self) -> float | None:
        """Achieved over attainable TFLOP/s: 1 is on the roofline."""
        t, a = self.tflops, self.attainable_tflops
        return t / a if t is not None and a else None
