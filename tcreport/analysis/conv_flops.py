"""Convolution FLOPs and bytes from the shapes and the scalar arguments PyTorch recorded.

A convolution's work depends on its output size, and that on stride, padding and dilation, which
are not tensor shapes: Kineto records them only as ``Concrete Inputs`` (``"[2, 2]"``), beside
``groups`` and ``transposed``. Each op that can own a convolution's kernels lists them at its own
positions, so every supported schema is written down here (from ``native_functions.yaml``); an op
recorded with another number of arguments (another PyTorch version) gets no count rather than a
misread one. Formulas, for input [N, C, H, W..], weight [K, C/g, R, S..]:

* forward: output [N, K, P, Q..] with P = ⌊(H + 2·pad − dil·(R − 1) − 1) / stride⌋ + 1, and
  2·N·K·P·Q·(C/g)·R·S FLOPs (a multiply-add per weight per output position; the bias add is
  left out, as TraceLens's count of ``aten::convolution`` leaves it out);
* transposed (weight [C, K/g, R, S..]): every input position meets (K/g)·R·S weights,
  2·N·C·H·W·(K/g)·R·S, output P = (H − 1)·stride − 2·pad + dil·(R − 1) + out_pad + 1;
* ``convolution_backward``: the input gradient and the weight gradient each cost the forward
  count, and only those ``output_mask`` asks for are counted.

Bytes: input, weight (and bias) read once, output written once; backward: for each gradient
asked for, the output gradient and the other operand read and the gradient written.
"""

from __future__ import annotations

from dataclasses import dataclass

from tcreport.analysis.counts import Count, moved, none, size
from tcreport.analysis.shapes import Shape, flag, int_list


@dataclass(frozen=True)
class _Schema:
    """Where one op's arguments sit (``None``: the op has no such argument)."""

    arity: tuple[int, ...]  # the argument counts of the PyTorch versions that have this layout
    stride: int
    padding: int
    dilation: int | None
    groups: int | None
    transposed: int | bool  # the index of the flag, or the op's constant
    output_padding: int | None = None
    bias: int | None = None  # the bias tensor's position in Input Dims


_CONVOLUTION = _Schema((9,), 3, 4, 5, 8, 6, 7, 2)
_CONV_ND = _Schema((7,), 3, 4, 5, 6, False, None, 2)
_CONV_TRANSPOSE_ND = _Schema((8,), 3, 4, 7, 6, True, 5, 2)
_MIOPEN = _Schema((9,), 4, 3, 5, 6, False, None, 2)
SCHEMAS: dict[str, _Schema] = {
    # convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    "convolution": _CONVOLUTION,
    # _convolution(... the same nine, benchmark, deterministic, cudnn_enabled[, allow_tf32])
    "_convolution": _Schema((12, 13), 3, 4, 5, 8, 6, 7, 2),
    # conv2d(input, weight, bias, stride, padding, dilation, groups)
    "conv1d": _CONV_ND,
    "conv2d": _CONV_ND,
    "conv3d": _CONV_ND,
    # conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)
    "conv_transpose1d": _CONV_TRANSPOSE_ND,
    "conv_transpose2d": _CONV_TRANSPOSE_ND,
    "conv_transpose3d": _CONV_TRANSPOSE_ND,
    # cudnn_convolution(self, weight, padding, stride, dilation, groups, benchmark,
    #                   deterministic, allow_tf32): the op that owns cuDNN's kernels
    "cudnn_convolution": _Schema((9,), 3, 2, 4, 5, False),
    # cudnn_convolution_transpose(self, weight, padding, output_padding, stride, dilation,
    #                             groups, benchmark, deterministic, allow_tf32)
    "cudnn_convolution_transpose": _Schema((10,), 4, 2, 5, 6, True, 3),
    # miopen_convolution(self, weight, bias, padding, stride, dilation, groups, benchmark,
    #                    deterministic): ROCm's
    "miopen_convolution": _MIOPEN,
    "miopen_depthwise_convolution": _MIOPEN,
    "miopen_convolution_transpose": _Schema((10,), 5, 3, 6, 7, True, 4, 2),
}
#: convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
#: transposed, output_padding, groups, output_mask)
BACKWARD = "convolution_backward"
_BACKWARD_ARITY = 11
_FORMULA = "2·N·K·P·Q·(C/g)·R·S"
_FORMULA_T = "2·N·C·H·W·(K/g)·R·S (transposed)"


def _arg(concrete: tuple[str, ...], i: int | None, default: tuple[int, ...]) -> tuple[int, ...]:
    return default if i is None else (int_list(concrete[i]) or ())


def _spatial(
    x: tuple[int, ...], w: tuple[int, ...], s: _Schema, c: tuple[str, ...], transposed: bool
) -> tuple[int, ...] | str:
    """Output spatial size, or why it cannot be known."""
    n = len(x) - 2
    ones, zeros = (1,) * n, (0,) * n
    raw_pad = c[s.padding].strip().strip("'\"").lower()
    stride = _arg(c, s.stride, ones)
    dil = _arg(c, s.dilation, ones)
    opad = _arg(c, s.output_padding, zeros) if transposed else zeros
    pad = zeros if raw_pad in ("valid", "same") else _arg(c, s.padding, zeros)
    params = [stride, pad, dil, opad]
    params = [p * n if len(p) == 1 else p for p in params]
    if any(len(p) != n for p in params) or any(v < 1 for v in params[0] + params[2]):
        return "stride/padding/dilation not recorded (Concrete Inputs)"
    stride, pad, dil, opad = params
    kernel = w[2:]
    if raw_pad == "same" and not transposed:
        out = tuple(x[2:])
    elif transposed:
        out = tuple(
            (x[2 + i] - 1) * stride[i] - 2 * pad[i] + dil[i] * (kernel[i] - 1) + opad[i] + 1
            for i in range(n)
        )
    else:
        out = tuple(
            (x[2 + i] + 2 * pad[i] - dil[i] * (kernel[i] - 1) - 1) // stride[i] + 1
            for i in range(n)
        )
    return out if all(v >= 1 for v in out) else "recorded sizes give an empty output"


