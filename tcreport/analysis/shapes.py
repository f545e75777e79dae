"""Shapes and data types as the profilers write them, and the GEMM/convolution problem they make.

Why-not explanations (alignment, tiny problems) and the FLOP counts of the throughput figures both
read an op's recorded input shapes; this is the one parser of them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tcreport.analysis.eligibility import normalise_op_type

#: Alignment (elements) that cuBLAS/cuDNN need for Tensor Core kernels, per operand type.
ALIGN = {"fp16": 8, "bf16": 8, "tf32": 4, "int8": 16, "fp8": 16}
#: Below this many multiply-adds (64^3) libraries pick CUDA-core kernels; TC setup does not pay.
TINY_MACS = 64**3
HALF = {"fp16", "bf16"}

_DTYPES = {
    "fp64": ("float64", "double", "fp64", "f64", "dt_double", "c10::double"),
    "fp32": ("float32", "float", "fp32", "f32", "dt_float", "single"),
    "tf32": ("tf32", "tensorfloat32"),
    "fp16": ("float16", "half", "fp16", "f16", "dt_half", "c10::half"),
    "bf16": ("bfloat16", "bf16", "dt_bfloat16", "c10::bfloat16"),
    "int8": ("int8", "qint8", "i8", "dt_int8", "signed char", "quint8"),
}


def normalise_dtype(dtype: str | None) -> str | None:
    """One spelling per type: ``torch.float32``, ``c10::BFloat16``, ``DT_HALF`` -> fp32/bf16/fp16."""
    if not dtype:
        return None
    s = dtype.strip().lower().removeprefix("torch.").removeprefix("tf.")
    if "float8" in s or "e4m3" in s or "e5m2" in s or s.startswith("fp8"):
        return "fp8"
    for norm, names in _DTYPES.items():
        if s in names:
            return norm
    return s


#: Bytes per element of each normalised type: what one value of a tensor costs to move.
_ELEMENT_BYTES = {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}


def element_bytes(dtype: str | None) -> int | None:
    """Bytes per element of a (raw or normalised) data type; ``None`` when it is not known."""
    return _ELEMENT_BYTES.get(normalise_dtype(dtype) or "")


# --- shapes -------------------------------------------------------------------------------------

_LABELLED = re.compile(r"<([^<>]*)>")
_PAIR = re.compile(r"([A-Za-z]+)\s*:\s*(\d+)")


@dataclass(frozen=True)
class Shape:
    dims: tuple[int, ...]
    labels: tuple[str, ...] = ()  # DLProf's N,C,H,W / K,C,R,S when given

    def get(self, label: str) -> int | None:
        return self.dims[self.labels.index(label)] if label in self.labels else None


def parse_shapes(text: str | None) -> list[Shape]:
    """Input shapes in any of the formats readers pass through.

    DLProf ``<N:32, C:3, H:32, W:32>; <K:6, C:3, R:3, S:3>``, Kineto ``Input Dims``
    ``[[32, 128], [128, 50257], []]``, nsys autograd ``sizes = [[32, 128], [128, 50257]]``.
    Unparseable text gives an empty list: shapes are evidence, never a reason to fail.
    """
    if not text:
        return []
    if "<" in text and ":" in text:
        out = []
        for body in _LABELLED.findall(text):
            pairs = _PAIR.findall(body)
            out.append(Shape(tuple(int(v) for _, v in pairs), tuple(k for k, _ in pairs)))
        return out
    start, end = text.find("["), text.rfind("]")
    if start < 0 or end <= start:
        return []
    try:
        raw = json.loads(text[start : end + 1])
    except ValueError:
        return []
    if isinstance(raw, list) and raw and all(isinstance(x, int) for x in raw):
        raw = [raw]  # a single shape
    return (
        [Shape(tuple(x)) for x in raw if isinstance(x, list) and all(isinstance(d, int) for d in x)]
        if isinstance(raw, list)
        else []
    )


# --- problem dimensions ---------------------------------------------------------------------------

_CONV = re.compile(r"conv|convolution")
_BIAS_FIRST = {"addmm", "addmm_", "baddbmm", "baddbmm_", "addbmm", "_addmm_activation"}


@dataclass(frozen=True)
class Problem:
    kind: str  # "gemm" | "conv"
    dims: tuple[tuple[str, int], ...]  # named dims that must be aligned
    macs: int | None


def problem_of(op_type: str, shapes: Sequence[Shape], tensorflow: bool) -> Problem | None:
    """GEMM M/N/K or conv C/K from the op's input shapes; ``None`` when they do not say."""
    t = normalise_op_type(op_type)
    if _CONV.search(t):
        return _conv(shapes, tensorflow)
    mats = [s for s in shapes if len(s.dims) >= 2]
    if t in _BIAS_FIRST and len(shapes) >= 3:
        mats = [s for s in shapes[1:] if len(s.dims) >= 2]
    if len(mats) < 2:
        return None
    a, b = mats[0].dims, mats[1].dims
    if t == "linear":  # input [..., K], weight [N, K]
        m, k, n = math.prod(a[:-1]), a[-1], b[0]
    else:  # [.., M, K] x [.., K, N]; transposes only swap which dims are which
        m, k, n = a[-2], a[-1], b[-1]
    batch = math.prod(a[:-2]) if t != "linear" and len(a) > 2 else 1
    return Problem("gemm", (("M", m), ("N", n), ("K", k)), batch * m * n * k)


