"""cuDNN autotuning seen in a trace: one op whose kernels span several convolution algorithm
families (``cudnn.benchmark`` trying each, which only happens in the first iterations)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.analysis import _codes

#: cuDNN convolution algorithm families, recognised from kernel names. One op launching kernels of
#: several families in the aggregated range is cuDNN trying every algorithm (cudnnFind, i.e.
#: ``cudnn.benchmark`` autotuning), which only happens in the first iterations.
_CONV_FAMILIES = (
    ("implicit-gemm", r"implicit_convolve|implicit_gemm|scudnn_.*interior|xmma_fprop_implicit"),
    ("explicit-gemm", r"explicit_convolve|im2col"),
    ("fft", r"fft2d|fft_|flip_filter|gcgemm|cgemm_"),
    ("winograd", r"winograd"),
    ("direct", r"conv2d_grouped_direct|direct_conv|convolve_common_engine"),
)
AUTOTUNE_MIN_FAMILIES = 3


def autotuned_ops(kernels: pa.Table | None, ops: pa.Table | None) -> tuple[str, ...]:
    """Names of ops whose kernels cover several cuDNN algorithm families (autotuning)."""
    if kernels is None or ops is None or kernels.num_rows == 0 or ops.num_rows == 0:
        return ()

    def family(names: pa.Array) -> pa.Array:  # per distinct kernel name: 0 = none, 1.. = family
        fam = pa.array(np.zeros(len(names), dtype=np.int64))
        for i, (_, pattern) in enumerate(_CONV_FAMILIES, start=1):
            hit = pc.fill_null(pc.match_substring_regex(names, pattern), False)
            fam = pc.if_else(pc.and_(hit, pc.equal(fam, 0)), i, fam)
        return fam

    fam = np.asarray(
        pc.fill_null(_codes.per_value(kernels.column("name"), family), 0).to_numpy(), np.int64
    )
    if not fam.any():
        return ()
    j = _codes.joint(ops.column("op_id"), kernels.column("op_id"))
    ok = (fam > 0) & (j.other >= 0)
    pairs = np.unique(j.other[ok] * (len(_CONV_FAMILIES) + 1) + fam[ok])
    per_op = np.bincount(pairs // (len(_CONV_FAMILIES) + 1), minlength=j.size)
    many = per_op >= AUTOTUNE_MIN_FAMILIES
    if not many.any():
        return ()
    hit_rows = (j.ops >= 0) & many[np.maximum(j.ops, 0)]
    names = _codes.as_strings(ops.column("name").filter(pa.array(hit_rows)))
    return tuple(sorted(str(n) for n in names))
