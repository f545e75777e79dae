"""The roofline of the run's heavy ops: each GEMM, convolution and attention (op, shapes) group
placed by arithmetic intensity and achieved rate under the GPU's two roofs.

TraceLens prints the same figures as a table; a chart shows at a glance which ops sit far under
their roof and whether the roof that binds them is compute or memory, and, coloured by whether
their kernels ran on the matrix units, which slow ops are slow because they missed them. The
chart's words come from here: the matrix units' name is the run's (the verdict section's
``words.unit``, "Tensor Cores" or "AMD Matrix Cores"), and so is how the legend says a group used
them; the roofs are the peaks table's with its sources.

Only groups with FLOPs, bytes and GPU time are drawn; the heavy ones without are named in
``left_out``, and a run whose GPU has no bandwidth in the peaks table gets a note, not a chart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tcreport.analysis.op_throughput import MatrixUse, OpThroughput, ridge
from tcreport.analysis.peaks import GpuPeaks

#: Heavy (op, shapes) groups drawn, by GPU time: beyond this the chart is a cloud of dots.
MAX_POINTS = 40


@dataclass(frozen=True)
class Roof:
    """One compute roof: the dense peak of a precision some drawn op ran at."""

    precision: str
    peak_tflops: float
    ridge: float  # FLOPs per byte where the memory roof meets this one


@dataclass(frozen=True)
class Roofline:
    """Everything the roofline chart and its table show; ``points`` empty with a ``note`` when
    there is nothing to draw."""

    matrix_unit: str  # what this run's matrix units are called, for the colour legend
    gpu_model: str | None
    memory_gbs: float | None  # the memory roof, GB/s
    source: str | None  # the peaks table's sources for both roofs
    roofs: tuple[Roof, ...]  # highest first
    points: tuple[OpThroughput, ...]  # by GPU time, at most MAX_POINTS
    left_out: tuple[str, ...]  # heavy op names with GPU time but no FLOP or byte count
    note: str | None  # why nothing, or not every heavy op, is drawn (a sentence, no full stop)

    @property
    def drawn_gpu_ns(self) -> int:
        return sum(p.gpu_ns for p in self.points)

    def use_words(self, use: MatrixUse) -> str:
        """How the legend says a group used the matrix units, in this run's words."""
        unit = self.matrix_unit
        return {
            MatrixUse.YES: f"ran on {unit}",
            MatrixUse.NO: f"not on {unit}",
            MatrixUse.MIXED: f"some calls on {unit}",
            MatrixUse.UNKNOWN: f"{unit} use unknown",
        }[use]


def _drawable(o: OpThroughput) -> bool:
    return (
        o.kind != "other"
        and o.flops is not None
        and o.flops > 0
        and bool(o.bytes)
        and o.gpu_ns > 0
        and bool(o.peak_tflops)
    )


def _note(
    gpu: GpuPeaks | None,
    points: Sequence[OpThroughput],
    left_out: Sequence[str],
    more: int,
    no_peaks: str | None = None,
) -> str | None:
    if gpu is None:
        return (
            f"No roofline: {no_peaks or 'the trace does not name a GPU model in the peaks table'}"
        )
    if gpu.memory_gbs is None:
        return f"No roofline: the peaks table has no memory bandwidth for {gpu.model}"
    if not points:
        return "No roofline: no GEMM, convolution or attention op has both a FLOP and a byte count"
    parts = []
    if left_out:
        parts.append("Not drawn, no FLOP or byte count: " + ", ".join(left_out[:3]))
    if more:
        parts.append(f"{more} smaller op groups not drawn")
    return "; ".join(parts) or None


def build(
    ops: Sequence[OpThroughput], gpu: GpuPeaks | None, matrix_unit: str, no_peaks: str | None = None
) -> Roofline | None:
    """The roofline of these op groups (heavy first, by GPU time); ``None`` without heavy ops.
    ``no_peaks``: why a GPU the table knows has no peaks here (a MIG instance), for the note."""
    heavy = [o for o in ops if o.kind != "other" and o.gpu_ns > 0]
    if not heavy:
        return None
    bandwidth = gpu.memory_gbs if gpu is not None else None
    drawable = [o for o in heavy if _drawable(o)] if bandwidth else []
    points = tuple(drawable[:MAX_POINTS])
    left_out = tuple(dict.fromkeys(o.name for o in heavy if not _drawable(o)))
    roofs: dict[str, float] = {}
    for p in points:
        if p.precision and p.peak_tflops:
            roofs[p.precision] = p.peak_tflops
    return Roofline(
        matrix_unit=matrix_unit,
        gpu_model=gpu.model if gpu is not None else None,
        memory_gbs=bandwidth,
        source=gpu.source if gpu is not None else None,
        roofs=tuple(
            Roof(prec, peak, ridge(peak, bandwidth))
            for prec, peak in sorted(roofs.items(), key=lambda kv: (-kv[1], kv[0]))
            if bandwidth
        ),
        points=points,
        left_out=left_out,
        note=_note(gpu, points, left_out, max(0, len(drawable) - len(points)), no_peaks),
    )
