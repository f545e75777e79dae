"""Convolution and causal-attention FLOPs from the scalar arguments PyTorch records, per-call
rates and memsets, on synthetic Kineto traces (no shared trace records a convolution's
``Concrete Inputs``; the argument layout is PyTorch's, as its profiler writes it:
``"[2, 2]"``, ``"False"``, ``"1"``, ``""`` for a tensor).

Every expected count is the textbook formula written out: output size
⌊(H + 2·pad − dil·(R − 1) − 1) / stride⌋ + 1, FLOPs 2·N·K·P·Q·(C/g)·R·S.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from synthetic import US, kernel_row, op_row, synthetic_rows_run

from tcreport import api
from tcreport.analysis import flops, throughput
from tcreport.analysis.throughput import Throughput
from tcreport.render import html
from tcreport.report import Report

BF16 = "c10::BFloat16"
TC_CONV = "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_synthetic"
TC_GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_synthetic"
FLASH = "void pytorch_flash::flash_fwd_kernel_synthetic"


@dataclass
class Call:
    """One op call as Kineto records it, with the kernel (and memset) it launched."""

    name: str
    dims: list[list[int]]
    concrete: list[str] | None
    kernel: str = TC_CONV
    kernel_us: float = 10.0
    memset_us: float | None = None
    types: list[str] = field(default_factory=list)


def _trace(tmp_path: Path, calls: list[Call], gpu: str = "NVIDIA H100 80GB HBM3") -> Throughput:
    t = _report(tmp_path, calls, gpu).analysis.throughput
    assert t is not None
    return t


def _report(tmp_path: Path, calls: list[Call], gpu: str) -> Report:
    events: list[dict[str, Any]] = []
    t = 100.0
    for i, c in enumerate(calls):
        eid, corr = 10 + i, 1000 + 2 * i
        args: dict[str, Any] = {
            "External id": eid,
            "Input Dims": c.dims,
            "Input type": c.types or [BF16 if d else "" for d in c.dims],
        }
        if c.concrete is not None:
            args["Concrete Inputs"] = c.concrete
        events.append({"ph": "X", "cat": "cpu_op", "name": c.name, "pid": 1, "tid": 1,
                       "ts": t, "dur": 80.0, "args": args})  # fmt: skip
        gpu_at = t + 10
        if c.memset_us is not None:
            events += _launch("cudaMemsetAsync", "gpu_memset", "Memset (Device)", t + 1,
                              gpu_at, c.memset_us, eid, corr + 1)  # fmt: skip
            gpu_at += c.memset_us + 1
        events += _launch("cudaLaunchKernel", "kernel", c.kernel, t + 5, gpu_at, c.kernel_us,
                          eid, corr)  # fmt: skip
        t += 100.0
    doc = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": gpu, "computeMajor": 9, "computeMinor": 0}],
        "traceEvents": [
            {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
             "ts": 50.0, "dur": t, "args": {"External id": 1}},
            *events,
        ],
    }  # fmt: skip
    path = tmp_path / "throughput_synthetic.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return api.analyze(api.load(path))


def _launch(
    api_name: str, cat: str, name: str, at: float, gpu_at: float, dur: float, eid: int, corr: int
) -> list[dict[str, Any]]:
    return [
        {"ph": "X", "cat": "cuda_runtime", "name": api_name, "pid": 1, "tid": 1, "ts": at,
         "dur": 2.0, "args": {"correlation": corr, "External id": eid}},
        {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": gpu_at, "dur": dur,
         "args": {"device": 0, "stream": 7, "correlation": corr, "External id": eid,
                  "bytes": 1024}},
    ]  # fmt: skip


def _by_name(t: Throughput) -> dict[str, Any]:
    return {o.name: o for o in t.ops}


# cudnn_convolution(self, weight, padding, stride, dilation, groups, benchmark, deterministic,
# allow_tf32): x [8,64,56,56], w [128,64,3,3], pad 1, stride 2 -> P = Q = (56+2-2-1)//2+1 = 28
CUDNN = Call(
    "aten::cudnn_convolution",
    [[8, 64, 56, 56], [128, 64, 3, 3], [], [], [], [], [], [], []],
    ["", "", "[1, 1]", "[2, 2]", "[1, 1]", "1", "False", "False", "True"],
)
CUDNN_FLOPS = 2 * 8 * 128 * (28 * 28) * 64 * (3 * 3)


def test_conv_flops_from_concrete_inputs_equal_the_textbook_formula(tmp_path: Path) -> None:
    calls = [
        CUDNN,
        # convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
        # groups): 4 groups of 8 channels, dilation 2, pad 2 -> P = (17+4-2*2-1)//1+1 = 17
        Call(
            "aten::convolution",
            [[4, 32, 17, 17], [64, 8, 3, 3], [64], [], [], [], [], [], []],
            ["", "", "", "[1, 1]", "[2, 2]", "[2, 2]", "False", "[0, 0]", "4"],
        ),
        # conv1d(input, weight, bias, stride, padding, dilation, groups): depthwise, stride 3
        # -> L = (100-4-1)//3+1 = 32
        Call(
            "aten::conv1d",
            [[2, 16, 100], [16, 1, 5], [], [], [], [], []],
            ["", "", "", "[3]", "[0]", "[1]", "16"],
        ),
        # conv3d: stride (1, 2, 2), pad 1 -> 8 x 8 x 8
        Call(
            "aten::conv3d",
            [[1, 4, 8, 16, 16], [8, 4, 3, 3, 3], [], [], [], [], []],
            ["", "", "", "[1, 2, 2]", "[1, 1, 1]", "[1, 1, 1]", "1"],
        ),
        # conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups,
        # dilation): weight [C, K/g, R, S]; out (7-1)*2 - 2 + 3 + 0 + 1 = 14
        Call(
            "aten::conv_transpose2d",
            [[2, 16, 7, 7], [16, 8, 4, 4], [], [], [], [], [], []],
            ["", "", "", "[2, 2]", "[1, 1]", "[0, 0]", "1", "[1, 1]"],
        ),
    ]
    ops = _by_name(_trace(tmp_path, calls))
    expected = {
        "aten::cudnn_convolution": CUDNN_FLOPS,
        "aten::convolution": 2 * 4 * 64 * (17 * 17) * (32 // 4) * (3 * 3),
        "aten::conv1d": 2 * 2 * 16 * 32 * (16 // 16) * 5,
        "aten::conv3d": 2 * 1 * 8 * (8 * 8 * 8) * 4 * (3 * 3 * 3),
        # every input position meets (K/g)·R·S weights
        "aten::conv_transpose2d": 2 * 2 * 16 * (7 * 7) * 8 * (4 * 4),
    }
    for name, want in expected.items():
        assert (ops[name].kind, ops[name].flops) == ("conv", want), name
    # bytes: input, weight, bias and output once each, 2 bytes per bf16 element
    assert ops["aten::cudnn_convolution"].bytes == 2 * (
        8 * 64 * 56 * 56 + 128 * 64 * 3 * 3 + 8 * 128 * 28 * 28
    )
    assert ops["aten::convolution"].bytes == 2 * (
        4 * 32 * 17 * 17 + 64 * 8 * 3 * 3 + 64 + 4 * 64 * 17 * 17
    )
    assert ops["aten::conv_transpose2d"].bytes == 2 * (
        2 * 16 * 7 * 7 + 16 * 8 * 4 * 4 + 2 * 8 * 14 * 14
    )
    assert all(o.bound is not None for o in ops.values() if o.kind == "conv")


def test_conv_backward_counts_the_gradients_asked_for(tmp_path: Path) -> None:
    def backward(mask: str) -> Call:
        # convolution_backward(grad_output, input, weight, bias_sizes, stride, padding,
        # dilation, transposed, output_padding, groups, output_mask), CUDNN's convolution
        return Call(
            "aten::convolution_backward",
            [[8, 128, 28, 28], [8, 64, 56, 56], [128, 64, 3, 3], [], [], [], [], [], [], [], []],
            ["", "", "", "[128]", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", mask],
        )

    def count(mask: str) -> flops.Count:
        c = backward(mask)
        return flops.count(c.name, json.dumps(c.dims), None, json.dumps(c.concrete), "bfloat16")

    both, weight_only = count("[True, True, False]"), count("[False, True, False]")
    assert both.flops == 2 * CUDNN_FLOPS and weight_only.flops == CUDNN_FLOPS
    assert both.bytes == 2 * 2 * (8 * 128 * 28 * 28 + 128 * 64 * 9 + 8 * 64 * 56 * 56)
    # through the reader: the recorded arguments reach the count
    ops = _by_name(_trace(tmp_path, [backward("[True, True, True]")]))
    assert ops["aten::convolution_backward"].flops == 2 * CUDNN_FLOPS


def test_conv_without_its_arguments_has_a_reason_not_a_guess() -> None:
    dims = json.dumps(CUDNN.dims)
    assert "Concrete Inputs" in flops.count("aten::cudnn_convolution", dims, None).formula
    # another PyTorch version's layout (a bias argument in third place): refused, not misread
    old = json.dumps(["", "", "", "[1, 1]", "[2, 2]", "[1, 1]", "1", "False", "False", "True"])
    c = flops.count("aten::cudnn_convolution", dims, None, old)
    assert c.flops is None and "signature" in c.formula
    # channels that do not match the groups
    bad = ["", "", "", "[1, 1]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "3"]
    c = flops.count("aten::convolution", "[[1,32,8,8],[64,8,3,3]]", None, json.dumps(bad))
    assert c.flops is None and "groups" in c.formula


def _sdpa(causal: str, lq: int = 1024, lk: int = 1024) -> Call:
    # _scaled_dot_product_flash_attention(query, key, value, dropout_p, is_causal,
    # return_debug_mask, scale): [B, H, L, D]
    return Call(
        "aten::_scaled_dot_product_flash_attention",
        [[2, 16, lq, 64], [2, 16, lk, 64], [2, 16, lk, 64], [], [], [], []],
        ["", "", "", "0.", causal, "False", "0.125"],
        kernel=FLASH,
    )


FULL = 2 * 2 * 16 * 1024 * 1024 * (64 + 64)  # Q·Kᵀ and P·V


def test_causal_attention_is_halved(tmp_path: Path) -> None:
    (o,) = (o for o in _trace(tmp_path, [_sdpa("True")]).ops if o.kind == "attention")
    assert o.flops == FULL // 2 and "causal" in o.formula
    assert o.bytes == 2 * 4 * (2 * 16 * 1024 * 64)  # Q, K, V and O at bf16
    # each op records is_causal at its own position
    qkv = json.dumps([[2, 1024, 16, 64]] * 3)
    fa = ["", "", "", "", "", "1024", "1024", "0.", "True", "False", "0.125"]
    assert flops.count("_flash_attention_forward", qkv, None, json.dumps(fa)).flops == FULL // 2
    sdpa = json.dumps(["", "", "", "", "0.", "True", "", "False"])
    bhld = json.dumps([[2, 16, 1024, 64]] * 3)
    assert flops.count("scaled_dot_product_attention", bhld, None, sdpa).flops == FULL // 2
    eff = ["", "", "", "", "", "", "1024", "1024", "0.", "1", "True", ""]  # custom_mask_type 1
    assert flops.count("_efficient_attention_forward", qkv, None, json.dumps(eff)).flops == (
        FULL // 2
    )


def test_attention_not_causal_or_not_recorded_is_counted_whole() -> None:
    bhld = json.dumps(_sdpa("False").dims)
    args = json.dumps(_sdpa("False").concrete)
    c = flops.count("_scaled_dot_product_flash_attention", bhld, None, args)
    assert c.flops == FULL and "not causal" in c.formula
    c = flops.count("FlashAttnFunc", json.dumps([[2, 1024, 16, 64]] * 3), None)
    assert c.flops == FULL and "not recorded" in c.formula
    # causal with a shorter query (decoding against a cache): which half is masked depends on
    # the alignment, so no count
    short = _sdpa("True", lq=1, lk=1024)
    c = flops.count(short.name, json.dumps(short.dims), None, json.dumps(short.concrete))
    assert c.flops is None and "query length" in c.formula


def test_per_call_mean_and_median_beside_the_aggregate(tmp_path: Path) -> None:
    """Two calls of one shape, 10 µs and 30 µs: TraceLens's mean of per-call rates weighs the
    fast call as much as the slow one; the aggregate is all FLOPs over all time."""
    dims = [[1024, 1024], [1024, 1024]]
    calls = [Call("aten::mm", dims, ["", ""], TC_GEMM, kernel_us=us) for us in (10.0, 30.0)]
    (o,) = (o for o in _trace(tmp_path, calls).ops if o.name == "aten::mm")
    f = 2 * 1024**3
    assert o.calls == 2 and o.flops == 2 * f and o.gpu_ns == 40 * US
    assert o.tflops == pytest.approx(2 * f / (40 * US) / 1e3)
    assert o.mean_tflops == pytest.approx((f / (10 * US) + f / (30 * US)) / 2 / 1e3)
    assert o.median_tflops == o.mean_tflops  # two calls: the median is their mean


def test_memsets_are_kept_apart_from_kernel_time(tmp_path: Path) -> None:
    """TraceLens counts the memsets an op launches in its kernel time; tcreport keeps them in
    ``memset_ns``, so TraceLens's per-call rate is FLOPs / (gpu_ns + memset_ns)."""
    call = Call("aten::mm", [[512, 512], [512, 512]], ["", ""], TC_GEMM, 8.0, memset_us=2.0)
    (o,) = (o for o in _trace(tmp_path, [call]).ops if o.name == "aten::mm")
    assert o.gpu_ns == 8 * US and o.memset_ns == 2 * US
    assert o.flops is not None and o.mean_tflops is not None
    assert o.mean_tflops == pytest.approx(o.flops / (8 * US) / 1e3)
    tracelens_rate = o.flops / (o.gpu_ns + o.memset_ns) / 1e3
    assert tracelens_rate == pytest.approx(o.mean_tflops * 8 / 10)


