"""What an op's own kernels say about its precision, when its row does not record a dtype.

A Kineto trace captured without ``record_shapes`` has no dtype on any op, yet the kernel an
``aten::addmm`` launched on an A100 is ``ampere_sgemm_32x32_sliced1x4_tn``: a float32 GEMM on CUDA
cores, which on Ampere or newer means TF32 is off for it. Without this evidence the why-not row
could only say "unknown"; with it, the report names the cause and the switch that fixes it.

The kernel families are the rule pack's own ids (``tc_rule``), so nothing here re-reads names.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.analysis import _codes

#: Rule ids (rulepacks/kernels.toml) of float32 GEMM/convolution kernels that ran on CUDA cores:
#: cuBLAS ``*_sgemm_*``, cuDNN ``scudnn``/implicit ``sgemm`` convolutions, and the complex GEMM /
#: FFT kernels of cuDNN's FFT convolution algorithms (float32 only).
FP32_CUDA_CORE_RULES = frozenset({"sgemm", "scudnn", "sgemm-convolution", "complex-gemm", "fft"})


def fp32_kernel_per_op(ops: pa.Table, kernels: pa.Table | None) -> pa.Array:
    """Per op row, the name of the longest-running float32 CUDA-core GEMM/conv kernel it
    launched, or null: one pass over the kernels with integer codes. The names come back
    dictionary-encoded (one int32 index per op row into the kernel names), never as one
    string per row."""
    if kernels is None or kernels.num_rows == 0 or ops.num_rows == 0:
        return pa.nulls(ops.num_rows, pa.string())
    fp32_rules = pa.array(sorted(FP32_CUDA_CORE_RULES))
    hit = _codes.per_value(kernels.column("tc_rule"), lambda d: pc.is_in(d, value_set=fp32_rules))
    mask = np.asarray(pc.fill_null(hit, False).to_numpy(zero_copy_only=False), dtype=bool)
    if not mask.any():
        return pa.nulls(ops.num_rows, pa.string())
    j = _codes.joint(ops.column("op_id"), kernels.column("op_id"))
    names = _codes.codes(kernels.column("name"))
    dur = np.asarray(pc.fill_null(kernels.column("duration_ns"), 0).to_numpy(), np.int64)
    rows = np.flatnonzero(mask & (j.other >= 0) & (names.codes >= 0))
    if not len(rows):
        return pa.nulls(ops.num_rows, pa.string())
    # the longest launch per op key wins (sorted by duration, last write per key kept)
    rows = rows[np.argsort(dur[rows], kind="stable")]
    best = np.full(j.size, -1, dtype=np.int32)
    best[j.other[rows]] = names.codes[rows]
    per_op = np.where(j.ops >= 0, best[np.maximum(j.ops, 0)], -1)
    return pa.DictionaryArray.from_arrays(pa.array(per_op, mask=per_op < 0), names.values)


_CONV_KERNEL = r"(?i)conv|fprop|dgrad|wgrad|cudnn"


def tf32_families(kernels: pa.Table | None) -> frozenset[str]:
    """Which library families ran TF32 Tensor Core kernels in this run: ``"conv"`` (cuDNN) and/or
    ``"gemm"`` (cuBLAS). PyTorch has one switch each (``torch.backends.cudnn.allow_tf32``, on by
    default, and ``torch.backends.cuda.matmul.allow_tf32``, off by default since 1.12), so TF32
    convolutions prove nothing about matmuls: a float32 matmul that missed is still "TF32 off"."""
    if kernels is None or kernels.num_rows == 0:
        return frozenset()
    used = pc.fill_null(kernels.column("uses_tc"), False)
    names = kernels.column("name").filter(used)
    if len(names) == 0:
        return frozenset()
    distinct = pa.array(_codes.as_strings(names), pa.string())  # not a string per launch
    tf32 = distinct.filter(pc.match_substring(distinct, "tf32", ignore_case=True))
    conv = pc.match_substring_regex(tf32, _CONV_KERNEL)
    found = {"conv" if c else "gemm" for c in conv.to_pylist()}
    return frozenset(found)
