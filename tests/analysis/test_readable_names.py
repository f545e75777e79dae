"""Mangled kernel names are made readable before the name rules judge them."""

from __future__ import annotations

import pyarrow as pa
from trace_paths import H200_NCU

from tcreport import api, schema
from tcreport.analysis.readable_names import with_readable_names
from tcreport.kernel_names import readable

K = schema.TableKind.KERNELS
WGRAD_SHOWN = (
    "cutlass__5x_cudnn::Kernel<cutlass__5x_cudnn::conv::kernel::ImplicitGemmConvolution<…>>"
)
MANGLED_OK = "_Z22tensorTransformGenericI6__halfS0_fLb1ELb0ELb0EL21cudnnKernelDataType_t0EEv26cudnnTensorTransformStruct21tensorTransformParamsimPKT_PT0_T1_S9_"  # noqa: E501


def test_the_cudnn_wgrad_kernel_the_profiler_left_mangled_is_a_tensor_core_kernel() -> None:
    """Read mangled, the rules called it a copy (``NoPermute``) and CV002 said half-precision
    backward convolutions ran on CUDA cores (14.5 % of GPU time); ncu counted it the largest
    Tensor Core kernel of the run (tensor-path ops above 0 on every launch)."""
    view = api.analyze(api.load(H200_NCU / "cnn_fp16"))
    a = view.analysis
    rows = {k.name: k for k in a.breakdown.kernels}
    wgrad = rows[WGRAD_SHOWN]
    assert (wgrad.uses_tc, wgrad.tc_rule) == (True, "cutlass-warp-mma-tensorop")
    assert not any(n.startswith("_Z") for n in rows)
    assert "CV002" not in {f.id for f in view.findings}
    assert a.verdict.tc_share is not None and 0.32 < a.verdict.tc_share < 0.33  # was 0.188


def test_names_are_demangled_once_per_distinct_name_and_the_rest_kept() -> None:
    mangled = open_mangled()
    chunks = [
        table(["a_kernel", MANGLED_OK, MANGLED_OK, "b_kernel"]),
        table([mangled, "a_kernel"]),
    ]
    out = with_readable_names(pa.concat_tables(chunks))
    schema.validate(out, K)
    names = out.column("name").to_pylist()
    assert names[0] == names[5] == "a_kernel" and names[3] == "b_kernel"
    assert names[1] == names[2] == readable(MANGLED_OK) and names[1].startswith("void tensorT")
    assert names[4] == WGRAD_SHOWN
    # where the demangler rejected the name, the original stays whole as the long name
    assert out.column("long_name").to_pylist() == [None, None, None, None, mangled, None]


def test_a_table_without_mangled_names_is_returned_as_is() -> None:
    t = table(["volta_sgemm_128x64_nn", "void k<int>(int)"])
    assert with_readable_names(t) is t


def open_mangled() -> str:
    k = api.load(H200_NCU / "ncu" / "ncu3_cnn_fp16_mangled.csv").kernels
    assert k is not None
    return str(next(n for n in k.column("long_name").to_pylist() if "Wgrad" in n))


def table(names: list[str]) -> pa.Table:
    n = len(names)
    return schema.conform({"name": names, "calls": [1] * n, "duration_ns": [10] * n}, K)
