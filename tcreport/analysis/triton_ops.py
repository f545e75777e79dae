"""Triton kernels judged by the op that launched them, where their names cannot tell.

A Triton kernel's name says nothing about its precision (``triton_tem_fused_mm_0``, a user's
``matmul_kernel``): ``tl.dot`` runs on Tensor Cores for fp16, bf16, fp8 and int8 operands on every
GPU Triton supports, but for float32 only when TF32 is allowed, which the trace does not record.
The op that launched the kernel does record it: a GEMM-type op (``aten::mm``, a ``vllm::`` custom
matmul) whose recorded dtype is fp16/bf16/fp8 ran its ``tl.dot`` on Tensor Cores. So kernels the
name rules left at ``triton-unknown`` take that verdict, ``tc_rule = "triton-op-dtype"``; a
float32 op, a non-GEMM op or an op without a dtype leaves them unknown, and so does a precision
the device's matrix units do not take (bf16 on a Turing GPU, per the device table).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.analysis import device_table, tc_kernels
from tcreport.analysis.eligibility import is_eligible_type
from tcreport.analysis.shapes import normalise_dtype
from tcreport.model import Gpu

_TRITON_UNKNOWN = "triton-unknown"
_HALF = frozenset({"fp16", "bf16", "fp8"})


def _precisions(gpus: tuple[Gpu, ...]) -> frozenset[str]:
    """The half precisions every identified GPU's matrix units take (all three when none is
    identified: a Triton bf16/fp16/fp8 tl.dot compiles to MMA wherever it compiles at all)."""
    allowed = set(_HALF)
    for g in gpus:
        facts = device_table.describe(g)
        if facts.matrix_unit is not None:
            allowed &= set(facts.matrix_precisions)
    return frozenset(allowed)


def refine(kernels: pa.Table, ops: pa.Table | None, gpus: tuple[Gpu, ...] = ()) -> pa.Table:
    """``kernels`` with its name-unknown Triton kernels decided by their ops' dtype and type."""
    if ops is None or ops.num_rows == 0 or kernels.num_rows == 0:
        return kernels
    allowed = _precisions(gpus)
    rule = kernels.column("tc_rule").cast(pa.string())
    mask = pc.and_(
        pc.is_null(kernels.column("uses_tc")), pc.fill_null(pc.equal(rule, _TRITON_UNKNOWN), False)
    )
    idx = pc.indices_nonzero(mask)
    if len(idx) == 0:
        return kernels
    op_of = pc.take(kernels.column("op_id"), idx).cast(pa.string())
    wanted = pc.unique(op_of.drop_null())
    o = ops.select(["op_id", "dtype", "type"])
    o = o.filter(pc.is_in(o.column("op_id").cast(pa.string()), wanted))
    yes = {  # op ids are few here: one verdict per distinct op
        str(i)
        for i, d, t in zip(
            o.column("op_id").cast(pa.string()).to_pylist(),
            o.column("dtype").cast(pa.string()).to_pylist(),
            o.column("type").cast(pa.string()).to_pylist(),
            strict=True,
        )
        if normalise_dtype(d) in allowed and is_eligible_type(t)
    }
    if not yes:
        return kernels
    hit = np.asarray(
        pc.fill_null(pc.is_in(op_of, pa.array(sorted(yes), pa.string())), False), dtype=bool
    )
    rows = idx.to_numpy()[hit]
    n = kernels.num_rows
    decided = np.zeros(n, dtype=bool)
    decided[rows] = True
    flag = pa.array(decided)
    uses = pc.if_else(flag, True, kernels.column("uses_tc"))
    names = pc.if_else(flag, tc_kernels.TRITON_OP_RULE, rule)
    i_uses, i_rule = (
        kernels.schema.get_field_index("uses_tc"),
        kernels.schema.get_field_index("tc_rule"),
    )
    out = kernels.set_column(i_uses, kernels.schema.field(i_uses), uses)
    return out.set_column(i_rule, kernels.schema.field(i_rule), pc.dictionary_encode(names))
