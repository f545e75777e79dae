"""How much kernel time has a verdict: at least 97 % on every real trace whose kernels carry
evidence, and on the inference kernel families issue 27 found unjudged.

The real traces are every trace under ``../shared/realtraces``. The Windows Nsight Systems export
runs user kernels named ``test0``..``test4`` with nothing else known: no name rule judges them, and
the GTX 1060 it ran on has no Tensor Cores, so the device decides "no" for them. On failure the message lists the unclassified kernels by
time, which is what a new rule needs.

The inference names are real kernel names (TensorRT-LLM on B200 from a published DeepSeek-R1
breakdown, vLLM, FlashInfer, sglang, fbgemm); their durations are synthetic.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from synthetic import synthetic_vendor_run
from trace_paths import REALTRACES

from tcreport import api, schema
from tcreport.analysis import result, tc_kernels
from tcreport.model import Run

MIN_COVERAGE = 0.97
NO_EVIDENCE = "nsys/v2022.1-windows-synthetic"  # user kernels test0..test4


def _real_traces() -> list[Path]:
    if not REALTRACES.is_dir():
        return []
    found: list[Path] = []
    for p in sorted(REALTRACES.rglob("*")):
        if "tracelens-oracle" in p.parts or p.name in ("README.md", "hta-oracle.json"):
            continue
        dlprof_folder = p.is_dir() and any(c.suffix == ".csv" for c in p.iterdir())
        if dlprof_folder or (p.is_file() and p.suffix in (".gz", ".sqlite", ".pb")):
            found.append(p)
    return found


def _classified(run: Run) -> pa.Table:
    k = result._classify(run, result.run_vendor(run)).kernels
    assert k is not None
    return k


def _unclassified(k: pa.Table, top: int = 15) -> str:
    """The unknown kernels, most time first, as a failure message lists them."""
    unk = k.filter(pc.is_null(k.column("uses_tc")))
    total = pc.sum(k.column("duration_ns")).as_py() or 1
    t = pa.table({"n": unk.column("name").cast(pa.string()), "d": unk.column("duration_ns")})
    rows = t.group_by("n").aggregate([("d", "sum")]).sort_by([("d_sum", "descending")])
    return "\n".join(f"  {r['d_sum'] / total:7.2%}  {r['n'][:160]}" for r in rows.to_pylist()[:top])


def _coverage(k: pa.Table) -> float:
    return tc_kernels.classified_share(k) or 0.0


@pytest.mark.realtraces
@pytest.mark.parametrize(
    "path",
    _real_traces(),
    ids=lambda p: str(p.relative_to(REALTRACES)) if REALTRACES in p.parents else p.name,
)
def test_real_traces_have_a_verdict_for_97_percent_of_kernel_time(path: Path) -> None:
    run = api.load(path)
    if run.kernels is None or run.kernels.num_rows == 0:
        pytest.skip("no kernel rows")
    k = _classified(run)
    if NO_EVIDENCE in str(path.relative_to(REALTRACES)):
        names = set(k.column("name").cast(pa.string()).to_pylist())
        assert names <= {f"test{i}" for i in range(5)}
        # nothing in their names says what they ran, but the GTX 1060 (Pascal) has no Tensor
        # Cores: the device decides "no" (analysis/no_matrix_units.py)
        assert k.column("uses_tc").to_pylist() == [False] * k.num_rows
        assert set(k.column("tc_rule").cast(pa.string()).to_pylist()) == {
            tc_kernels.NO_MATRIX_UNITS_RULE
        }
        return
    share = _coverage(k)
    assert share >= MIN_COVERAGE, (
        f"{share:.2%} of kernel time classified; unclassified kernels:\n{_unclassified(k)}"
    )


#: Kernel names of inference engines (TensorRT-LLM's trtllm-gen on B200, vLLM, FlashInfer,
#: sglang, fbgemm), each with the verdict its code implies.
INFERENCE = {
    # B200 DeepSeek-R1 FP4 MoE (TensorRT-LLM): expert GEMMs and attention on Tensor Cores
    "bmm_E2m1_E2m1E2m1_Fp32_t128x8x512u2_s4_et128x8_m128x8x64_cga1x1x1_16dp256b_TN_transOut_schedS_swiGlu_sm100f": True,
    "bmm_Bfloat16_E2m1E2m1_Fp32_t128x8x512u2_s4_et128x8_m128x8x64_cga1x1x1_16dp256b_TN_transOut_schedS_sm100f": True,
    "fmhaSm100fKernel_QkvE4m3OBfloat16H128PagedKvDenseP64MultiCtasKvCgaVarSeqQ8Kv128StaticSwapsAbForGen": True,
    "nvjet_ootst_128x128_64x6_1x1_h_bz_coopB_Avec16UE4M3_Bvec16UE4M3_TNT": True,
    "fmhaReductionKernel": False,
    "void tensorrt_llm::kernels::quantize_with_block_size<(tensorrt_llm::BlockScaleQuantizationType)0, __nv_bfloat16, 16, false>(int, int, int, int, __nv_bfloat16 const*, float const*, unsigned int*, unsigned int*, int)": False,
    "void tensorrt_llm::kernels::cvt_fp16_to_fp4<__nv_bfloat16, false>(int, int, __nv_bfloat16 const*, float const*, long*, int*)": False,
    "void moe::dev::routing::routingDeepSeek::routingMainKernel<moe::dev::routing::routingDeepSeek::KernelParams<__nv_bfloat16, __nv_bfloat16, 32, true>>(moe::dev::routing::routingDeepSeek::KernelParams<__nv_bfloat16, __nv_bfloat16, 32, true>)": False,
    "void moe::dev::routing::routingIndicesClusterKernel<moe::dev::routing::routingDeepSeek::KernelParams<__nv_bfloat16, __nv_bfloat16, 32, true>>(moe::dev::routing::routingDeepSeek::KernelParams<__nv_bfloat16, __nv_bfloat16, 32, true>)": False,
    "void moe::dev::finalize::finalizeKernel<moe::dev::finalize::KernelParams<__nv_bfloat16, __nv_bfloat16, false>>(moe::dev::finalize::KernelParams<__nv_bfloat16, __nv_bfloat16, false>)": False,
    "void tensorrt_llm::kernels::applyMLARopeAndAssignQKVKernelGeneration<__nv_bfloat16, 256, false>(tensorrt_llm::kernels::KVBlockArray)": False,
    "void tensorrt_llm::kernels::ar_fusion::moe::moefinalize_allreduce_fusion_kernel_oneshot_lamport<__nv_bfloat16, 8>(tensorrt_llm::kernels::ar_fusion::moe::MoeFinalizeAllReduceFusionParams<__nv_bfloat16>)": False,
    "void tensorrt_llm::kernels::userbuffers_rmsnorm<__nv_bfloat16, 16, 8>(int, int)": False,
    "void tensorrt_llm::kernels::userbuffers_allgather<__nv_bfloat16, 8>(int, int)": False,
    "void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, unsigned int, unsigned int, unsigned int, float, float)": False,
    "void flashinfer::activation::act_and_mul_kernel<__nv_bfloat16, &silu>(__nv_bfloat16*, __nv_bfloat16 const*, int)": False,
    # vLLM
    "fused_moe_kernel": True,
    "void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, int, int, unsigned long, int*)": False,
    "void vllm::moe::count_and_sort_expert_tokens_kernel<int>(int const*, int*, int*, unsigned long)": False,
    "void vllm::moe::topkGatingSoftmax<4, 64, 4, 16, int>(float const*, bool const*, float*, int, int*, int*, int, int, int)": False,
    "void vllm::moe::moe_sum_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, int)": False,
    "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*, long, long, long, long, int, int, int, float const*, float const*)": False,
    "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)": False,
    "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)": False,
    "void vllm::dynamic_per_token_scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*, float*, c10::BFloat16 const*, float const*, int)": False,
    "void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)": False,
    "void vllm::paged_attention_v2_kernel<unsigned short, unsigned short, 128, 16, 128, (vllm::Fp8KVCacheDataType)0, false, 512>(float*, float*, unsigned short*, unsigned short const*, unsigned short const*, unsigned short const*, int, float, int const*, int const*, int, float const*, int, int, int, float const*, float const*, int, int, int)": False,
    "kernel_unified_attention_2d": True,
    "_per_token_group_quant_fp8": False,
    # FlashInfer attention and sampling
    "void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<(flashinfer::MaskMode)1, 128u, 2u, 4u, 8u, 8u, 1u, 4u, (flashinfer::PosEncodingMode)0, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, int, flashinfer::DefaultAttention<false, false, false, false> >, flashinfer::BatchPrefillPagedParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int> >(flashinfer::BatchPrefillPagedParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int>)": True,
    "void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, 2u, 2u, 8u, 16u, 1u, 8u, flashinfer::DefaultAttention<false, false, false, false>, flashinfer::BatchDecodeParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int> >(flashinfer::BatchDecodeParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int>)": False,
    "void flashinfer::sampling::TopKTopPSamplingFromProbKernel<1024u, (cub::BlockScanAlgorithm)2, (cub::BlockReduceAlgorithm)2, 4u, false, float, int>(float*, int*, int*, float*, int*, float*, unsigned int, unsigned int, unsigned int)": False,
    "void flashinfer::VariableLengthMergeStatesKernel<8u, 16u, 8u, 4u, __nv_bfloat16, __nv_bfloat16, int>(__nv_bfloat16*, float*, int*, __nv_bfloat16*, float*, unsigned int, unsigned int*, unsigned int)": False,
    "void flashinfer::BatchQKApplyRotaryPosIdsCosSinCacheKernel<true, 128u, 8u, 16u, __nv_bfloat16, long>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, float*, long*, unsigned int, unsigned int, unsigned int, unsigned int, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long)": False,
    "void flashinfer::AppendPagedKVCacheKernel<8u, 16u, __nv_bfloat16, int>(flashinfer::paged_kv_t<__nv_bfloat16, int>, __nv_bfloat16*, __nv_bfloat16*, int*, int*, unsigned int, unsigned long, unsigned long, unsigned long, unsigned long)": False,
    # sglang / fbgemm / PyTorch
    "void per_token_group_quant_8bit_kernel<__nv_bfloat16, c10::Float8_e4m3fn, false>(__nv_bfloat16 const*, void*, float*, int, int, float, float, float, int, int)": False,
    "void fbgemm_gpu::(anonymous namespace)::_compute_FP8_quantize_cuda_kernel<float>(float const*, float const*, int, int, unsigned char*, bool)": False,
    "void bounds_check_indices_kernel<long, false>(at::GenericPackedTensorAccessor<long, 1ul, at::RestrictPtrTraits, int>)": False,
    "void compute_cuda_kernel<long>(long*, long*, long*, long, long)": False,
}


@pytest.mark.parametrize("name", sorted(INFERENCE))
def test_inference_kernel_families_have_their_verdict(name: str) -> None:
    verdict, rule = tc_kernels.classify_name(name)
    assert verdict is INFERENCE[name], (name, rule)


def test_synthetic_b200_moe_and_vllm_runs_are_covered() -> None:
    view = api.analyze(synthetic_vendor_run("NVIDIA B200", sorted(INFERENCE)))
    k = _classified(synthetic_vendor_run("NVIDIA B200", sorted(INFERENCE)))
    assert _coverage(k) == 1.0, _unclassified(k)
    assert view.analysis.verdict.classified_share == 1.0


def _triton_run(op_type: str, dtype: str, gpu: str = "NVIDIA H100 80GB HBM3") -> Run:
    run = synthetic_vendor_run(gpu, ["triton_tem_fused_mm_0"], op_type)
    assert run.ops is not None
    ops = run.ops.set_column(
        run.ops.schema.get_field_index("dtype"),
        "dtype",
        pa.array([dtype] * run.ops.num_rows, pa.string()).dictionary_encode(),
    )
    return run.replace(ops=schema.conform(ops, schema.TableKind.OPS))


@pytest.mark.parametrize(
    ("op_type", "dtype", "verdict"),
    [
        ("mm", "bfloat16", True),
        ("mm", "float16", True),
        ("mm", "float32", None),
        ("relu", "bfloat16", None),
    ],
)
def test_triton_kernels_take_their_launching_ops_precision(
    op_type: str, dtype: str, verdict: bool | None
) -> None:
    """tl.dot on fp16/bf16 runs on Tensor Cores; on float32 only with TF32, which is not recorded."""
    k = _classified(_triton_run(op_type, dtype))
    assert k.column("uses_tc").to_pylist() == [verdict]
    rule = k.column("tc_rule").cast(pa.string()).to_pylist()[0]
    assert rule == (tc_kernels.TRITON_OP_RULE if verdict else "triton-unknown")


def test_triton_precision_the_device_has_no_matrix_path_for_stays_unknown() -> None:
    """bf16 has no Tensor Core path on Turing (the device table's Turing precisions)."""
    k = _classified(_triton_run("mm", "bfloat16", "Tesla T4"))
    assert k.column("uses_tc").to_pylist() == [None]
    k = _classified(_triton_run("mm", "float16", "Tesla T4"))
    assert k.column("uses_tc").to_pylist() == [True]
