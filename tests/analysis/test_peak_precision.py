"""A % of peak is against the peak of the precision each call ran at, and one above 100 % is never
shown bare; the precision mix counts each call under its own data type.

The real case is the H200 ``mix.py`` trace (``sample_traces/h200-torch-cnn-ncu``): the same
2048³ ``aten::mm`` runs in float32 with TF32 off (a CUTLASS SIMT kernel), float32 with TF32 on (an
``sm90_xmma`` tf32 kernel), float16 and bfloat16. Grouped on the first call's precision, the two
float32 calls were one "fp32" row at 131.8 % of the CUDA-core peak, and the float16 and
bfloat16 calls one "fp16" row; the precision mix put all five calls under float32.
"""

from __future__ import annotations

from functools import cache

import pytest
from synthetic import HOSTILE, US, kernel_row, op_row, synthetic_rows_run
from trace_paths import H200_NCU, REALTRACES, need

from tcreport import api
from tcreport.analysis import invariants
from tcreport.analysis.op_throughput import MatrixUse, OpThroughput, PeakExcess
from tcreport.analysis.violation import Invariant
from tcreport.model import Gpu
from tcreport.report import Report

MIX = H200_NCU / "mix" / "kineto_mix_h.json.gz"
V100 = REALTRACES / "kineto" / "v100-legacy-resnet50" / "worker0.1623143089861.pt.trace.json.gz"
SQUARE = "[[2048,2048],[2048,2048]]"


@cache
def _mix() -> Report:
    return api.analyze(api.load(MIX))


def _kernel_ns(view: Report, prefix: str) -> int:
    (k,) = (k for k in view.analysis.breakdown.kernels if k.name.startswith(prefix))
    return k.gpu_ns


def test_float32_calls_on_tensor_cores_are_a_tf32_row_against_the_tf32_peak() -> None:
    view = _mix()
    t = view.analysis.throughput
    assert t is not None and t.gpu is not None
    mm = {o.precision: o for o in t.ops if o.name == "aten::mm" and o.input_shapes == SQUARE}
    assert set(mm) == {"fp32", "tf32", "fp16", "bf16"}
    fp32, tf32 = mm["fp32"], mm["tf32"]
    # each row is one call, timed by its own kernel (the kernel table's figure)
    assert (fp32.calls, fp32.matrix_units) == (1, MatrixUse.NO)
    assert fp32.gpu_ns == _kernel_ns(view, "void cutlass::Kernel2<cutlass_80_simt_sgemm")
    assert (tf32.calls, tf32.matrix_units) == (1, MatrixUse.YES)
    assert tf32.gpu_ns == _kernel_ns(view, "sm90_xmma_gemm_f32f32_tf32f32")
    assert fp32.peak_tflops == t.gpu.peak("fp32") and tf32.peak_tflops == t.gpu.peak("tf32")
    assert fp32.peak_share is not None and 0.7 < fp32.peak_share < 0.8  # 75.1 %, not 131.8 %
    assert tf32.peak_share is not None and 0.7 < tf32.peak_share < 0.8  # 72.8 %
    assert mm["bf16"].gpu_ns == _kernel_ns(view, "nvjet_sm90_tst")  # bf16 apart from fp16
    assert mm["fp16"].gpu_ns == _kernel_ns(view, "nvjet_sm90_hsh")


def test_no_row_of_the_mix_trace_is_above_its_peak() -> None:
    view = _mix()
    t = view.analysis.throughput
    assert t is not None
    assert [o.name for o in t.ops if o.peak_share is not None and o.peak_share > 1] == []
    assert not view.analysis.violations
    assert "Above 100 % of peak" not in api.render_html(view)


def test_precision_mix_counts_each_call_under_its_own_data_type() -> None:
    a = _mix().analysis
    groups = {g.name: g for g in a.precision.groups}
    assert {"float32", "float16", "bfloat16", "float64"} <= set(groups)
    # the bf16 mm's matrix-unit kernel is bfloat16 time, the fp16 mm's and conv's float16 time
    assert groups["bfloat16"].tc_ns == _kernel_ns(_mix(), "nvjet_sm90_tst")
    assert groups["float16"].tc_ns == _kernel_ns(_mix(), "nvjet_sm90_hsh") + _kernel_ns(
        _mix(), "sm90_xmma_fprop_implicit_gemm_f16f16"
    )
    assert groups["float32"].tc_ns == _kernel_ns(_mix(), "sm90_xmma_gemm_f32f32_tf32f32")
    # split by data type, the mix still sums every op's GPU time once
    assert sum(g.gpu_ns for g in groups.values()) == sum(o.gpu_ns or 0 for o in a.breakdown.ops)
    assert a.precision.mode == "fp16 mixed"  # float16 has the most time (hostile11)