def _conv(shapes: Sequence[Shape], tensorflow: bool) -> Problem | None:
    if len(shapes) < 2:
        return None
    x, w = shapes[0], shapes[1]
    if x.labels and w.labels:
        c, k = w.get("C") or x.get("C"), w.get("K")
    elif len(w.dims) >= 3:
        # PyTorch weights are [K, C/groups, R, S]; TensorFlow filters are [R, S, C, K]
        c, k = (w.dims[-2], w.dims[-1]) if tensorflow else (w.dims[1], w.dims[0])
    else:
        return None
    if c is None or k is None:
        return None
    spatial = math.prod(x.dims[2:]) if len(x.dims) > 2 else 1
    kernel = math.prod(w.dims[2:]) if not tensorflow else math.prod(w.dims[:-2])
    macs = (x.dims[0] if x.dims else 1) * spatial * c * k * kernel
    return Problem("conv", (("C", c), ("K", k)), macs)


def unaligned(dims: Iterable[tuple[str, int]], precision: str) -> tuple[tuple[str, int, int], ...]:
    """(name, size, padded size) of every dimension that breaks the alignment of ``precision``:
    the one padding decision, for a trace's recorded shapes (why-not, TC003) and for the layer
    sizes the model audit read (AU001) alike. Every size counts, small ones too: the first
    convolution's 3 input channels made cuDNN miss the Tensor Cores in the H200 fp16 CNN sample."""
    a = ALIGN.get(precision)
    if a is None:
        return ()
    return tuple((name, v, -(-v // a) * a) for name, v in dims if v % a)


def padding_for(problem: Problem | None, precision: str) -> str | None:
    """ "pad N 50257 → 50264" for every dimension that breaks the alignment of ``precision``."""
    if problem is None:
        return None
    bad = [f"{name} {v} → {padded}" for name, v, padded in unaligned(problem.dims, precision)]
    return "pad " + ", ".join(bad) if bad else None


#: A model layer's size attributes (PyTorch's and Keras's names) as the dimensions of the GEMM or
#: convolution it runs, so the audit's layers and the trace's recorded problems can be compared.
_LAYER_DIMS = {
    "in_features": "K",
    "out_features": "N",
    "units": "N",
    "in_channels": "C",
    "out_channels": "K",
    "filters": "K",
}


def layer_problem(kind: str, dims: Iterable[tuple[str, int]]) -> Problem | None:
    """The GEMM or convolution dims an audited layer (``Linear``, ``Dense``, ``Conv2d``) runs,
    named as :func:`problem_of` names a recorded op's; ``None`` for other layers."""
    k = "conv" if _CONV.search(kind.lower()) else "gemm" if kind in ("Linear", "Dense") else None
    named = tuple((_LAYER_DIMS[n], v) for n, v in dims if n in _LAYER_DIMS)
    return Problem(k, named, None) if k is not None and named else None


def same_sizes(layer: Problem, recorded: Problem) -> bool:
    """Whether a recorded op's problem has every size the layer fixes (a layer does not know the
    batch, so a GEMM's M never decides)."""
    have = dict(recorded.dims)
    return layer.kind == recorded.kind and all(have.get(n) == v for n, v in layer.dims)


# --- scalar arguments -----------------------------------------------------------------------------


def parse_concrete(text: str | None) -> tuple[str, ...]:
    """Kineto ``Concrete Inputs`` (``["","","[2, 2]","False","1"]``) as one string per argument,
    ``""`` where the profiler recorded no value (a tensor, ``None``); ``()`` when unreadable."""
    if not text:
        return ()
    try:
        raw = json.loads(text)
    except ValueError:
        return ()
    if not isinstance(raw, list):
        return ()
    return tuple(v if isinstance(v, str) else "" for v in raw)


_INT = re.compile(r"-?\d+")


def int_list(text: str) -> tuple[int, ...] | None:
    """``"[2, 2]"`` or ``"2"`` as integers; ``None`` for anything else (``""``, ``"same"``)."""
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    parts = [p.strip() for p in body.split(",")] if body.strip() else []
    if not parts or not all(_INT.fullmatch(p) for p in parts):
        return None
    return tuple(int(p) for p in parts)


def flag(text: str) -> bool | None:
    """A recorded bool (``"True"``/``"False"``, also ``"1"``/``"0"``); ``None`` when not one."""
    return {"true": True, "1": True, "false": False, "0": False}.get(text.strip().lower())
