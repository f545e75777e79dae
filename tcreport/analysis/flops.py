"""Floating-point operations of one op from its recorded shapes, or the reason they cannot be known.

Achieved TFLOP/s is only as honest as the FLOP count under it, so every formula here uses only
what the trace recorded (PyTorch ``Input Dims`` with ``record_shapes``, the nsys autograd-shapes
NVTX sizes, DLProf's shape columns) and returns a reason instead of a number when a dimension is
missing: a forward convolution's output size depends on stride and padding, which Kineto does not
record as tensor dims, so without an output shape it has no count. A multiply-add is 2 FLOPs;
bias additions and softmax are left out (they are a rounding error next to the products, and
every tool that reports MFU leaves them out too).

Formulas (shapes as PyTorch gives them):

* ``mm`` [M,K]x[K,N], ``addmm`` bias,[M,K],[K,N]: 2·M·N·K
* ``bmm`` [B,M,K]x[B,K,N], ``baddbmm`` bias,...: 2·B·M·N·K; ``matmul``: broadcast batch
* ``linear`` [...,K], weight [N,K]: 2·(prod of leading dims)·N·K
* convolution with an output shape [N,K,P,Q..] and weight [K,C/g,R,S..]: 2·N·K·P·Q·(C/g)·R·S;
  ``*convolution_backward_input`` from grad-output and weight: the same count
* attention (``scaled_dot_product_attention`` and its flash / efficient / cuDNN variants, and
  ``_flash_attention_forward``, and the flash-attn package's ``FlashAttnFunc`` autograd function,
  whose q, k, v are [B, L, H, D] as in ``_flash_attention_forward``): Q·Kᵀ and P·V,
  2·B·H·L·S·(D + Dv); no causal halving, because the canonical tables do not keep the
  ``is_causal`` flag (stated wherever the figure is shown). flash-attn's other functions (packed
  QKV, variable length) are attention with no formula here: their shapes need ``cu_seqlens``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from tcreport.analysis.eligibility import normalise_op_type
from tcreport.analysis.shapes import Shape, parse_shapes

_GEMM = {"mm", "addmm", "addmm_", "_addmm_activation", "matmul", "bmm", "baddbmm", "baddbmm_",
         "linear", "matmul_", "dense", "matmulop"}  # fmt: skip
_BIAS_FIRST = {"addmm", "addmm_", "_addmm_activation", "baddbmm", "baddbmm_"}
_ATTN = re.compile(
    r"^(_?scaled_dot_product(_flash|_efficient|_cudnn)?_attention|_flash_attention_forward"
    r"|_efficient_attention_forward|flash_attn.*fwd|flashattnfunc)$"
)
#: Attention ops whose q, k, v come as [B, L, H, D] (heads third), not SDPA's [B, H, L, D].
_HEADS_THIRD = ("_flash_attention", "_efficient_attention", "flashattnfunc")
_CONV = re.compile(r"^(_?convolution|conv[123]d|cudnn_convolution|mkldnn_convolution|conv2d)$")
_CONV_DGRAD = re.compile(r"convolution_backward_input$")
#: Op types whose FLOPs this module can count: the "heavy" ops an MFU figure must cover.
HEAVY = re.compile(
    r"^(mm|addmm_?|_addmm_activation|matmul|bmm|baddbmm_?|linear|.*conv.*|.*attention.*"
    r"|_flash_attention_.*|flash_attn.*|flashattn.*func)$"
)


@dataclass(frozen=True)
class Count:
    """FLOPs of one call, or why there is no count."""

    flops: int | None
    formula: str  # the formula used, or the reason for no count
    kind: str  # "gemm" | "conv" | "attention" | "other"


def _none(kind: str, why: str) -> Count:
    return Count(None, why, kind)


def _gemm(t: str, shapes: list[Shape]) -> Count:
    mats = [s.dims for s in (shapes[1:] if t in _BIAS_FIRST else shapes) if s.dims]
    if len(mats) < 2:
        return _none("gemm", "fewer than two operand shapes recorded")
    a, b = mats[0], mats[1]
    if t == "linear":
        if len(a) < 1 or len(b) != 2 or a[-1] != b[1]:
            return _none("gemm", "input/weight shapes do not chain")
        return Count(2 * math.prod(a[:-1]) * b[0] * b[1], "2·M·N·K (linear)", "gemm")
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        return _none("gemm", "operand shapes do not chain (K differs)")
    m, k, n = a2[-2], a2[-1], b2[-1]
    ba, bb = a2[:-2], b2[:-2]
    width = max(len(ba), len(bb))
    ba, bb = (1,) * (width - len(ba)) + ba, (1,) * (width - len(bb)) + bb
    if any(x != y and 1 not in (x, y) for x, y in zip(ba, bb, strict=True)):
        return _none("gemm", "batch dimensions do not broadcast")
    batch = math.prod(max(x, y) for x, y in zip(ba, bb, strict=True))
    return Count(2 * batch * m * n * k, "2·B·M·N·K" if batch > 1 else "2·M·N·K", "gemm")


def _conv(t: str, shapes: list[Shape], outputs: list[Shape]) -> Count:
    if _CONV_DGRAD.search(t):  # [], grad_output [N,K,P,Q], weight [K,C/g,R,S]
        dims = [s.dims for s in shapes if s.dims]
        if len(dims) < 2 or len(dims[1]) < 3 or dims[0][1] != dims[1][0]:
            return _none("conv", "grad-output/weight shapes not recorded")
        out, w = dims[0], dims[1]
    else:
        dims = [s.dims for s in shapes if s.dims]
        out_dims = [s.dims for s in outputs if s.dims]
        if len(dims) < 2 or len(dims[1]) < 3:
            return _none("conv", "input/weight shapes not recorded")
        if not out_dims:
            return _none("conv", "no output shape recorded (stride/padding unknown)")
        out, w = out_dims[0], dims[1]
        if len(out) != len(w) or out[1] != w[0]:
            return _none("conv", "output/weight shapes do not match")
    flops = 2 * out[0] * math.prod(out[2:]) * math.prod(w)
    return Count(flops, "2·N·K·P·Q·(C/g)·R·S", "conv")


def _attention(t: str, shapes: list[Shape]) -> Count:
    dims = [s.dims for s in shapes if len(s.dims) == 4][:3]
    if len(dims) < 3:
        return _none("attention", "query/key/value shapes not recorded")
    q, k, v = dims
    if t.startswith(_HEADS_THIRD):
        q, k, v = ((d[0], d[2], d[1], d[3]) for d in (q, k, v))  # [B, L, H, D] -> [B, H, L, D]
    b, h, lq, d = q
    if k[3] != d or k[2] != v[2]:
        return _none("attention", "query/key/value shapes do not chain")
    flops = 2 * b * h * lq * k[2] * (d + v[3])
    return Count(flops, "2·B·H·L·S·(D+Dv), no causal halving", "attention")


def count(op_type: str | None, input_shapes: str | None, output_shapes: str | None) -> Count:
    """FLOPs of one call of an op of this type with these recorded shapes."""
    if not op_type:
        return _none("other", "no op type")
    t = normalise_op_type(op_type)
    shapes = parse_shapes(input_shapes)
    if t in _GEMM:
        return _gemm(t, shapes) if shapes else _none("gemm", "no shapes recorded")
    if _ATTN.match(t):
        return _attention(t, shapes) if shapes else _none("attention", "no shapes recorded")
    if _CONV.match(t) or _CONV_DGRAD.search(t):
        if not shapes:
            return _none("conv", "no shapes recorded")
        return _conv(t, shapes, parse_shapes(output_shapes))
    if HEAVY.match(t):
        kind = "attention" if "attn" in t or "attention" in t else "other"
        return _none(kind, f"no FLOP formula for {t}")
    return _none("other", "not a GEMM, convolution or attention op")
