"""Kernel Tensor Core verdicts: rule families on hand-built names, real traces, invariants, doc."""

from __future__ import annotations

import csv
import gzip
import json
import sqlite3
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import budget
from trace_paths import DLPROF_CNN, NSYS_H100, ROOT, need, real_or_bundled

from tcreport import api, schema
from tcreport.analysis import tc_kernels as tk
from tcreport.errors import InputError

K = schema.TableKind.KERNELS


def kernels(
    names: list[str], long_names: list[str | None] | None = None, **cols: list[object]
) -> pa.Table:
    n = len(names)
    data: dict[str, object] = {
        "name": names,
        "duration_ns": cols.pop("duration_ns", [1] * n),
        "calls": [1] * n,
    }
    if long_names is not None:
        data["long_name"] = pa.array(long_names, pa.string())
    data.update(cols)
    return schema.conform(data, K)


# --- rule families --------------------------------------------------------------------------------

TC = {
    "flashinfer-prefill": "void flashinfer::BatchPrefillWithRaggedKVCacheKernel<flashinfer::KernelTraits<>>(x)",
    "triton-tl-dot-named": "fused_moe_kernel",
    "volta-h884": "volta_h884gemm_64x64_ldg8_nn",
    "volta-s884": "volta_fp16_s884cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc2nchw_tn_v1",
    "turing-h1688": "turing_h1688gemm_128x128_ldg8_tn",
    "turing-s1688": "turing_fp16_s1688cudnn_fp16_256x128_ldg8_relu_f2f_exp_interior_nhwc_tn_v1",
    "ampere-tf32-1688": "ampere_s1688tf32gemm_128x128_32x3_nn",
    "turing-i8816": "turing_i8816gemm_int8_128x128_ldg16_nn",
    "ampere-bf16-16816": "ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_nn",
    "ampere-16816": "ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_32x3_tn",
    "hmma": "cudnn_hmma_conv_kernel",
    "wmma": "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>(x)",
    "cutlass-tensorop": "cutlass3x_sm90_tensorop_gemm_f16_f16_f32_void_f16_128x256x64_1x2x1_0_tnn_align8_warpspecialized",
    # ncu's name of cuDNN's CUTLASS wgrad conv (sample_traces/h200-torch-cnn-ncu), cut short
    "cutlass-warp-mma-tensorop": "void cutlass__5x_cudnn::Kernel<conv::ImplicitGemmConvolution<"
    "conv::ImplicitGemmMultistage<gemm::GemmShape<64, 128, 32>, threadblock::MmaPolicy<"
    "gemm::warp::MmaTensorOp<gemm::GemmShape<32, 64, 32>>>>, epilogue::NoPermute>>(T1::Params)",
    "hopper-gmma": "void cutlass::device_kernel<cutlass::gemm::collective::MainloopSm90TmaGmmaWarpSpecialized<3>>()",
    "cutlass3-sm90": "void cutlass::device_kernel<cutlass::gemm::KernelTmaWarpSpecializedCooperative>()",
    "blackwell-tcgen05": "kernel_using_tcgen05_mma",
    "cutlass3-sm100": "cutlass3x_sm100_bstensor_gemm",
    "cublaslt-nvjet": "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN",
    "xmma-sm100": "sm100_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n_tilesize128x128x128",
    "xmma-sm90": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_cublas",
    "xmma-sm8x": "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16",
    "xmma": "xmma_implicit_gemm_fprop",
    "flash-attention": "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64>>()",
    "fmha": "fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel)",
    "cudnn-sdpa": "cudnn_generated_fort_native_sdpa_sm90_knob_7_64x128x64_4x1x1_kernel0_0",
    "blackwell-bmm-lowp": "bmm_E4m3_E4m3E4m3_Fp32_t128x8x128u2_s6_et64x8_m64x8x32_cga1x1x1_16dp256b_TN_schedS_sm100a",
}
NOT_TC = {
    "flash-splitkv-combine": "flash_fwd_splitkv_combine_kernel",
    "cutlass-simt": "cutlass_80_simt_sgemm_128x128_8x4_nn_align1",
    "sgemm-convolution": "implicit_convolve_sgemm",
    "sgemm": "volta_sgemm_64x64_nt",
    "scudnn": "volta_scudnn_128x64_relu_interior_nn_v1",
    "dgemm-pre-ampere": "volta_dgemm_64x64_nn",
    "complex-gemm": "ampere_gcgemm_64x64_nt",
    "gemv": "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false>",
    "cublas-small-gemm": "gemmSN_NN_kernel",
    "winograd": "void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(x)",
    "fft": "void fft2d_r2c_32x32<float, false, 0u, false>(float2*)",
    "im2col": "im2col4d_kernel",
    "cudnn-helpers": "cask_cudnn::computeOffsetsKernel(cask_cudnn::ComputeOffsetsParams)",
    "cudnn-legacy-engines": "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int)",
    # the next four from sample_traces/h200-torch-cnn-ncu (ncu's spelling)
    "cudnn-convolve-common-engine": "void convolve_common_engine_float_NHWC<__nv_bfloat16, "
    "__nv_bfloat16, 128, 6, 7, 3, 3, 5, 1, 0, 0, 0, 0>(int, int)",
    "xmma-split-k-reduction": "sm80_xmma_wgrad_implicit_gemm_indexed_f16f16_f16f32_f32_nhwckrsc_nhwc_"
    "tilesize32x128x32_stage4_warpsize1x4x1_g1_tensor16x8x16_execute_split_k_kernel__5x_cudnn",
    "xmma-ffma": "sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize128x32x8_"
    "stage3_warpsize2x2x1_g1_ffma_aligna4_alignc4_execute_kernel__5x_cudnn",
    "cudnn-workspace-init": "void cask_plugin__5x_cudnn::init_device_workspace_kernel<"
    "xmma__5x_cudnn::Warp_specialized_params<int>>(T1)",
    "cublas-splitk-epilogue": "splitKreduce_kernel",
    "elementwise": "vectorized_elementwise_kernel",
    "reduction": "reduce_kernel",
    "softmax": "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true>(float*)",
    "normalization": "vectorized_layer_norm_kernel",
    "copy-layout": "CatArrayBatchedCopy_vectorized",
    "nccl": "ncclDevKernel_SendRecv",
    "memcpy-memset": "memcpy32_post",
    "eigen-tensorflow": "void Eigen::internal::EigenMetaKernel<Eigen::TensorEvaluator<float>, long>(x)",
    "pytorch-native": "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16>(x)",
    "pooling": "max_pool_forward_nchw",
    "misc-non-mma": "cub::DeviceRadixSortKernel",
    "triton-pointwise": "triton_poi_fused_add_mul_0",
    "attention-partial-merge": "fmhaReductionKernel",
    "decode-attention-cuda-cores": "void vllm::paged_attention_v1_kernel<unsigned short>(x)",
    "moe-routing": "void vllm::moe::moe_align_block_size_kernel<int>(int const*)",
    "quantize": "void vllm::scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn>(x)",
    "kv-cache-update": "void vllm::concat_and_cache_mla_kernel<__nv_bfloat16>(x)",
    "rotary-embedding": "void vllm::batched_rotary_embedding_kernel<c10::Half, true>(x)",
    "fused-activation": "silu_and_mul_kernel",
    "fused-norm-inference": "l2norm_fwd_kernel1",
    "sampling": "void flashinfer::sampling::SamplingFromProbKernel<1024u>(x)",
    "collective-fusion": "void tensorrt_llm::kernels::userbuffers_allgather<__nv_bfloat16>(x)",
    "sparse-index": "void linearize_index_kernel<long>(x)",
}
UNKNOWN = {
    "xmma-fp32-math": "sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x32",
    "dgemm": "ampere_dgemm_64x64_nn",
    "triton-unknown": "triton_tem_fused_mm_0",
    "xla-gemm-fusion": "gemm_fusion_dot_general_13",
    "gemm-unplaced": "my_custom_gemm_kernel",
}


