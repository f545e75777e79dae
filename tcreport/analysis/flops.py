"""FLOPs and bytes moved by one call of an op, from its recorded shapes, or why they cannot be known.

Achieved TFLOP/s is only as honest as the FLOP count under it, so every formula here uses only
what the trace recorded (PyTorch ``Input Dims`` and ``Concrete Inputs`` with ``record_shapes``,
the nsys autograd-shapes NVTX sizes, DLProf's shape columns) and returns a reason instead of a
number when something is missing. A multiply-add is 2 FLOPs. The counts are TraceLens's perf
model's, so that the two tools agree on the same trace (tests check it on a real one):

* ``mm`` [M,K]x[K,N]: 2·M·N·K; ``addmm`` bias,[M,K],[K,N]: 2·M·N·K + M·N (the bias add the op
  performs); ``_addmm_activation`` the same
* ``bmm`` [B,M,K]x[B,K,N]: 2·B·M·N·K; ``baddbmm``: + B·M·N; ``matmul``: broadcast batch
* ``linear`` [...,K], weight [N,K] (, bias [N]): 2·M·N·K (+ M·N), M the product of the leading dims
* convolutions: :mod:`tcreport.analysis.conv_flops` (stride, padding, dilation, groups from the
  recorded scalar arguments; forward, transposed and backward)
* attention (``scaled_dot_product_attention`` and its flash / efficient / cuDNN variants,
  ``_flash_attention_forward``, ``_efficient_attention_forward``, the flash-attn package's
  ``flash_attn::_flash_attn_forward`` op and ``FlashAttnFunc`` autograd function, whose q, k, v
  are [B, L, H, D] as in ``_flash_attention_forward``): Q·Kᵀ and P·V, 2·B·H·L·S·(D + Dv), halved
  when the op's recorded ``is_causal`` is true (the mask skips half of the L×S scores, L = S);
  counted unmasked, and said so, where the trace did not record the flag. flash-attn's other
  functions (packed QKV, variable length) have no formula here: their shapes need ``cu_seqlens``.
  Softmax is left out, as TraceLens and flash-attn's own benchmark leave it out.

Bytes moved: every operand read once and the result written once, at the op's element size
(``addmm``'s bias as recorded, attention's Q, K, V and output), the minimum traffic a roofline
divides by.
"""

from __future__ import annotations

import re

from tcreport.analysis import conv_flops
from tcreport.analysis.counts import Count, moved, none, size
from tcreport.analysis.eligibility import normalise_op_type
from tcreport.analysis.shapes import Shape, element_bytes, flag, parse_concrete, parse_shapes

__all__ = ["HEAVY", "Count", "count"]

_GEMM = {"mm", "addmm", "addmm_", "_addmm_activation", "matmul", "bmm", "baddbmm", "baddbmm_",
         "linear", "matmul_", "dense", "matmulop",
         # XLA's dots and cuBLAS calls, whose shapes the xplane reader writes as the GEMM they
         # compute ([B,]M,K and [B,]K,N: tcreport.ingest.xplane.hlo.gemm_shapes)
         "dot", "cublaslt-matmul", "cublas-gemm"}  # fmt: skip
_BIAS_FIRST = {"addmm", "addmm_", "_addmm_activation", "baddbmm", "baddbmm_"}
_ATTN = re.compile(
    r"^(_?scaled_dot_product(_flash|_efficient|_cudnn)?_attention|_flash_attention_forward"
    r"|_efficient_attention_forward|flash_attn.*fwd|flash_attn::_flash_attn_forward"
    r"|flashattnfunc)$"
)
#: Attention ops whose q, k, v come as [B, L, H, D] (heads third), not SDPA's [B, H, L, D].
_HEADS_THIRD = ("_flash_attention", "_efficient_attention", "flashattnfunc", "flash_attn::")
#: Where each attention op's schema puts ``is_causal`` (PyTorch's native_functions.yaml;
#: flash-attn's ``_flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, ...)``).
_CAUSAL_ARG = {
    "scaled_dot_product_attention": 5,
    "_scaled_dot_product_flash_attention": 4,
    "_scaled_dot_product_efficient_attention": 6,
    "_scaled_dot_product_cudnn_attention": 6,
    "_flash_attention_forward": 8,
    "flash_attn::_flash_attn_forward": 5,
}
#: ``_efficient_attention_forward`` records a mask type instead: 0 none, 1 and 2 causal.
_MASK_TYPE_ARG = {"_efficient_attention_forward": 9}
_CONV = re.compile(
    r"^(_?convolution|conv[123]d|cudnn_convolution|mkldnn_convolution|conv2d"
    r"|cudnn-conv(-bias-activation)?)$"  # XLA's cuDNN calls, in the forward problem's shapes
)
_CONV_DGRAD = re.compile(r"convolution_backward_input$")
_CONV_BWD = conv_flops.BACKWARD
#: Op types whose FLOPs this module can count: the "heavy" ops an MFU figure must cover.
HEAVY = re.compile(
    r"^(mm|addmm_?|_addmm_activation|matmul|bmm|baddbmm_?|linear|dot|cublas(lt)?-(gemm|matmul)"
    r"|.*conv.*|.*attention.*"
    r"|_flash_attention_.*|flash_attn.*|flashattn.*func)$"
)


