"""What one call of an op costs, FLOPs and bytes moved, or why that cannot be known.

One small type shared by the formula modules (:mod:`.flops` for GEMMs and attention,
:mod:`.conv_flops` for convolutions), so that each can grow without importing the other.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Count:
    """FLOPs and bytes of one call, or why there is no count.

    ``bytes`` is the minimum DRAM traffic of the call: every operand tensor read once and the
    result written once, at the op's element size (the model TraceLens's perf model uses). It is
    ``None`` where the FLOPs are known but a tensor's size or the element size is not."""

    flops: int | None
    formula: str  # the formula used, or the reason for no count
    kind: str  # "gemm" | "conv" | "attention" | "other"
    bytes: int | None = None


def none(kind: str, why: str) -> Count:
    return Count(None, why, kind)


def moved(elements: Iterable[int], element_bytes: int | None) -> int | None:
    """Bytes of tensors of these element counts, or ``None`` without an element size."""
    return None if element_bytes is None else sum(elements) * element_bytes


def size(dims: Iterable[int]) -> int:
    return math.prod(dims)
