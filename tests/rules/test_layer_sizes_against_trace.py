"""AU001 (the model audit's layer sizes) and TC003 (the trace's recorded shapes) on the real H200
CNN captures of ``sample_traces/h200-torch-cnn-ncu``: one padding rule, and where the trace has
calls of a layer's sizes, AU001 says what they did (the ncu counters of the same program agree:
its GEMMs ran on Tensor Cores, the 3-channel convolution's calls did not)."""

from __future__ import annotations

from functools import cache

from trace_paths import H200_NCU

from tcreport import api
from tcreport.analysis.shapes import Problem, layer_problem, same_sizes, unaligned
from tcreport.report import Report
from tcreport.rules.base import Finding


@cache
def _findings(variant: str) -> dict[str, Finding]:
    view: Report = api.analyze(api.load(H200_NCU / variant))
    return {f.id: f for f in view.findings}


def test_fp16_first_convolution_is_padded_alike_by_au001_and_tc003() -> None:
    f = _findings("cnn_fp16")
    assert "pad C 3 → 8, K 30 → 32" in f["TC003"].detail
    assert "Sequential.0 (torch_cnn.py:39): in_channels 3 → 8, out_channels 30 → 32" in (
        f["AU001"].detail
    )


def test_fp16_linear_layers_are_not_said_to_fall_back_where_the_trace_shows_no_miss() -> None:
    detail = _findings("cnn_fp16")["AU001"].detail
    assert (
        "In this trace, calls with the sizes of Sequential.0 (torch_cnn.py:39) missed Tensor "
        "Cores (TC003 measures them)." in detail
    )
    assert (
        "No call with the sizes of Sequential.2 (torch_cnn.py:41); Sequential.6 "
        "(torch_cnn.py:45); Sequential.8 (torch_cnn.py:47) missed Tensor Cores in this trace"
        in detail
    )
    assert "expected on a GPU" not in detail


def test_bf16_fixed_model_keeps_only_the_first_convolution_in_both_rules() -> None:
    f = _findings("cnn_bf16fixed")
    assert "pad C 3 → 8." in f["TC003"].detail
    assert f["AU001"].title == "1 layer with sizes not multiples of 8 for bfloat16"
    assert "Sequential.0 (torch_cnn.py:39): in_channels 3 → 8." in f["AU001"].detail


def test_layer_sizes_map_onto_the_recorded_problem_dims() -> None:
    """nn.Linear(30, 333) is the GEMM N 333, K 30 of any batch; Conv2d(3, 30) is conv C 3, K 30."""
    linear = layer_problem("Linear", (("in_features", 30), ("out_features", 333)))
    assert linear is not None
    assert same_sizes(linear, Problem("gemm", (("M", 256), ("N", 333), ("K", 30)), None))
    assert not same_sizes(linear, Problem("gemm", (("M", 256), ("N", 30), ("K", 333)), None))
    conv = layer_problem("Conv2d", (("in_channels", 3), ("out_channels", 30)))
    assert conv is not None and not same_sizes(conv, Problem("gemm", (("K", 30),), None))
    assert unaligned((("C", 3), ("K", 32)), "fp16") == (("C", 3, 8),)
    assert unaligned((("C", 3),), "fp32") == ()  # no Tensor Core alignment rule for plain fp32