def _group(kind: str, precision: str, units: MatrixUse, tflops: float) -> OpThroughput:
    return OpThroughput(
        name="op", kind=kind, input_shapes=None, precision=precision, calls=1, gpu_ns=1000,
        flops=int(tflops * 1e3 * 1000), formula="", peak_tflops=100.0, matrix_units=units,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "precision", "units", "excess"),
    [
        ("conv", "fp32", MatrixUse.NO, PeakExcess.ALGORITHM),
        ("gemm", "fp32", MatrixUse.UNKNOWN, PeakExcess.UNKNOWN_TF32),
        ("gemm", "fp32", MatrixUse.NO, PeakExcess.IMPOSSIBLE),
        ("gemm", "bf16", MatrixUse.YES, PeakExcess.IMPOSSIBLE),
        ("attention", "tf32", MatrixUse.YES, PeakExcess.IMPOSSIBLE),
    ],
)
def test_a_share_above_the_peak_says_why(
    kind: str, precision: str, units: MatrixUse, excess: PeakExcess
) -> None:
    assert _group(kind, precision, units, 100.0).above_peak is None  # at the peak: no words
    above = _group(kind, precision, units, 101.0)
    assert above.peak_excess is excess and above.above_peak


def test_convolutions_above_the_peak_on_the_real_v100_trace_say_winograd() -> None:
    view = api.analyze(api.load(need(V100)))
    t = view.analysis.throughput
    assert t is not None
    above = [o for o in t.ops if o.peak_share is not None and o.peak_share > 1]
    assert above and {o.name for o in above} == {"aten::cudnn_convolution_backward_input"}
    assert {o.peak_excess for o in above} == {PeakExcess.ALGORITHM}
    page = api.render_html(view)
    assert "123.3 % *" in page
    assert "Above 100 % of peak (aten::cudnn_convolution_backward_input): the convolution" in page


def test_a_gemm_above_its_peak_breaks_an_invariant_synthetic(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 4096³ bf16 GEMM in 50 µs is 2,749 TFLOP/s on an H100 (989.4 dense): no algorithm or
    unknown verdict explains it, so the figure is named as broken, not shown as real."""
    gpu = (Gpu(device_id=0, name="NVIDIA H100 80GB HBM3", compute_capability="9.0"),)
    run = synthetic_rows_run(
        kernels=[kernel_row("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", "op1", 0, 50 * US)],
        ops=[op_row("op1", "mm", "bfloat16", 50 * US, "[[4096,4096],[4096,4096]]")],
        cc="9.0",
        gpus=gpu,
    )
    with pytest.raises(invariants.InvariantError, match="throughput-within-peak"):
        api.analyze(run)
    monkeypatch.setenv(invariants.STRICT_ENV, "")
    view = api.analyze(run)
    assert [v.invariant for v in view.analysis.violations] == [Invariant.WITHIN_PEAK]
    assert "check failed" in api.render_markdown(view)


def test_an_unknown_verdict_float32_gemm_above_the_fp32_peak_is_named_inertly_synthetic() -> None:
    """A 4096³ float32 GEMM in 1 ms (137 TFLOP/s) on an H100 by a kernel no rule knows: above
    the CUDA-core fp32 peak (67 TFLOP/s), likely TF32; said in words, no invariant broken, and the
    op's hostile name in the note is text."""
    gpu = (Gpu(device_id=0, name="NVIDIA H100 80GB HBM3", compute_capability="9.0"),)
    op = {**op_row("op1", "mm", "float32", 1000 * US, "[[4096,4096],[4096,4096]]"), "name": HOSTILE}
    run = synthetic_rows_run(
        kernels=[kernel_row("my_custom_gemm_kernel", "op1", 0, 1000 * US)],
        ops=[op],
        cc="9.0",
        gpus=gpu,
    )
    view = api.analyze(run)
    t = view.analysis.throughput
    assert t is not None
    (o,) = (o for o in t.ops if o.kind == "gemm")
    assert (o.precision, o.matrix_units) == ("fp32", MatrixUse.UNKNOWN)
    assert o.peak_excess is PeakExcess.UNKNOWN_TF32 and not view.analysis.violations
    page = api.render_html(view)
    assert "Above 100 % of peak (&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;): its" in page
    assert HOSTILE not in page