def test_aggregated_rows_have_no_per_call_rates() -> None:
    """An op row aggregating five calls (DLProf) gives no call's time: no mean or median, never
    the aggregate passed off as one."""
    run = synthetic_rows_run(
        kernels=[kernel_row("volta_sgemm_128x64_nn", "op1", 0, 50 * US)],
        ops=[{**op_row("op1", "mm", "float32", 50 * US, "[[64,64],[64,64]]"), "calls": 5}],
    )
    t = throughput.compute(run, 100 * US, None, 1, "Tensor Cores")
    assert t is not None
    (o,) = t.ops
    assert o.flops == 5 * 2 * 64**3 and o.tflops is not None
    assert o.mean_tflops is None and o.median_tflops is None


def test_roofline_words_are_the_runs_matrix_units(tmp_path: Path) -> None:
    """On an AMD GPU the legend says "AMD Matrix Cores" (the device table gives the MI300X's
    5.3 TB/s, so its roofline is drawn); a GPU without a bandwidth in the table gets a note, not a
    chart."""
    view = _report(tmp_path, [CUDNN], gpu="AMD Instinct MI300X")
    t = view.analysis.throughput
    assert t is not None and t.roofline is not None
    assert t.roofline.matrix_unit == view.analysis.verdict.words.unit == "AMD Matrix Cores"
    assert t.roofline.memory_gbs == 5300.0 and len(t.roofline.points) == 1
    # the chart's legend and column head in the run's words, none of them NVIDIA's
    chart = html.render(view).split('<section id="roofline"', 1)[1].split("</section>", 1)[0]
    assert t.roofline.use_words(t.roofline.points[0].matrix_units) in chart
    assert '<th scope="col">AMD Matrix Cores</th>' in chart and "Tensor Core" not in chart
    t = _trace(tmp_path, [CUDNN], gpu="NVIDIA A100-PG509-200")  # A100, memory not named
    assert t.roofline is not None and t.roofline.gpu_model == "A100"
    assert t.roofline.points == () and "bandwidth" in (t.roofline.note or "")