@pytest.mark.parametrize(("rule", "name"), sorted(TC.items()))
def test_tensor_core_families(rule: str, name: str) -> None:
    assert tk.classify_name(name) == (True, rule)


@pytest.mark.parametrize(("rule", "name"), sorted(NOT_TC.items()))
def test_not_tensor_core_families(rule: str, name: str) -> None:
    assert tk.classify_name(name) == (False, rule)


@pytest.mark.parametrize(("rule", "name"), sorted(UNKNOWN.items()))
def test_honest_unknowns(rule: str, name: str) -> None:
    assert tk.classify_name(name) == (None, rule)


def test_every_rule_has_an_example() -> None:
    examples = set(TC) | set(NOT_TC) | set(UNKNOWN)
    shadowed = {"complex-c1688", "ampere-i16832", "imma", "xmma-sm7x", "fp64-dmma", "fmha-sm50",
                "fmha-fp32-pre-ampere", "sm100-mma-kernel", "cudnn-legacy-tc-list"}  # fmt: skip
    missing = {r.id for r in tk.default_pack().rules} - examples - shadowed
    assert not missing
    for name, rule in [("ampere_c1688tf32gemm", "complex-c1688"), ("ampere_i16832gemm_int8", "ampere-i16832"),
                       ("sm75_xmma_gemm_f16f16", "xmma-sm7x"), ("ampere_dmma_gemm", "fp64-dmma"),
                       ("fmha_cutlassF_f32_aligned_64x64_rf_sm50", "fmha-sm50"),
                       ("fmha_cutlassB_f32_aligned_128x64_k65536_sm75", "fmha-fp32-pre-ampere"),
                       ("sm100_fp4_gemm_kernel", "sm100-mma-kernel"), ("dgrad_1x1_stride_2x2", "cudnn-legacy-tc-list"),
                       ("turing_imma_gemm", "imma")]:  # fmt: skip
        assert tk.classify_name(name)[1] == rule, name


