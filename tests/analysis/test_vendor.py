"""AMD and other non-NVIDIA GPUs: recognised, judged by their own rules, never given an NVIDIA
compute capability, and never told they "did not use Tensor Cores" when the names cannot tell.

The MI250 trace is real (HolisticTraceAnalysis' ROCm 6.2 test trace); the MI300 kernel names are
synthetic, written from the public naming of Tensile/hipBLASLt solutions (``MI<M>x<N>x<K>`` = the
MFMA instruction, ``BBS``/``F8SS`` data types), Composable Kernel (``xdl``, ``ck_tile::Fmha*``) and
MIOpen (``igemm_*_gtcx*`` xdlops convolutions, ``SubTensorOp*`` elementwise kernels).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from synthetic import synthetic_vendor_run
from trace_paths import REALTRACES, ROOT

from tcreport import api
from tcreport.analysis import tc_kernels as tk
from tcreport.analysis.vendor import Vendor
from tcreport.model import gpu_vendor
from tcreport.report import Report

MI250 = REALTRACES / "kineto" / "mi250-rocm-minitoy" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"


@pytest.fixture
def mi250() -> Report:
    if not MI250.exists():
        pytest.skip("real trace not available")
    return api.analyze(api.load(MI250))


def test_real_mi250_is_amd_with_no_nvidia_claim(mi250: Report) -> None:
    a = mi250.analysis
    assert a.verdict.vendor is Vendor.AMD
    assert a.verdict.words.unit == "AMD Matrix Cores"
    assert {g.vendor for g in a.meta.gpus} == {"amd"}
    # computeMajor 9 is a HIP architecture, not "compute capability 9.0"
    assert all(g.compute_capability is None for g in a.meta.gpus)
    summary = json.loads(api.render_json(mi250))
    assert summary["system"]["vendor"] == "amd"
    assert summary["system"]["matrix_unit"] == "AMD Matrix Cores"
    html = api.render_html(mi250)
    assert "(sm 9.0)" not in html and "AMD Matrix Cores" in html
    assert "AMD Matrix Core share" in api.render_markdown(mi250)


def test_real_mi250_tensile_mfma_gemms_are_matrix_core_time(mi250: Report) -> None:
    a = mi250.analysis
    cijk = [k for k in a.breakdown.kernels if k.name.startswith("Cijk_")]
    assert len(cijk) == 2 and all("_MI16x16x1_" in k.name for k in cijk)
    assert all(k.uses_tc is True and k.tc_rule == "tensile-mfma" for k in cijk)
    assert sum(k.gpu_ns for k in cijk) == a.time.tc_kernel_ns == 30_240
    assert a.verdict.classified_share == 1.0
    assert not [f for f in mi250.findings if f.id in ("TC001", "TC003", "TC004")]


#: synthetic MI300 names -> (verdict, deciding rule)
MI300 = {
    "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x256x64_MI16x16x1_SN_LDSB1_ISA942_WG32_8_1": (
        True,
        "tensile-mfma-bf16",
    ),
    "Cijk_Alik_Bljk_F8SS_BH_Bias_SAV_UserArgs_MT256x256x128_MI32x32x1_SN_ISA942_WG64_4_1": (
        True,
        "tensile-mfma-fp8",
    ),
    "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_GRVW8_ISA942": (True, "tensile-mfma-fp16"),
    "Cijk_Ailk_Bljk_SB_MT64x64x8_SE_K1_ISA942": (False, "tensile-valu"),
    "void ck_tile::kentry<256, 2, ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVSAsync<"
    "ck_tile::BlockFmhaPipelineProblem<ck_tile::bf16_t, ck_tile::bf16_t>>>>(FmhaFwdKargs)": (
        True,
        "ck-tile-fmha",
    ),
    "void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<ck::half_t>>(Argument)": (
        True,
        "ck-xdl",
    ),
    "igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt256x128x32_wt32x32x8_ws2x1_wl2x2_ta1x8x4x1": (
        True,
        "miopen-igemm-xdlops",
    ),
    "igemm_bwd_gtc_nchw_fp32_bx0_ex0_bt128x128x16_lt8x8_lw2x4_lr2x2": (False, "miopen-igemm-valu"),
    "naive_conv_fwd_nchw_float_double_float": (False, "miopen-conv-valu"),
    "miopenSp3AsmConv_v21_1_3_gfx9_fp32_stride1": (False, "miopen-conv-valu"),
    "SubTensorOpWithScalar1d": (False, "miopen-tensor-ops"),
    "Op2dTensorGeneric": (False, "miopen-tensor-ops"),
    "MIOpenBatchNormFwdTrainSpatial": (False, "miopen-non-mfma"),
    # vLLM's ROCm paged attention names the MFMA instruction it uses
    "void vllm::paged_attention_ll4mi_QKV_mfma16_kernel<__hip_bfloat16, __hip_bfloat16>(x)": (
        True,
        "named-mfma",
    ),
}


@pytest.mark.parametrize("name", sorted(MI300))
def test_synthetic_mi300_kernel_names(name: str) -> None:
    assert tk.classify_name(name, pack=tk.pack_for("amd")) == MI300[name]


def test_elementwise_tensorop_substring_is_not_a_tensor_core_kernel_synthetic() -> None:
    # With the NVIDIA pack alone (a ROCm trace without device names) too.
    assert tk.classify_name("SubTensorOpWithScalar1d")[0] is not True
    assert tk.classify_name("cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64")[0] is True
    assert tk.classify_name("void cutlass::Kernel<cutlass::arch::OpClassTensorOp>")[0] is True


def test_synthetic_mi300_run_counts_matrix_core_time_and_unknowns_are_not_misses() -> None:
    names = [
        "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x256x64_MI16x16x1_SN_ISA942",
        "my_custom_fused_kernel",  # no rule can tell
    ]
    view = api.analyze(synthetic_vendor_run("AMD Instinct MI300X", names))
    a = view.analysis
    assert a.verdict.vendor is Vendor.AMD and a.time.tc_kernel_ns == 10_000
    assert not [o for o in a.breakdown.ops if o.missed_tc]
    assert not [f for f in view.findings if f.id == "TC004"]


@pytest.mark.parametrize("gpu", ["Intel(R) Data Center GPU Max 1550", "Some Unknown Accelerator"])
def test_synthetic_other_vendor_is_unknown_never_no(gpu: str) -> None:
    names = ["gemm_kernel", "elementwise_kernel_with_index"]
    view = api.analyze(synthetic_vendor_run(gpu, names))
    a = view.analysis
    if gpu_vendor(gpu) == "intel":
        assert a.verdict.vendor is Vendor.INTEL
        assert all(k.uses_tc is None for k in a.breakdown.kernels)
    assert a.verdict.eligible_not_using_op_count == 0
    assert not [f for f in view.findings if f.id in ("TC001", "TC003", "TC004")]


def test_gpu_vendor_from_device_names() -> None:
    assert gpu_vendor("AMD Radeon Graphics") == "amd"
    assert gpu_vendor("AMD Instinct MI300X") == "amd"
    assert gpu_vendor("NVIDIA H100 80GB HBM3") == "nvidia"
    assert gpu_vendor("NVIDIA GeForce RTX 2070 SUPER") == "nvidia"
    assert gpu_vendor("Intel(R) Data Center GPU Max 1550") == "intel"
    assert gpu_vendor(None) is None


def test_doc_lists_the_amd_pack() -> None:
    doc = (ROOT / "docs" / "tensor-core-rules.md").read_text(encoding="utf-8")
    begin, end = "<!-- amd-rules:begin -->\n", "<!-- amd-rules:end -->"
    table = doc[doc.index(begin) + len(begin) : doc.index(end)]
    assert table == tk.rules_markdown(tk.amd_pack())


def test_synthetic_ingest_manifest_vendor_that_contradicts_the_gpu_name_loses(
    tmp_path: Path,
) -> None:
    """An ingest folder whose manifest says ``vendor: "amd"`` of an "NVIDIA A100-SXM4-40GB"
    running ``ampere_sgemm`` was reported in AMD's words ("AMD Matrix Core share"). The device
    table knows the name: it wins, the run is NVIDIA's, and a note says what was overruled."""
    run = synthetic_vendor_run("NVIDIA A100-SXM4-40GB", ["ampere_sgemm_128x64_nn"])
    folder = api.ingest(run, tmp_path / "synthetic_ingest")
    manifest = folder / "tcreport-run.json"
    doc = json.loads(manifest.read_text(encoding="utf-8"))
    doc["meta"]["gpus"][0]["vendor"] = "amd"
    manifest.write_text(json.dumps(doc), encoding="utf-8")
    view = api.analyze(api.load(folder))
    a = view.analysis
    assert a.verdict.vendor is Vendor.NVIDIA and a.verdict.words.unit == "Tensor Cores"
    assert [g.vendor for g in a.meta.gpus] == ["nvidia"]
    (note,) = [n for n in a.meta.notes if "records vendor" in n]
    assert "'amd'" in note and "'NVIDIA A100-SXM4-40GB'" in note and "'nvidia'" in note
    for text in (api.render_markdown(view), api.render_json(view), api.render_html(view)):
        assert "AMD Matrix Core" not in text
    assert json.loads(api.render_json(view))["system"]["vendor"] == "nvidia"
    for text in (api.render_markdown(view), api.render_html(view)):  # the outputs with notes
        assert "records vendor" in text
