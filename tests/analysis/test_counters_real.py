"""Merging real Nsight Compute counters into real PyTorch traces of the same programs (H200).

The traces and the ncu CSVs of ``sample_traces/h200-torch-cnn-ncu`` come from different processes,
so kernels meet only by name, and ncu's demangler spells names unlike ``__cxa_demangle``
(``<unnamed>``, dropped namespaces, ``T1`` placeholders, ``0/1`` for ``false/true``...). The
figures below are what the merge note says on these pairs; before the two spellings shared a key
they were 9 of 18 / 7 of 31 / 8 of 29 / 10 of 31 names and 90 / 20 / 19 / 28 % of kernel time.
"""

from __future__ import annotations

import re

import pytest
from trace_paths import H200_NCU

from tcreport import api
from tcreport.analysis import counters
from tcreport.kernel_names import demangle, loose_key

MIX = H200_NCU / "mix" / "kineto_mix_h.json.gz"
#: (trace, ncu CSV) -> (names matched, distinct names, % of kernel time with a measured verdict)
PAIRS = {
    ("mix/kineto_mix_h.json.gz", "ncu3_mix.csv"): (18, 18, 100),
    ("cnn_fp32", "ncu3_cnn_fp32.csv"): (30, 31, 79),
    ("cnn_fp16", "ncu3_cnn_fp16.csv"): (28, 29, 86),
    ("cnn_bf16fixed", "ncu3_cnn_bf16fixed.csv"): (30, 31, 93),
    ("cnn_fp16", "ncu3_cnn_fp16_mangled.csv"): (29, 29, 0),  # names only, no tensor metrics
    ("cnn_fp16", "ncu3_cnn_fp16_function.csv"): (28, 29, 0),
}


def _merged(trace: str, csv: str) -> api.Run:
    return counters.merge(api.load(H200_NCU / trace), api.load(H200_NCU / "ncu" / csv))


@pytest.mark.parametrize(("trace", "csv"), sorted(PAIRS), ids=lambda v: str(v))
def test_merge_coverage_on_the_real_pairs(trace: str, csv: str) -> None:
    note = _merged(trace, csv).meta.notes[-1]
    matched, distinct, share = PAIRS[(trace, csv)]
    assert f"{matched} of {distinct} kernel names matched" in note, note
    assert f", {share}% of kernel time has a measured verdict" in note, note
    assert "ambiguous" not in note


def test_the_only_unmatched_cnn_kernel_is_the_one_left_mangled() -> None:
    """The PyTorch profiler could not demangle cuDNN's CUTLASS wgrad kernel and neither can
    libstdc++'s ``__cxa_demangle``; ncu's default name for it cannot be keyed to a mangled one,
    but ncu's ``--print-kernel-base mangled`` name matches it exactly."""
    for variant in ("fp32", "fp16", "bf16fixed"):
        run = _merged(f"cnn_{variant}", f"ncu3_cnn_{variant}.csv")
        assert run.kernels is not None
        unknown = run.kernels.filter(run.kernels.column("counter_uses_tc").is_null())
        names = set(unknown.column("name").to_pylist())
        assert names and all(n.startswith("_ZN17cutlass__5x_cudnn6Kernel") for n in names)
    mangled = _merged("cnn_fp16", "ncu3_cnn_fp16_mangled.csv").meta.notes[-1]
    assert "29 of 29" in mangled
    # that CSV has durations only: the note says so, not how names match (they all did)
    assert "the CSV decides no launch" in mangled and "--print-kernel-base" not in mangled
    # the note says which kernel the measured share leaves out, and how to match it
    note = _merged("cnn_fp16", "ncu3_cnn_fp16.csv").meta.notes[-1]
    assert "Largest without a measured verdict: cutlass__5x_cudnn::Kernel<" in note, note
    assert "(14%)" in note and "--print-kernel-base mangled" in note