def test_first_match_wins_across_short_and_long_names() -> None:
    # the long (demangled) name of an nsys row can hold the deciding token
    assert tk.classify_name("Kernel2", "void cutlass::Kernel2<cutlass_80_tensorop_h16816gemm>") == (
        True,
        "ampere-16816",
    )
    # a generic short name does not outvote a stronger long-name rule listed earlier
    assert tk.classify_name("elementwise_kernel", "void flash::flash_fwd_kernel<x>") == (
        True,
        "flash-attention",
    )
    assert tk.classify_name("test0") == (None, None)


def test_table_keeps_profiler_label_and_falls_back_on_it() -> None:
    t = kernels(["nvjet_tst_x", "volta_sgemm_x", "mystery", "mystery", "triton_tem_fused_mm_0"],
                profiler_uses_tc=[False, False, True, None, True])  # fmt: skip
    out = tk.classify_kernels(t)
    schema.validate(out, K)
    assert out.column("profiler_uses_tc").to_pylist() == [False, False, True, None, True]
    assert out.column("uses_tc").to_pylist() == [True, False, True, None, True]
    assert out.column("tc_rule").to_pylist() == [
        "cublaslt-nvjet", "sgemm", tk.PROFILER_LABEL, None, tk.PROFILER_LABEL]  # fmt: skip
    a = tk.tc_agreement(out)
    assert (a.compared, a.agreeing) == (2, 1)
    assert a.disagreements == (tk.Disagreement("nvjet_tst_x", True, False, 1),)


def test_chunks_with_different_dictionaries() -> None:
    a, b = kernels(["volta_sgemm_x", "nvjet_a"]), kernels(["nvjet_a", "foo", "reduce_kernel"])
    t = pa.concat_tables([a, b])
    assert t.column("name").num_chunks == 2
    out = tk.classify_kernels(t)
    assert out.column("uses_tc").to_pylist() == [False, True, True, None, False]
    assert tk.classified_share(out) == pytest.approx(4 / 5)


def test_a_pack_judges_each_name_once_across_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """A job's ranks share their kernel names: the second rank's are not matched again, and the
    verdicts are the ones a fresh pack gives."""
    pack = tk._shipped(tk.DEFAULT_PACK)  # a fresh pack: nothing judged yet
    names = ["volta_sgemm_x", "nvjet_a", "foo", "reduce_kernel"]
    first = tk.classify_kernels(kernels(names), pack)
    asked: list[str | None] = []
    real = tk.RulePack.first_match

    def counted(
        self: tk.RulePack, name: str | None, field: tk.NameField = tk.NameField.NAME
    ) -> int | None:
        asked.append(name)
        return real(self, name, field)

    monkeypatch.setattr(tk.RulePack, "first_match", counted)
    second = tk.classify_kernels(kernels([*reversed(names), "nvjet_b"]), pack)
    assert asked == ["nvjet_b"]  # the one new name (long names: none in either table)
    assert second.column("tc_rule").to_pylist()[:4] == first.column("tc_rule").to_pylist()[::-1]
    assert second.column("uses_tc").to_pylist() == [False, None, True, False, True]
    assert pack == tk._shipped(tk.DEFAULT_PACK)  # what it remembers is not one of its fields


