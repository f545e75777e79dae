"""What each GPU kernel of an XLA program computed, from the program's HLO in the profile.

JAX's profiler (and TensorFlow's, for XLA-compiled functions) stores every program it ran as an
optimised ``HloProto`` on the ``/host:metadata`` plane, keyed by the program id that each GPU
kernel event carries (``program_id``, with ``hlo_module`` and ``hlo_op``). The HLO says what a
kernel named ``gemm_fusion_dot_4`` is: a fused ``dot`` of two bf16 matrices at the default
precision, which its name does not say and xprof's name heuristic calls "not Tensor Cores"
(recorded on an H200: sample_traces/h200-jax-xla-ncu, where Nsight Compute counted tensor-path
math in every such kernel but the fp32 ``HIGHEST`` ones).

So each kernel gets its HLO instruction: the one ``hlo_op`` names, or, inside an XLA command buffer
(``hlo_op`` = ``command_buffer_3``, a CUDA graph of many kernels), the fusion whose name the kernel
bears (XLA names a fusion's kernel after the instruction, ``.`` and ``-`` turned into ``_``).
From it: the op row (one per instruction, named as XLA names it, with JAX's name stack as its
scope), its type ("dot" and "convolution" for the matrix work, the custom call's library, else the
opcode), its input shapes, and the precision XLA compiled the matrix work to run
at: the operands' type, and for float32 the ``operand_precision`` (``HIGHEST`` is full float32;
``DEFAULT`` and ``HIGH`` let XLA use TF32 where the GPU has it, which is what ran: ncu counted
``tf32`` tensor-path operations in them) or an explicit dot ``algorithm``.

Only the fields read here are declared (field numbers from xla/service/hlo.proto and
xla/xla_data.proto), as :mod:`.proto` does for the XSpace: protobuf skips the rest.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from tcreport.ingest.xplane.proto import message_class

#: The stat of a ``/host:metadata`` event metadata entry that holds one program's ``HloProto``.
HLO_PROTO_STAT = "Hlo Proto"

_STR, _BYTES, _INT32, _INT64, _MSG = 9, 12, 5, 3, 11
_ONE, _MANY = 1, 3
_HLO_MESSAGES: tuple[tuple[str, tuple[tuple[str, int, int, int, str], ...]], ...] = (
    ("HloProto", (("hlo_module", 1, _MSG, _ONE, "HloModuleProto"),)),
    (
        "HloModuleProto",
        (
            ("name", 1, _STR, _ONE, ""),
            ("computations", 3, _MSG, _MANY, "HloComputationProto"),
            ("id", 5, _INT64, _ONE, ""),
        ),
    ),
    (
        "HloComputationProto",
        (
            ("name", 1, _STR, _ONE, ""),
            ("instructions", 2, _MSG, _MANY, "HloInstructionProto"),
            ("id", 5, _INT64, _ONE, ""),
        ),
    ),
    (
        "HloInstructionProto",
        (
            ("name", 1, _STR, _ONE, ""),
            ("opcode", 2, _STR, _ONE, ""),
            ("shape", 3, _MSG, _ONE, "ShapeProto"),
            ("metadata", 7, _MSG, _ONE, "OpMetadata"),
            ("custom_call_target", 28, _STR, _ONE, ""),
            ("id", 35, _INT64, _ONE, ""),
            ("operand_ids", 36, _INT64, _MANY, ""),
            ("called_computation_ids", 38, _INT64, _MANY, ""),
            ("convolution_dimension_numbers", 16, _MSG, _ONE, "ConvolutionDimensionNumbers"),
            ("dot_dimension_numbers", 30, _MSG, _ONE, "DotDimensionNumbers"),
            ("backend_config", 43, _BYTES, _ONE, ""),
            ("precision_config", 51, _MSG, _ONE, "PrecisionConfig"),
        ),
    ),
    (
        "ConvolutionDimensionNumbers",
        (
            ("kernel_input_feature_dimension", 3, _INT64, _ONE, ""),
            ("kernel_output_feature_dimension", 4, _INT64, _ONE, ""),
            ("kernel_spatial_dimensions", 6, _INT64, _MANY, ""),
            ("input_batch_dimension", 7, _INT64, _ONE, ""),
            ("input_feature_dimension", 8, _INT64, _ONE, ""),
            ("output_batch_dimension", 9, _INT64, _ONE, ""),
            ("output_feature_dimension", 10, _INT64, _ONE, ""),
            ("input_spatial_dimensions", 11, _INT64, _MANY, ""),
            ("output_spatial_dimensions", 12, _INT64, _MANY, ""),
        ),
    ),
    (
        "DotDimensionNumbers",
        (
            ("lhs_contracting_dimensions", 1, _INT64, _MANY, ""),
            ("rhs_contracting_dimensions", 2, _INT64, _MANY, ""),
            ("lhs_batch_dimensions", 3, _INT64, _MANY, ""),
            ("rhs_batch_dimensions", 4, _INT64, _MANY, ""),
        ),
    ),
    (
        "ShapeProto",
        (
            ("element_type", 2, _INT32, _ONE, ""),
            ("dimensions", 3, _INT64, _MANY, ""),
            ("tuple_shapes", 4, _MSG, _MANY, "ShapeProto"),
        ),
    ),
    ("OpMetadata", (("op_type", 1, _STR, _ONE, ""), ("op_name", 2, _STR, _ONE, ""))),
    (
        "PrecisionConfig",
        (("operand_precision", 1, _INT32, _MANY, ""), ("algorithm", 2, _INT32, _ONE, "")),
    ),
)

#: xla.PrimitiveType numbers, spelled as HLO text spells them.
_TYPES = {
    1: "pred", 2: "s8", 3: "s16", 4: "s32", 5: "s64", 6: "u8", 7: "u16", 8: "u32", 9: "u64",
    10: "f16", 11: "f32", 12: "f64", 13: "tuple", 15: "c64", 16: "bf16", 18: "c128",
    19: "f8e5m2", 20: "f8e4m3fn", 21: "s4", 22: "u4", 23: "f8e4m3b11fnuz", 24: "f8e5m2fnuz",
    25: "f8e4m3fnuz", 28: "f8e4m3", 29: "f8e3m4", 32: "f4e2m1fn", 33: "f8e8m0fnu",
}  # fmt: skip
#: xla.PrecisionConfig.Algorithm (number, name as a backend config spells it after ``ALG_``, the
#: math it runs): an explicit dot algorithm decides the precision (the operands' type otherwise).
#: The X3/X6/X9 forms split float32 into bf16/tf32 parts and run on the matrix units too.
_ALGORITHMS = (
    (1, "DOT_ANY_F8_ANY_F8_F32", "fp8"), (2, "DOT_ANY_F8_ANY_F8_F32_FAST_ACCUM", "fp8"),
    (3, "DOT_F16_F16_F16", "fp16"), (4, "DOT_F16_F16_F32", "fp16"),
    (5, "DOT_BF16_BF16_BF16", "bf16"), (6, "DOT_BF16_BF16_F32", "bf16"),
    (7, "DOT_BF16_BF16_F32_X3", "bf16"), (8, "DOT_BF16_BF16_F32_X6", "bf16"),
    (9, "DOT_TF32_TF32_F32", "tf32"), (10, "DOT_TF32_TF32_F32_X3", "tf32"),
    (11, "DOT_F32_F32_F32", "fp32"), (12, "DOT_F64_F64_F64", "fp64"),
    (13, "DOT_BF16_BF16_F32_X9", "bf16"),
)  # fmt: skip
_ALGORITHM = {number: math for number, _, math in _ALGORITHMS}
_ALGORITHM_NUMBER = {f"ALG_{name}": number for number, name, _ in _ALGORITHMS}
_PRECISION_NUMBER = {"DEFAULT": 0, "HIGH": 1, "HIGHEST": 2}
_TUPLE = 13  # xla.PrimitiveType TUPLE
#: The tcreport dtype of a matrix operand type.
_DTYPE = {"f16": "fp16", "bf16": "bf16", "f32": "fp32", "f64": "fp64", "s8": "int8", "u8": "int8"}
#: The matrix work inside a fusion, heaviest first.
_MATRIX = ("dot", "scaled-dot", "ragged-dot", "convolution")
#: Custom-call targets of the GPU libraries XLA calls for matrix work, as op types the
#: eligibility tables know.
_LIBRARY = (
    (re.compile(r"cublas\$lt|cublaslt", re.I), "cublaslt-matmul"),
    (re.compile(r"cublas", re.I), "cublas-gemm"),
    (re.compile(r"cudnn\$conv.*bias.*activation", re.I), "cudnn-conv-bias-activation"),
    (re.compile(r"cudnn\$conv", re.I), "cudnn-conv"),
)
#: How deep to look for matrix work through fusions nested in fusions.
_DEPTH = 4


@dataclass(frozen=True)
class HloOp:
    """One HLO instruction as an op: what the reader puts in the ops table."""

    name: str  # the instruction's name (``gemm_fusion_dot.4``)
    type: str  # "dot", "convolution", "cublaslt-matmul", "cudnn-conv", "fusion", "copy"...
    scope: str | None  # JAX's name stack (``jit(train_step)/jvp()/dot_general``)
    input_shapes: str | None  # "[[256, 16384], [16384, 1000]]": the matrix work's operands
    dtype: str | None  # the precision the matrix work was compiled to run at; else the inputs'
    output_shapes: str | None = None  # a convolution's output, labelled: its FLOP count needs it


def message(data: bytes) -> Any:
    """One serialised ``HloProto``; raises protobuf's ``DecodeError`` on garbage."""
    proto = message_class("tcreport.hlo", _HLO_MESSAGES, "HloProto")()
    proto.ParseFromString(data)
    return proto


