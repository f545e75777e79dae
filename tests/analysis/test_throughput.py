"""FLOPs from recorded shapes, achieved TFLOP/s, % of peak and MFU, on two real Kineto traces
recorded with shapes (counts checked by hand), plus the formulas on hand-written shapes."""

from __future__ import annotations

import json

import pytest
from trace_paths import REALTRACES, need

from tcreport import api
from tcreport.analysis import flops, peaks, result


def _analyse(folder: str) -> result.Analysis:
    path = need(REALTRACES / "kineto" / folder)
    a = result.compute(api.load(next(path.glob("*.json.gz"))))
    return a


def test_bert_h100_gemm_and_attention_counted_by_hand() -> None:
    a = _analyse("h100-bf16-bert-small")
    t = a.throughput
    assert t is not None and t.gpu is not None
    assert t.gpu.model == "H100 SXM5"  # "NVIDIA H100 80GB HBM3"
    assert t.precision == "bf16" and t.peak_tflops == 989.4
    by_shape = {(o.name, o.input_shapes): o for o in t.ops}
    # the vocabulary projection: addmm(bias[30522], x[141,512], W[512,30522]), one call; the
    # products and the bias add, as TraceLens counts them (its report of this trace: 4.41119205)
    head = by_shape[("aten::addmm", "[[30522],[141,512],[512,30522],[],[]]")]
    assert head.flops == 2 * 141 * 512 * 30522 + 141 * 30522 == 4_411_192_050
    assert head.calls == 1 and head.gpu_ns == 41_280  # the kernel time Kineto recorded
    assert head.tflops == pytest.approx(4_411_192_050 / 41_280 / 1e3)
    assert head.tflops is not None
    assert head.peak_share == pytest.approx(head.tflops / 989.4)
    # flash attention, [B, L, H, D] = [1, 141, 8, 64], 4 layers: Q·Kᵀ and P·V
    attn = next(o for o in t.ops if o.name == "aten::_flash_attention_forward")
    assert attn.flops == 4 * 2 * 1 * 8 * 141 * 141 * (64 + 64)
    # every GEMM and attention op has shapes and covers the Tensor Core kernel time: MFU given
    assert t.missing == () and t.mfu_note is None
    assert t.wall_ns is not None and t.mfu is not None
    assert t.mfu == pytest.approx(t.flops / t.wall_ns / 1e3 / 989.4)
    assert 0 < t.mfu < 0.01  # a 141-token BERT-small forward pass is tiny for an H100
    assert t.iterations[0].flops == t.flops


def test_resnet50_v100_convolution_and_gemm_counted_by_hand() -> None:
    a = _analyse("v100-legacy-resnet50")
    t = a.throughput
    assert t is not None and t.gpu is not None
    assert t.gpu.model == "V100 SXM2" and t.precision == "fp32" and t.peak_tflops == 15.7
    ops = {(o.name, o.input_shapes): o for o in t.ops}
    # data gradient of the last 1x1 convolution: grad_output [32,2048,7,7], weight [2048,512,1,1]
    dgrad = ops[
        (
            "aten::cudnn_convolution_backward_input",
            "[[],[32,2048,7,7],[2048,512,1,1],[],[],[],[],[],[],[]]",
        )
    ]
    assert dgrad.flops == dgrad.calls * 2 * 32 * 2048 * 7 * 7 * 512 == dgrad.calls * 3_288_334_336
    assert dgrad.kind == "conv" and dgrad.precision == "fp32"
    # a GEMM of the classifier's backward pass: [32,1000] x [1000,2048]
    count = flops.count("aten::mm", "[[32,1000],[1000,2048]]", None)
    assert count.flops == 2 * 32 * 1000 * 2048 == 131_072_000
    # forward convolutions: Kineto 2021 records no output shape and no stride, so no count and
    # no MFU, with the reason named; never a guess
    fwd = next(o for o in t.ops if o.name == "aten::cudnn_convolution")
    assert fwd.flops is None and "output shape" in fwd.formula
    assert t.mfu is None and t.mfu_note is not None and "aten::cudnn_convolution" in t.mfu_note
    assert t.missing == ("aten::cudnn_convolution",)
    assert len(t.iterations) == 6 and all((i.flops or 0) > 0 for i in t.iterations)


def test_summary_json_carries_throughput() -> None:
    path = need(REALTRACES / "kineto" / "h100-bf16-bert-small")
    d = json.loads(api.render_json(api.analyze(api.load(next(path.glob("*.json.gz"))))))
    t = d["throughput"]
    assert t["gpu_model"] == "H100 SXM5" and "whitepaper" in t["peak_source"]
    assert t["mfu"] is not None and t["ops"][0]["flops"] is not None


def test_synthetic_formulas_on_dlprof_and_kineto_shapes() -> None:
    conv = flops.count(
        "conv2d", "<N:32, C:3, H:32, W:32>; <K:6, C:3, R:3, S:3>; <6>", "<N:32, K:6, P:30, Q:30>"
    )
    assert conv.flops == 2 * 32 * 6 * 30 * 30 * 3 * 3 * 3
    linear = flops.count("linear", "[[8,16,64],[32,64],[32]]", None)  # with its bias add
    assert linear.flops == 2 * 8 * 16 * 64 * 32 + 8 * 16 * 32
    assert flops.count("linear", "[[8,16,64],[32,64],[]]", None).flops == 2 * 8 * 16 * 64 * 32
    assert flops.count("aten::bmm", "[[4,8,16],[4,16,2]]", None).flops == 2 * 4 * 8 * 16 * 2
    assert flops.count("aten::matmul", "[[4,8,16],[16,2]]", None).flops == 2 * 4 * 8 * 16 * 2
    assert flops.count("aten::mm", "[[3,4],[5,6]]", None).flops is None  # K differs
    assert flops.count("aten::relu", "[[3,4]]", None).kind == "other"
    assert flops.count("aten::mm", None, None).formula == "no shapes recorded"


def test_flash_attn_package_functions_are_attention() -> None:
    """The flash-attn package's autograd functions (nsys autograd-nvtx names them, e.g. the 2xH100
    sample's FlashAttnFunc, half its GPU time) are attention: counted from [B, L, H, D] shapes
    when recorded, listed as heavy ops without a count otherwise, never "not attention"."""
    qkv = "[[2,1024,16,64],[2,1024,16,64],[2,1024,16,64]]"
    c = flops.count("FlashAttnFunc", qkv, None)
    assert (c.kind, c.flops) == ("attention", 2 * 2 * 16 * 1024 * 1024 * (64 + 64))
    assert flops.count("FlashAttnFunc", None, None).formula == "no shapes recorded"
    varlen = flops.count("FlashAttnVarlenFunc", "[[4096,16,64],[4096,16,64],[4096,16,64]]", None)
    assert varlen.kind == "attention" and varlen.flops is None
    assert flops.HEAVY.match("flashattnfunc") and flops.HEAVY.match("flashattnvarlenqkvpackedfunc")


def test_peaks_table_has_a_source_for_every_model() -> None:
    for _, g in peaks.table():
        assert g.source and g.tflops
    a100, h100 = peaks.for_gpu("NVIDIA A100-SXM4-80GB"), peaks.for_gpu("NVIDIA H100 PCIe")
    assert a100 is not None and a100.peak("tf32") == 156.0
    assert h100 is not None and h100.model == "H100 PCIe"
    assert peaks.for_gpu("AMD Radeon Graphics") is None
    assert peaks.precision("fp32", True) == "tf32" and peaks.precision("fp32", False) == "fp32"