def _groups(c: tuple[str, ...], at: int | None) -> int | None:
    if at is None:
        return 1
    g = int_list(c[at])
    return g[0] if g and len(g) == 1 and g[0] >= 1 else None


def _transposed(c: tuple[str, ...], at: int | bool) -> bool | None:
    return at if isinstance(at, bool) else flag(c[at])


def _channels_chain(x: tuple[int, ...], w: tuple[int, ...], g: int, transposed: bool) -> bool:
    if transposed:
        return x[1] == w[0] and w[0] % g == 0
    return x[1] == w[1] * g and w[0] % g == 0


def forward(
    t: str, shapes: list[Shape], concrete: tuple[str, ...], element_bytes: int | None
) -> Count:
    """A forward convolution from input/weight shapes and its recorded scalar arguments."""
    s = SCHEMAS[t]
    if len(concrete) not in s.arity:
        why = "no stride/padding recorded (no Concrete Inputs) and no output shape"
        return none("conv", why if not concrete else f"{t} recorded with an unknown signature")
    x, w = (shapes[0].dims, shapes[1].dims) if len(shapes) >= 2 else ((), ())
    if not 3 <= len(x) <= 5 or len(w) != len(x):
        return none("conv", "input/weight shapes not recorded")
    transposed, g = _transposed(concrete, s.transposed), _groups(concrete, s.groups)
    if transposed is None or g is None:
        return none("conv", "groups/transposed not recorded (Concrete Inputs)")
    if not _channels_chain(x, w, g, transposed):
        return none("conv", "input/weight channels do not match the groups")
    sp = _spatial(x, w, s, concrete, transposed)
    if isinstance(sp, str):
        return none("conv", sp)
    out = (x[0], w[1] * g if transposed else w[0], *sp)
    per_weight = size(x) if transposed else size(out)
    flops = 2 * per_weight * size(w[1:])
    bias = s.bias is not None and len(shapes) > s.bias and bool(shapes[s.bias].dims)
    nbytes = moved((size(x), size(w), size(out), out[1] if bias else 0), element_bytes)
    return Count(flops, _FORMULA_T if transposed else _FORMULA, "conv", nbytes)


def backward(shapes: list[Shape], concrete: tuple[str, ...], element_bytes: int | None) -> Count:
    """``convolution_backward``: the gradients ``output_mask`` asks for, each the forward count."""
    if len(concrete) != _BACKWARD_ARITY:
        return none("conv", "convolution_backward without its recorded arguments")
    dims = [s.dims for s in shapes[:3]]
    if (
        len(dims) < 3
        or not 3 <= len(dims[1]) <= 5
        or not len(dims[0]) == len(dims[1]) == len(dims[2])
    ):
        return none("conv", "grad-output/input/weight shapes not recorded")
    go, x, w = dims
    transposed, g = flag(concrete[7]), _groups(concrete, 9)
    mask = [flag(v) for v in concrete[10].strip("[] ").split(",")]
    if transposed is None or g is None or len(mask) != 3 or None in mask:
        return none("conv", "transposed/groups/output_mask not recorded (Concrete Inputs)")
    if not _channels_chain(x, w, g, transposed) or go[0] != x[0]:
        return none("conv", "grad-output/input/weight shapes do not chain")
    fwd = 2 * (size(x) if transposed else size(go)) * size(w[1:])
    want_input, want_weight, want_bias = (bool(m) for m in mask)
    flops = fwd * (int(want_input) + int(want_weight))
    elements = [size(go) + size(w) + size(x)] * (int(want_input) + int(want_weight))
    elements += [size(go) + go[1]] if want_bias else []
    formula = ("2·N·C·H·W·(K/g)·R·S" if transposed else _FORMULA) + " per gradient asked for"
    return Count(flops, formula, "conv", moved(elements, element_bytes))


def from_output_shape(
    shapes: list[Shape], outputs: list[Shape], element_bytes: int | None
) -> Count:
    """DLProf / nsys: a forward convolution whose output shape was recorded (no stride needed)."""
    dims = [s.dims for s in shapes if s.dims]
    out_dims = [s.dims for s in outputs if s.dims]
    if len(dims) < 2 or len(dims[1]) < 3:
        return none("conv", "input/weight shapes not recorded")
    if not out_dims:
        return none("conv", "no output shape and no stride/padding recorded (Concrete Inputs)")
    out, w = out_dims[0], dims[1]
    if len(out) != len(w) or out[1] != w[0]:
        return none("conv", "output/weight shapes do not match")
    bias = len(dims) > 2 and len(dims[2]) == 1 and dims[2][0] == w[0]
    nbytes = moved((size(dims[0]), size(w), size(out), w[0] if bias else 0), element_bytes)
    return Count(2 * out[0] * size(out[2:]) * size(w), _FORMULA, "conv", nbytes)


def data_gradient(shapes: list[Shape]) -> Count:
    """The 2021 ``cudnn_convolution_backward_input``: grad-output [N,K,P,Q] and weight give it."""
    dims = [s.dims for s in shapes if s.dims]
    if len(dims) < 2 or len(dims[1]) < 3 or dims[0][1] != dims[1][0]:
        return none("conv", "grad-output/weight shapes not recorded")
    out, w = dims[0], dims[1]
    return Count(2 * out[0] * size(out[2:]) * size(w), _FORMULA, "conv")