def _shapes(operands: list[Any]) -> str | None:
    """Operand shapes as the other readers write them (Kineto's ``Input Dims``:
    ``[[256, 16384], [16384, 1000]]``; the element type is the op's dtype), a tuple operand as
    its parts' list."""

    def dims(s: Any) -> Any:
        if int(s.element_type) == _TUPLE:
            return [dims(t) for t in s.tuple_shapes]
        return [int(d) for d in s.dimensions]

    return json.dumps([dims(o.shape) for o in operands]) if operands else None


def _matrix_dtype(precisions: list[int], algorithm: int, operands: list[Any]) -> str | None:
    """The precision a dot or convolution runs at: its algorithm's, else its operands' type, with
    float32 at DEFAULT or HIGH precision meaning TF32 (XLA's choice on a GPU that has it)."""
    if algorithm in _ALGORITHM:
        return _ALGORITHM[algorithm]
    kind = next((_TYPES.get(int(o.shape.element_type), "") for o in operands), "")
    if kind.startswith("f8"):
        return "fp8"
    dtype = _DTYPE.get(kind)
    if dtype == "fp32":
        return "fp32" if max(precisions or [0]) >= 2 else "tf32"
    return dtype


def _gemm_config(inst: Any) -> dict[str, Any]:
    """A cuBLAS call's ``gemm_backend_config`` (its backend config is JSON): where XLA keeps the
    call's ``precision_config`` and ``dot_dimension_numbers``; ``{}`` when absent or damaged."""
    try:
        config = json.loads(bytes(inst.backend_config) or b"{}")
    except (ValueError, UnicodeDecodeError, RecursionError):
        return {}
    gemm = config.get("gemm_backend_config") if isinstance(config, dict) else None
    return gemm if isinstance(gemm, dict) else {}