def test_every_mix_kernel_gets_its_true_verdict_from_the_counters() -> None:
    """mix.py's blocks, Tensor Core use known by construction, decided by the merged counters."""
    run = _merged("mix/kineto_mix_h.json.gz", "ncu3_mix.csv")
    k = run.kernels
    assert k is not None
    truth = {
        r"cutlass_80_simt_sgemm": False,  # fp32 GEMM, TF32 off
        r"sm90_xmma_gemm_f32f32_tf32f32": True,  # fp32 GEMM, TF32 on
        r"nvjet_sm90_hsh": True,  # fp16 GEMM
        r"nvjet_sm90_tst": True,  # bf16 GEMM
        r"sm90_xmma_gemm_f64f64": True,  # fp64 GEMM: DMMA
        r"wmma_tensorop_i161616gemm_s8": True,  # torch._int_mm: IMMA
        r"sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32.*ffma": False,  # fp32 conv, FFMA
        r"sm90_xmma_fprop_implicit_gemm_f16f16": True,  # fp16 conv
        r"softmax_warp_forward": False,
        r"CUDAFunctor_add<float>": False,
    }
    rows = list(
        zip(k.column("name").to_pylist(), k.column("counter_uses_tc").to_pylist(), strict=True)
    )
    for pattern, want in truth.items():
        got = {v for n, v in rows if re.search(pattern, n)}
        assert got == {want}, pattern
    # the Triton tile_product ran twice: tl.dot in fp16 (Tensor Cores) and in "ieee" fp32 (not);
    # one name; ncu profiled mix.py's warm-up pass and its measured pass, the same verdicts in the
    # same order each time, so the trace's launch i in time order takes the last pass's launch i
    triton = [v for n, v in rows if n == "tile_product"]
    assert triton == [True, False]
    assert "(1 launch by launch)" in run.meta.notes[-1]


def test_ncu_mangled_names_demangle_to_the_trace_spelling() -> None:
    csv = api.load(H200_NCU / "ncu" / "ncu3_cnn_fp16_mangled.csv").kernels
    trace = api.load(H200_NCU / "cnn_fp16").kernels
    assert csv is not None and trace is not None
    ours = set(trace.column("name").to_pylist())
    theirs = {demangle(n) for n in csv.column("long_name").to_pylist()}
    assert theirs == ours  # the one neither could demangle is mangled on both sides


def test_the_two_demanglers_share_a_key() -> None:
    kineto = (
        "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<"
        "at::native::CUDAFunctor_add<c10::Half> >(at::TensorIteratorBase&, "
        "at::native::CUDAFunctor_add<c10::Half> const&)::{lambda(int)#1}>(int, "
        "at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<c10::Half> >"
        "(at::TensorIteratorBase&, at::native::CUDAFunctor_add<c10::Half> const&)::{lambda(int)#1})"
    )
    ncu = (
        "void at::elementwise_kernel<128, 4, void at::gpu_kernel_impl_nocast<"
        "at::CUDAFunctor_add<c10::Half>>(at::TensorIteratorBase &, const T1 &)::"
        "[lambda(int) (instance 1)]>(int, T3)"
    )
    assert loose_key(kineto) == loose_key(ncu)
    casts = (
        "void cudnn::engines_precompiled::nchwToNhwcKernel<__half, __half, float, false, true, "
        "(cudnnKernelDataType_t)0>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>, "
        "__half const*, __half*)",
        "void cudnn::nchwToNhwcKernel<__half, __half, float, 0, 1, 0>"
        "(cudnn::nchw2nhwc_params_t<T3>, const T1 *, T2 *)",
    )
    assert loose_key(casts[0]) == loose_key(casts[1])
    anon = (
        "void (anonymous namespace)::softmax_warp_forward<float, float, float, 11, false, false>"
        "(float*, float const*, int, int, int, bool const*, int, bool)",
        "void <unnamed>::softmax_warp_forward<float, float, float, 11, 0, 0>"
        "(T2 *, const T1 *, int, int, int, const bool *, int, bool)",
    )
    assert loose_key(anon[0]) == loose_key(anon[1])
    assert loose_key("void k<float>(float*)") != loose_key("void k<double>(double*)")