def test_a_pack_forgets_a_run_of_unique_names(monkeypatch: pytest.MonkeyPatch) -> None:
    pack = tk.default_pack()
    monkeypatch.setattr(tk, "_SEEN_MAX", 3)
    tk.classify_kernels(kernels([f"unique_kernel_{i}" for i in range(5)]), pack)
    assert pack.ranks_seen(tk.NameField.NAME) == {}  # past the bound: nothing kept
    tk.classify_kernels(kernels(["nvjet_a"]), pack)
    assert pack.ranks_seen(tk.NameField.NAME) == {"nvjet_a": pack.first_match("nvjet_a")}


def test_empty_and_zero_time() -> None:
    out = tk.classify_kernels(schema.empty(K))
    assert out.num_rows == 0
    assert tk.classified_share(out) is None
    assert tk.tc_agreement(out).rate is None


def test_bad_rule_packs_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a valid kernel rule pack"):
        tk.parse_rule_pack(
            '[pack]\nid="x"\nversion="1"\n[[rule]]\nid="a"\npattern="("\nverdict="yes"\nsource="s"'
        )
    with pytest.raises(InputError, match="unique"):
        tk.parse_rule_pack(
            '[pack]\nid="x"\nversion="1"\n'
            + '[[rule]]\nid="a"\npattern="a"\nverdict="no"\nsource="s"\n' * 2
        )
    with pytest.raises(InputError, match="cannot read"):
        tk.load_rule_pack(tmp_path / "absent.toml")
    own = tmp_path / "own.toml"
    own.write_text(
        '[pack]\nid="in-house"\nversion="1"\n[[rule]]\nid="ours"\npattern="^my_mma"\nverdict="yes"\nsource="s"\n'
    )
    pack = tk.load_rule_pack(own)
    assert tk.classify_kernels(kernels(["my_mma_kernel"]), pack).column("tc_rule").to_pylist() == [
        "ours"
    ]


# --- invariants -------------------------------------------------------------------------------------

_names = st.one_of(
    st.sampled_from([*TC.values(), *NOT_TC.values(), *UNKNOWN.values()]), st.text(max_size=40)
)


@settings(max_examples=budget(60), deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            _names,
            st.one_of(st.none(), _names),
            st.integers(0, 10**12),
            st.one_of(st.none(), st.booleans()),
        ),
        max_size=30,
    )
)
def test_classify_never_raises_and_shares_are_fractions(
    rows: list[tuple[str, str | None, int, bool | None]],
) -> None:
    t = kernels([r[0] for r in rows], [r[1] for r in rows], duration_ns=[r[2] for r in rows],
                profiler_uses_tc=pa.array([r[3] for r in rows], pa.bool_()))  # fmt: skip
    out = tk.classify_kernels(t)
    assert out.num_rows == len(rows)
    share = tk.classified_share(out)
    assert share is None or 0.0 <= share <= 1.0
    a = tk.tc_agreement(out)
    assert 0 <= a.agreeing <= a.compared <= len(rows)


# --- real traces ------------------------------------------------------------------------------------


def nsys_kernels(path: Path) -> pa.Table:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = con.execute(
        "SELECT s.value, d.value, k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k "
        "JOIN StringIds s ON s.id = k.shortName JOIN StringIds d ON d.id = k.demangledName"
    ).fetchall()
    con.close()
    return kernels([r[0] for r in rows], [r[1] for r in rows], duration_ns=[r[2] for r in rows])


def _kineto(folder: str) -> Path:
    return next(need(real_or_bundled(f"kineto/{folder}")).glob("*.json.gz"))


def _report_share(path: Path) -> float | None:
    """The Tensor Core share the report shows for the real trace at ``path``: the figure itself
    (:attr:`Verdict.tc_share`), not a copy. The expected values were measured on each trace's own
    kernel table, read here without the readers, with the name rules this file checks."""
    return api.analyze(api.load(path)).analysis.verdict.tc_share