def _ints(values: object) -> list[int] | None:
    """A JSON list of dimension numbers (XLA writes them as strings: ``["1"]``)."""
    if not isinstance(values, list):
        return None
    out = [int(v) for v in values if isinstance(v, int | str) and str(v).isdigit()]
    return out if len(out) == len(values) else None


def _dot_dims(inst: Any) -> tuple[list[int], ...] | None:
    """(lhs contracting, rhs contracting, lhs batch, rhs batch) of a dot or a cuBLAS call."""
    d = inst.dot_dimension_numbers
    if d.lhs_contracting_dimensions:
        fields = [d.lhs_contracting_dimensions, d.rhs_contracting_dimensions]
        fields += [d.lhs_batch_dimensions, d.rhs_batch_dimensions]
        return tuple([int(x) for x in f] for f in fields)
    dims = _gemm_config(inst).get("dot_dimension_numbers")
    if not isinstance(dims, dict):
        return None
    found = tuple(
        _ints(dims.get(f"{side}_{kind}_dimensions", []))
        for side, kind in (("lhs", "contracting"), ("rhs", "contracting"))
        + (("lhs", "batch"), ("rhs", "batch"))
    )
    if any(f is None for f in found) or not found[0]:
        return None
    return tuple(f or [] for f in found)


def gemm_shapes(inst: Any, operands: list[Any]) -> str | None:
    """A dot's operands as the GEMM it computes, ``[[B,]M,K]`` and ``[[B,]K,N]`` (batch dimensions
    multiplied into B, the others into M, K and N), so a FLOP count and the alignment rules read
    it as a matrix product; ``None`` where the dimensions do not add up."""
    dims = _dot_dims(inst)
    if dims is None or len(operands) < 2:
        return None
    lhs, rhs = list(operands[0].shape.dimensions), list(operands[1].shape.dimensions)
    lc, rc, lb, rb = dims
    if any(not 0 <= i < len(lhs) for i in lc + lb) or any(not 0 <= i < len(rhs) for i in rc + rb):
        return None
    k, b = math.prod(lhs[i] for i in lc), math.prod(lhs[i] for i in lb)
    if k != math.prod(rhs[i] for i in rc) or b != math.prod(rhs[i] for i in rb):
        return None
    m = math.prod(x for i, x in enumerate(lhs) if i not in lc and i not in lb)
    n = math.prod(x for i, x in enumerate(rhs) if i not in rc and i not in rb)
    batch = [b] if b > 1 else []
    return json.dumps([[*batch, m, k], [*batch, k, n]])


