"""The model audit's layer sizes, judged by the same padding rule as the trace's shapes and,
where the run has a trace, against what its calls of those sizes did.

The audit (``tcreport profile``) reads a layer's sizes from the model object; the trace records
the shapes each GEMM and convolution call ran with. Both are judged by one rule
(:func:`shapes.unaligned`), so AU001 and TC003 cannot pad the same convolution differently, and
where the trace has calls of a layer's sizes, AU001 says what they did instead of what unaligned
sizes are expected to do (the fp16 CNN's Linear layers of 30, 333 and 77 features ran on Tensor
Cores; only its first convolution's calls, 3 input channels, missed them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from tcreport.analysis.figures import OpRow
from tcreport.analysis.shapes import (
    Problem,
    layer_problem,
    parse_shapes,
    problem_of,
    same_sizes,
    unaligned,
)
from tcreport.analysis.why_not import Reason, WhyNot
from tcreport.model import AuditLayer


class Seen(StrEnum):
    """What the trace shows for the calls of one layer's sizes."""

    MISSED = "missed"  # a call of these sizes missed Tensor Cores for its alignment (TC003's)
    NOT_MISSED = "not missed"  # the trace has shapes of this kind of op and no such miss


@dataclass(frozen=True)
class LayerSizes:
    layer: AuditLayer
    pads: tuple[tuple[str, int, int], ...]  # (size name, size, padded size)
    seen: Seen | None  # None: the trace cannot tell (no trace, no shapes, another miss reason)


def judge(
    layers: Iterable[AuditLayer],
    precision: str,
    why_not: Sequence[WhyNot],
    ops: Sequence[OpRow],
    tensorflow: bool,
    gpu_trace: bool = True,
) -> tuple[LayerSizes, ...]:
    """Each layer with a size to pad for ``precision`` ("fp16", "bf16"), with the trace's word on
    it. Per layer, not per call: a model has tens of layers and a trace's ops are grouped.
    ``gpu_trace``: False for a CPU-only run, whose calls ran on no matrix unit at all, so they
    say nothing of whether these sizes would miss one (every layer's ``seen`` is None)."""
    recorded = {
        p.kind
        for o in ops
        if o.tc_eligible
        and o.input_shapes
        and (p := problem_of(o.type or o.name, parse_shapes(o.input_shapes), tensorflow))
    }
    # the why-not rows of ops that missed in the headline's sense (an op whose kernels are its
    # children's, aten::linear over aten::addmm, explains nothing of its own)
    missing = {o.name for o in ops if o.has_misses}
    misses = [w for w in why_not if w.op_name in missing and w.problem is not None]
    out = []
    for layer in layers:
        pads = unaligned(layer.dims, precision)
        if pads:
            seen = (
                _seen(layer_problem(layer.kind, layer.dims), misses, recorded)
                if gpu_trace
                else None
            )
            out.append(LayerSizes(layer, pads, seen))
    return tuple(out)


def _seen(layer: Problem | None, why_not: Sequence[WhyNot], recorded: set[str]) -> Seen | None:
    if layer is None or layer.kind not in recorded:
        return None
    matching = [w for w in why_not if w.problem is not None and same_sizes(layer, w.problem)]
    if any(w.reason is Reason.UNALIGNED for w in matching):
        return Seen.MISSED
    return None if matching else Seen.NOT_MISSED