def kineto_kernels(folder: str) -> pa.Table:
    path = _kineto(folder)
    with gzip.open(path, "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    ks = [e for e in events if e.get("cat") in ("kernel", "Kernel") and e.get("ph") == "X"]
    return kernels([e["name"] for e in ks], duration_ns=[round(e["dur"] * 1000) for e in ks])


def dlprof_kernels() -> pa.Table:
    with (need(DLPROF_CNN) / "dlprof_kernel.csv").open(newline="") as f:
        rows = list(csv.reader(f))[1:]
    recs = [dict(zip(rows[0], r, strict=True)) for r in rows[1:]]
    return kernels([r["Kernel Name"] for r in recs], op_id=[r["Op ID"] for r in recs],
                   duration_ns=[int(r["Total GPU Time (ns)"]) for r in recs],
                   profiler_uses_tc=[r["Uses TC"] == "yes" for r in recs])  # fmt: skip


def _verdicts(t: pa.Table) -> dict[str, bool | None]:
    return dict(zip(t.column("name").to_pylist(), t.column("uses_tc").to_pylist(), strict=True))


@pytest.mark.realtraces
def test_h100_nsys_nvjet_and_flash_are_tc() -> None:
    out = tk.classify_kernels(nsys_kernels(need(NSYS_H100)))
    v = _verdicts(out)
    assert all(v[n] for n in v if n.startswith("nvjet_")) and v["flash_fwd_kernel"] is True
    for n in ("elementwise_kernel", "vectorized_elementwise_kernel", "reduce_kernel", "ncclDevKernel_SendRecv",
              "vectorized_layer_norm_kernel"):  # fmt: skip
        assert v[n] is False
    assert tk.classified_share(out) == pytest.approx(1.0)  # brief: >= 99 %
    assert _report_share(need(NSYS_H100)) == pytest.approx(0.5997, abs=1e-3)


@pytest.mark.realtraces
def test_a100_alexnet_xmma_convolutions_are_tc() -> None:
    out = tk.classify_kernels(kineto_kernels("a100-tf32-alexnet"))
    v = _verdicts(out)
    xmma = [n for n in v if "xmma" in n]
    assert xmma and all(v[n] for n in xmma)
    assert v["ampere_sgemm_32x32_sliced1x4_tn"] is False
    assert v["cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1"] is False
    assert tk.classified_share(out) == pytest.approx(1.0)
    assert _report_share(_kineto("a100-tf32-alexnet")) == pytest.approx(0.1697, abs=1e-3)


@pytest.mark.realtraces
def test_v100_resnet50_sgemm_and_winograd_are_not_tc() -> None:
    out = tk.classify_kernels(kineto_kernels("v100-legacy-resnet50"))
    v = _verdicts(out)
    assert [n for n in v if "sgemm" in n or "winograd" in n.lower()]
    assert all(v[n] is False for n in v if "sgemm" in n or "winograd" in n.lower())
    assert tk.classified_share(out) == pytest.approx(1.0)
    # FP32 ResNet-50 on a V100: nothing on Tensor Cores
    assert _report_share(_kineto("v100-legacy-resnet50")) == 0.0


@pytest.mark.realtraces
def test_h100_bert_wmma_xmma_flash_are_tc() -> None:
    out = tk.classify_kernels(kineto_kernels("h100-bf16-bert-small"))
    v = _verdicts(out)
    for token in ("wmma", "s16816gemm", "sm90_xmma", "flash_fwd_kernel"):
        hits = [n for n in v if token in n]
        assert hits and all(v[n] for n in hits), token
    assert tk.classified_share(out) == pytest.approx(1.0)
    assert _report_share(_kineto("h100-bf16-bert-small")) == pytest.approx(0.7650, abs=1e-3)


@pytest.mark.realtraces
def test_dlprof_uses_tc_agrees_100_percent() -> None:
    out = tk.classify_kernels(dlprof_kernels())
    assert (
        tk.PROFILER_LABEL not in out.column("tc_rule").to_pylist()
    )  # our own rules decided every row
    a = tk.tc_agreement(out)
    assert a.compared == out.num_rows == 49
    assert a.agreeing == a.compared and a.rate == 1.0 and not a.disagreements


# --- documentation ----------------------------------------------------------------------------------


def test_doc_lists_every_rule_and_is_current() -> None:
    doc = (ROOT / "docs" / "tensor-core-rules.md").read_text(encoding="utf-8")
    for rule in tk.default_pack().rules:
        assert f"`{rule.id}`" in doc, rule.id
    begin, end = "<!-- rules:begin -->\n", "<!-- rules:end -->"
    table = doc[doc.index(begin) + len(begin) : doc.index(end)]
    assert table == tk.rules_markdown(), "regenerate: python -m tcreport.analysis.tc_kernels"