#: Spatial dimension labels of a convolution's input, filter and output, by how many there are
#: (the labelled form DLProf writes: ``<N:32, C:3, H:32, W:32>``, ``<K:6, C:3, R:3, S:3>``).
_SPATIAL = {
    1: (("W",), ("S",), ("Q",)),
    2: (("H", "W"), ("R", "S"), ("P", "Q")),
    3: (("D", "H", "W"), ("T", "R", "S"), ("O", "P", "Q")),
}


def _labelled(pairs: list[tuple[str, int]]) -> str:
    return "<" + ", ".join(f"{k}:{v}" for k, v in pairs) + ">"


def conv_shapes(inst: Any, operands: list[Any], result: Any) -> tuple[str, str] | None:
    """A convolution's (input and filter, output) shapes in the labelled form the alignment rules
    and the FLOP count read: ``<N, C, H, W>; <K, C/groups, R, S>`` and ``<N, K, P, Q>``. XLA keeps
    the forward convolution's dimension numbers on cuDNN's backward calls too, so the three shapes
    are found by the call's kind: the filter gradient is the result of a backward-filter call,
    the input gradient of a backward-input one (checked on the H200 JAX programs)."""
    target = str(inst.custom_call_target).lower()
    shapes = [list(o.shape.dimensions) for o in operands[:2]]
    if len(shapes) < 2:
        return None
    res = list((result.tuple_shapes[0] if len(result.tuple_shapes) else result).dimensions)
    if "backwardfilter" in target:
        x, w, y = shapes[0], res, shapes[1]
    elif "backwardinput" in target:
        x, w, y = res, shapes[1], shapes[0]
    else:
        x, w, y = shapes[0], shapes[1], res
    d = inst.convolution_dimension_numbers
    indexes = [d.input_batch_dimension, d.input_feature_dimension, d.output_batch_dimension]
    indexes += [d.output_feature_dimension, d.kernel_output_feature_dimension]
    indexes += [d.kernel_input_feature_dimension, *d.input_spatial_dimensions]
    indexes += [*d.kernel_spatial_dimensions, *d.output_spatial_dimensions]
    if any(i < 0 for i in indexes):  # damage: a negative index would read from the end
        return None
    try:
        n, c = x[d.input_batch_dimension], x[d.input_feature_dimension]
        k, cg = w[d.kernel_output_feature_dimension], w[d.kernel_input_feature_dimension]
        hw = [x[i] for i in d.input_spatial_dimensions]
        rs = [w[i] for i in d.kernel_spatial_dimensions]
        pq = [y[i] for i in d.output_spatial_dimensions]
        n_out, k_out = y[d.output_batch_dimension], y[d.output_feature_dimension]
    except IndexError:
        return None
    labels = _SPATIAL.get(len(hw))
    if labels is None or not (len(rs) == len(pq) == len(hw)) or (n_out, k_out) != (n, k):
        return None
    inputs = _labelled([("N", n), ("C", c), *zip(labels[0], hw, strict=True)])
    filt = _labelled([("K", k), ("C", cg), *zip(labels[1], rs, strict=True)])
    output = _labelled([("N", n), ("K", k), *zip(labels[2], pq, strict=True)])
    return f"{inputs}; {filt}", output


