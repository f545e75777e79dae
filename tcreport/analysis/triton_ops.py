"""Triton kernels judged by the op that launched them, where their names cannot tell.

A Triton kernel's name says nothing about its precision (``triton_tem_fused_mm_0``, a user's
``matmul_kernel``): ``tl.dot`` runs on Tensor Cores for fp16, bf16, fp8 and int8 operands on every
GPU Triton supports, but for float32 only when TF32 is allowed, which the trace does not record.
The op that launched the kernel does record it: a GEMM-type op (``aten::mm``, a ``vllm::`` custom
matmul) whose recorded dtype is fp16/bf16/fp8 ran its ``tl.dot`` on Tensor Cores. So kernels the
name rules left at ``triton-unknown`` take that verdict, ``tc_rule = "triton-op-dtype"``; a
float32 op, a non-GEMM op or an op without a dtype leaves them unknown, and so does a precision
the device's matrix units do not take (bf16 on a Turing GPU, per the device table).
TorchInductor's GEMM templates (``triton_tem_fused_mm_t_7``: the launch is the op) in float32
are decided too where ``tcreport profile``'s audit recorded PyTorch's matmul TF32 switch, which
Inductor compiles into them (``ALLOW_TF32``): on, TF32 Tensor Cores (ncu counted ``tf32``
operations in them, sample_traces/h200-torch-compile-tf32); off, IEEE float32 on CUDA cores.

XLA's GEMM fusions (rule ``xla-gemm-fusion``: ``gemm_fusion_dot_4``) are Triton kernels too, and
there the op does say more: in a JAX profile the op is the HLO instruction, whose dtype is the
precision XLA compiled the dot to run at (:mod:`tcreport.ingest.xplane.hlo`): ``tf32`` for float32
at DEFAULT or HIGH precision, ``fp32`` at HIGHEST. So those kernels take ``yes`` for a precision
the device's matrix units take and ``no`` for ``fp32``, ``tc_rule = "xla-hlo-precision"``, over
xprof's name-based label (which calls them all "no"); Nsight Compute's counters agree on every
such kernel of sample_traces/h200-jax-xla-ncu. Counters, where given, still decide.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.analysis import _codes, device_table, tc_kernels
from tcreport.analysis.eligibility import is_eligible_type, is_inductor_gemm
from tcreport.analysis.shapes import normalise_dtype
from tcreport.model import Gpu

_TRITON_UNKNOWN = "triton-unknown"
_XLA_GEMM = "xla-gemm-fusion"
_HALF = frozenset({"fp16", "bf16", "fp8"})
#: What XLA's GEMM fusions may be compiled to run on the matrix units.
_XLA_MATRIX = frozenset({"fp16", "bf16", "fp8", "int8", "tf32"})


def _precisions(gpus: tuple[Gpu, ...], wanted: frozenset[str] = _HALF) -> frozenset[str]:
    """The ``wanted`` precisions every identified GPU's matrix units take (all of them when none
    is identified: a Triton tl.dot in those precisions compiles to MMA wherever it compiles)."""
    allowed = set(wanted)
    for g in gpus:
        facts = device_table.describe(g)
        if facts.architecture is not None:  # a 7.5 that may be a GTX 1650: Turing's at most
            allowed &= set(facts.matrix_precisions)
    return frozenset(allowed)


def refine(
    kernels: pa.Table,
    ops: pa.Table | None,
    gpus: tuple[Gpu, ...] = (),
    matmul_tf32: bool | None = None,
) -> pa.Table:
    """``kernels`` with its name-unknown Triton kernels decided by their ops' dtype and type, and
    XLA's GEMM fusions by their HLO's precision. ``matmul_tf32``: PyTorch's matmul TF32 switch as
    the capture's audit recorded it (``None`` when unknown), which TorchInductor compiles into its
    GEMM templates (``ALLOW_TF32``): with it, their float32 launches are decided too."""
    if ops is None or ops.num_rows == 0 or kernels.num_rows == 0:
        return kernels
    half = _precisions(gpus)
    tf32 = "tf32" in _precisions(gpus, frozenset({"tf32"}))
    triton = pc.and_(
        pc.is_null(kernels.column("uses_tc")),
        _codes.equals(kernels.column("tc_rule"), _TRITON_UNKNOWN),
    )

    def triton_verdict(dtype: str | None, typ: str | None) -> bool | None:
        if dtype in half and is_eligible_type(typ):
            return True
        if dtype == "fp32" and matmul_tf32 is not None and is_inductor_gemm(typ):
            return matmul_tf32 and tf32  # ALLOW_TF32 off: IEEE float32 on CUDA cores
        return None

    kernels = _by_op(kernels, ops, triton, triton_verdict, tc_kernels.TRITON_OP_RULE)
    pattern = next((r.pattern for r in tc_kernels.default_pack().rules if r.id == _XLA_GEMM), None)
    if pattern is None:
        return kernels
    xla = pc.and_(
        _codes.matches(kernels.column("name"), pattern),
        pc.invert(_codes.equals(kernels.column("tc_rule"), tc_kernels.COUNTER_RULE)),
    )
    matrix = _precisions(gpus, _XLA_MATRIX)

    def xla_verdict(dtype: str | None, typ: str | None) -> bool | None:
        if not is_eligible_type(typ):
            return None
        return True if dtype in matrix else (False if dtype == "fp32" else None)

    kernels = _by_op(kernels, ops, xla, xla_verdict, tc_kernels.XLA_HLO_RULE)
    return _unlabelled(kernels, xla)


def _unlabelled(kernels: pa.Table, xla: pa.ChunkedArray | pa.Array) -> pa.Table:
    """XLA GEMM fusions the HLO did not decide stay unknown: xprof's label for them is a name
    heuristic that calls every one "no" (wrong for all the bf16 and TF32 ones ncu measured)."""
    labelled = pc.and_(xla, _codes.equals(kernels.column("tc_rule"), tc_kernels.PROFILER_LABEL))
    if not pc.any(labelled).as_py():
        return kernels
    rule = kernels.column("tc_rule").cast(pa.string())
    uses = pc.if_else(labelled, pa.scalar(None, pa.bool_()), kernels.column("uses_tc"))
    names = pc.if_else(labelled, _XLA_GEMM, rule)
    i_uses, i_rule = (
        kernels.schema.get_field_index("uses_tc"),
        kernels.schema.get_field_index("tc_rule"),
    )
    out = kernels.set_column(i_uses, kernels.schema.field(i_uses), uses)
    return out.set_column(i_rule, kernels.schema.field(i_rule), pc.dictionary_encode(names))


def _by_op(
    kernels: pa.Table,
    ops: pa.Table,
    mask: pa.ChunkedArray | pa.Array,
    verdict: Callable[[str | None, str | None], bool | None],
    rule_id: str,
) -> pa.Table:
    """Set ``uses_tc`` (and ``tc_rule`` = ``rule_id``) of the ``mask`` rows whose op has a
    ``verdict`` (from the op's normalised dtype and its type); other rows are left as they are."""
    idx = pc.indices_nonzero(mask)
    if len(idx) == 0:
        return kernels
    op_of = pc.take(kernels.column("op_id"), idx).cast(pa.string())
    o = ops.select(["op_id", "dtype", "type"])
    o = o.filter(pc.is_in(o.column("op_id").cast(pa.string()), pc.unique(op_of.drop_null())))
    decided = {  # op ids are few here: one verdict per distinct op
        str(i): v
        for i, d, t in zip(
            o.column("op_id").cast(pa.string()).to_pylist(),
            o.column("dtype").cast(pa.string()).to_pylist(),
            o.column("type").cast(pa.string()).to_pylist(),
            strict=True,
        )
        if (v := verdict(normalise_dtype(d), t)) is not None
    }
    if not decided:
        return kernels
    keys = sorted(decided)
    pos = pc.index_in(op_of, pa.array(keys, pa.string()))
    hit = pc.is_valid(pos).to_numpy(zero_copy_only=False)
    at = pc.fill_null(pos, 0).to_numpy(zero_copy_only=False)[hit]
    values = np.array([decided[k] for k in keys], dtype=bool)
    n = kernels.num_rows
    flag_np, uses_np = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    rows = idx.to_numpy()[hit]
    flag_np[rows] = True
    uses_np[rows] = values[at]
    flag = pa.array(flag_np)
    uses = pc.if_else(flag, pa.array(uses_np), kernels.column("uses_tc"))
    names = pc.if_else(flag, rule_id, kernels.column("tc_rule").cast(pa.string()))
    i_uses, i_rule = (
        kernels.schema.get_field_index("uses_tc"),
        kernels.schema.get_field_index("tc_rule"),
    )
    out = kernels.set_column(i_uses, kernels.schema.field(i_uses), uses)
    return out.set_column(i_rule, kernels.schema.field(i_rule), pc.dictionary_encode(names))