def _gemm(t: str, shapes: list[Shape], eb: int | None) -> Count:
    bias_first = t in _BIAS_FIRST
    mats = [s.dims for s in (shapes[1:] if bias_first else shapes) if s.dims]
    if len(mats) < 2:
        return none("gemm", "fewer than two operand shapes recorded")
    a, b = mats[0], mats[1]
    if t == "linear":
        if len(a) < 1 or len(b) != 2 or a[-1] != b[1]:
            return none("gemm", "input/weight shapes do not chain")
        bias = len(mats) > 2 and len(mats[2]) >= 1
        m, n = size(a[:-1]), b[0]
        flops = 2 * m * n * b[1] + (m * n if bias else 0)
        nbytes = moved((size(a), size(b), size(mats[2]) if bias else 0, m * n), eb)
        return Count(flops, "2·M·N·K + M·N (linear, bias)" if bias else "2·M·N·K (linear)",
                     "gemm", nbytes)  # fmt: skip
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        return none("gemm", "operand shapes do not chain (K differs)")
    m, k, n = a2[-2], a2[-1], b2[-1]
    ba, bb = a2[:-2], b2[:-2]
    width = max(len(ba), len(bb))
    ba, bb = (1,) * (width - len(ba)) + ba, (1,) * (width - len(bb)) + bb
    if any(x != y and 1 not in (x, y) for x, y in zip(ba, bb, strict=True)):
        return none("gemm", "batch dimensions do not broadcast")
    batch = size(max(x, y) for x, y in zip(ba, bb, strict=True))
    bias = bias_first and bool(shapes[0].dims)
    flops = 2 * batch * m * n * k + (batch * m * n if bias else 0)
    nbytes = moved((size(a), size(b), size(shapes[0].dims) if bias else 0, batch * m * n), eb)
    formula = ("2·B·M·N·K" if batch > 1 else "2·M·N·K") + (" + bias" if bias else "")
    return Count(flops, formula, "gemm", nbytes)


def _causal(t: str, concrete: tuple[str, ...]) -> bool | None:
    """The op's recorded ``is_causal``; ``None`` when the trace did not record it."""
    if t in _MASK_TYPE_ARG:
        i = _MASK_TYPE_ARG[t]
        v = concrete[i].strip() if len(concrete) > i else ""
        return {"0": False, "1": True, "2": True}.get(v)
    i = _CAUSAL_ARG.get(t, -1)
    return flag(concrete[i]) if 0 <= i < len(concrete) else None


def _attention(t: str, shapes: list[Shape], concrete: tuple[str, ...], eb: int | None) -> Count:
    dims = [s.dims for s in shapes if len(s.dims) == 4][:3]
    if len(dims) < 3:
        return none("attention", "query/key/value shapes not recorded")
    q, k, v = dims
    if t.startswith(_HEADS_THIRD):
        q, k, v = ((d[0], d[2], d[1], d[3]) for d in (q, k, v))  # [B, L, H, D] -> [B, H, L, D]
    b, h, lq, d = q
    if k[3] != d or k[2] != v[2]:
        return none("attention", "query/key/value shapes do not chain")
    flops = 2 * b * h * lq * k[2] * (d + v[3])
    nbytes = moved((size(q), size(k), size(v), b * h * lq * v[3]), eb)
    causal = _causal(t, concrete)
    if causal is None:
        return Count(flops, "2·B·H·L·S·(D+Dv); is_causal not recorded, counted unmasked",
                     "attention", nbytes)  # fmt: skip
    if not causal:
        return Count(flops, "2·B·H·L·S·(D+Dv), not causal", "attention", nbytes)
    if lq != k[2]:
        return none("attention", "causal with query length ≠ key length (mask alignment unknown)")
    return Count(flops // 2, "B·H·L·S·(D+Dv): causal, half of 2·B·H·L·S·(D+Dv)", "attention",
                 nbytes)  # fmt: skip


def _conv(
    t: str, shapes: list[Shape], outputs: str | None, c: tuple[str, ...], eb: int | None
) -> Count:
    """Backward forms by name; a forward one from its recorded output shape (DLProf, nsys) or,
    in a Kineto trace, from its scalar arguments."""
    if _CONV_DGRAD.search(t):
        return conv_flops.data_gradient(shapes)
    if t == conv_flops.BACKWARD:
        return conv_flops.backward(shapes, c, eb)
    out = parse_shapes(outputs)
    if t in conv_flops.SCHEMAS and not out:
        return conv_flops.forward(t, shapes, c, eb)
    return conv_flops.from_output_shape(shapes, out, eb)


def count(
    op_type: str | None,
    input_shapes: str | None,
    output_shapes: str | None,
    concrete_inputs: str | None = None,
    dtype: str | None = None,
) -> Count:
    """FLOPs and bytes of one call of an op of this type with these recorded shapes, scalar
    arguments (``Concrete Inputs`` JSON text) and data type."""
    if not op_type:
        return none("other", "no op type")
    t = normalise_op_type(op_type)
    shapes = parse_shapes(input_shapes)
    eb = element_bytes(dtype)
    if t in _GEMM:
        return _gemm(t, shapes, eb) if shapes else none("gemm", "no shapes recorded")
    if _ATTN.match(t):
        if not shapes:
            return none("attention", "no shapes recorded")
        return _attention(t, shapes, parse_concrete(concrete_inputs), eb)
    if _CONV.match(t) or _CONV_DGRAD.search(t) or t in conv_flops.SCHEMAS or t == _CONV_BWD:
        if not shapes:
            return none("conv", "no shapes recorded")
        return _conv(t, shapes, output_shapes, parse_concrete(concrete_inputs), eb)
    if HEAVY.match(t):
        kind = "attention" if "attn" in t or "attention" in t else "other"
        return none(kind, f"no FLOP formula for {t}")
    return none("other", "not a GEMM, convolution or attention op")