def _precision(inst: Any) -> tuple[list[int], int]:
    """(operand precisions, algorithm) of a dot or convolution, or of a cuBLAS call (in its
    backend config: ``"operand_precision":["DEFAULT","DEFAULT"],"algorithm":"ALG_UNSET"``)."""
    precisions = [int(p) for p in inst.precision_config.operand_precision]
    algorithm = int(inst.precision_config.algorithm)
    if precisions or algorithm:
        return precisions, algorithm
    config = _gemm_config(inst).get("precision_config")
    if not isinstance(config, dict):
        return [], 0
    names = config.get("operand_precision")
    if isinstance(names, list):
        precisions = [_PRECISION_NUMBER.get(str(n), 0) for n in names]
    return precisions, _ALGORITHM_NUMBER.get(str(config.get("algorithm")), 0)


class Program:
    """One XLA program's instructions, as ops, looked up by a kernel event's stats."""

    def __init__(self, proto: Any) -> None:
        module = proto.hlo_module
        self._computations = {int(c.id): c for c in module.computations}
        self._by_name: dict[str, tuple[Any, Any]] = {}  # name -> (instruction, its computation)
        self._by_kernel: dict[str, tuple[Any, Any]] = {}
        self._ops: dict[str, HloOp] = {}
        self._searched: dict[int, tuple[Any, list[Any]] | None] = {}
        self._ids: dict[int, dict[int, Any]] = {}
        self.module = str(module.name)
        for comp in module.computations:
            for inst in comp.instructions:
                self._by_name.setdefault(inst.name, (inst, comp))
                self._by_kernel.setdefault(re.sub(r"[.\-]", "_", inst.name), (inst, comp))

    def op(self, hlo_op: str | None, kernel: str) -> HloOp | None:
        """The op of a kernel whose event names ``hlo_op``: that instruction, unless it is not
        in the program (a command buffer), then the fusion named as the kernel is."""
        found = self._by_name.get(hlo_op) if hlo_op else None
        if found is None:
            found = self._by_name.get(kernel) or self._by_kernel.get(kernel)
        if found is None:
            return None
        inst, comp = found
        name = str(inst.name)
        if name not in self._ops:
            self._ops[name] = self._describe(inst, comp)
        return self._ops[name]

    def _operands(self, comp: Any, inst: Any) -> list[Any]:
        """``inst``'s operands in ``comp`` (each computation's id map built once: a program can
        hold 100k instructions)."""
        key = id(comp)
        by_id = self._ids.get(key)
        if by_id is None:
            by_id = self._ids[key] = {int(i.id): i for i in comp.instructions}
        return [by_id[int(i)] for i in inst.operand_ids if int(i) in by_id]

    def _matrix(self, inst: Any) -> tuple[Any, list[Any]] | None:
        """The dot or convolution a fusion (or a fusion in it) computes, with its operands."""
        for cid in inst.called_computation_ids:
            if (found := self._in_computation(int(cid), frozenset())) is not None:
                return found
        return None

    def _in_computation(self, cid: int, seen: frozenset[int]) -> tuple[Any, list[Any]] | None:
        """The first matrix instruction of computation ``cid``, else of the fusions it calls
        (each computation searched once: a damaged program's calls can loop)."""
        if cid in self._searched:
            return self._searched[cid]
        comp = self._computations.get(cid)
        found: tuple[Any, list[Any]] | None = None
        if comp is not None and cid not in seen and len(seen) < _DEPTH:
            matrix = next(
                (i for kind in _MATRIX for i in comp.instructions if i.opcode == kind), None
            )
            if matrix is not None:
                found = (matrix, self._operands(comp, matrix))
            else:
                inner = (
                    self._in_computation(int(c), seen | {cid})
                    for i in comp.instructions
                    if i.opcode == "fusion"
                    for c in i.called_computation_ids
                )
                found = next((f for f in inner if f is not None), None)
        self._searched[cid] = found
        return found

    def _describe(self, inst: Any, comp: Any) -> HloOp:
        scope = str(inst.metadata.op_name) or None
        operands = self._operands(comp, inst)
        if inst.opcode in _MATRIX:
            found: tuple[Any, list[Any]] | None = (inst, operands)
        else:
            found = self._matrix(inst) if inst.opcode == "fusion" else None
        if found is not None:
            matrix, inputs = found
            typ = "convolution" if matrix.opcode == "convolution" else "dot"
            dtype = _matrix_dtype(*_precision(matrix), inputs)
            if typ == "convolution" and (conv := conv_shapes(matrix, inputs, matrix.shape)):
                return HloOp(str(inst.name), typ, scope, conv[0], dtype, conv[1])
            shapes = (gemm_shapes(matrix, inputs) if typ == "dot" else None) or _shapes(inputs)
            return HloOp(str(inst.name), typ, scope, shapes, dtype)
        target = str(inst.custom_call_target)
        library = next((t for rx, t in _LIBRARY if target and rx.search(target)), None)
        shapes = _shapes(operands)
        if library is not None and library.startswith("cublas"):
            shapes = gemm_shapes(inst, operands) or shapes
        if library is not None:  # a cuBLAS GEMM or cuDNN convolution: matrix work too
            dtype = _matrix_dtype(*_precision(inst), operands)
            if library.startswith("cudnn") and (conv := conv_shapes(inst, operands, inst.shape)):
                return HloOp(str(inst.name), library, scope, conv[0], dtype, conv[1])
            return HloOp(str(inst.name), library, scope, shapes, dtype)
        return HloOp(str(inst.name), str(inst.opcode), scope, shapes, _input_dtype(operands))


def _input_dtype(operands: list[Any]) -> str | None:
    """The first floating-point operand type (integer operands are indices and shapes)."""
    for o in operands:
        kind = _TYPES.get(int(o.shape.element_type), "")
        if kind.startswith("f8"):
            return "fp8"
        if kind in ("f16", "bf16", "f32", "f64"):
            return _DTYPE[kind]
    return None
