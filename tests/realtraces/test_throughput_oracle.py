"""tcreport's per-(op, shape) throughput against TraceLens's own perf report of the same real trace.

``../shared/realtraces/kineto/h100-bf16-bert-small/tracelens-oracle/`` holds TraceLens's GEMM and
SDPA tables for the H100 BERT trace, made with its ``gpu_arch_h100.json`` (989.4 dense bf16
TFLOP/s, 3,350 GB/s). FLOPs, bytes moved, FLOPs per byte and the compute/memory verdict must be
equal; the rates are defined differently (docs/report.md, "Throughput against TraceLens") and the
tests check each definition reproduces the other tool's figure from the same calls.
"""

from __future__ import annotations

import csv
import json

import pytest
from trace_paths import REALTRACES, need

from tcreport import api
from tcreport.analysis import peaks, result
from tcreport.analysis.op_throughput import Bound, MatrixUse, OpThroughput
from tcreport.analysis.throughput import Throughput

BERT = REALTRACES / "kineto" / "h100-bf16-bert-small"
MB = 1 << 20  # TraceLens's "Data Moved (MB)" is MiB


def _oracle(name: str) -> list[dict[str, str]]:
    with (need(BERT / "tracelens-oracle") / name).open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _dims(text: str) -> str:
    """TraceLens's ``Input Dims`` as tcreport keeps them (compact JSON)."""
    return json.dumps(json.loads(text), separators=(",", ":"))


@pytest.fixture(scope="module")
def bert() -> Throughput:
    a = result.compute(api.load(next(need(BERT).glob("*.json.gz"))))
    assert a.throughput is not None
    return a.throughput


def test_same_peaks_as_tracelens_arch_file() -> None:
    arch = json.loads((need(BERT / "tracelens-oracle") / "gpu_arch_h100.json").read_text())
    h100 = peaks.for_gpu("NVIDIA H100 80GB HBM3")
    assert h100 is not None and h100.model == "H100 SXM5"
    assert h100.memory_gbs == arch["mem_bw_gbps"] == 3350
    assert h100.peak("bf16") == arch["max_achievable_tflops"]["matrix_bf16"] == 989.4


def _check_static(o: OpThroughput, row: dict[str, str]) -> None:
    """FLOPs, bytes, FLOPs/byte, the verdict and the call count: equal to TraceLens's."""
    calls = int(row["name_count"])
    assert o.calls == calls
    assert o.flops is not None and o.bytes is not None
    assert o.flops == calls * round(float(row["GFLOPS_first"]) * 1e9)
    assert o.bytes == calls * round(float(row["Data Moved (MB)_first"]) * MB)
    assert o.intensity == pytest.approx(float(row["FLOPS/Byte_first"]), rel=1e-12)
    assert (
        o.bound
        == {"MEMORY_BOUND": Bound.MEMORY, "COMPUTE_BOUND": Bound.COMPUTE}[
            row["Roofline Bound_first"]
        ]
    )
    # the roofline time of one call: the larger of FLOPs / peak and bytes / bandwidth
    per_call_us = max(o.flops / 989.4e12, o.bytes / 3350e9) / calls * 1e6
    assert per_call_us == pytest.approx(float(row["Roofline Time (µs)_first"]), rel=1e-12)
    assert o.matrix_units is MatrixUse.YES  # wmma / xmma / flash kernels: Tensor Cores


def _check_rates(o: OpThroughput, row: dict[str, str]) -> None:
    """The documented difference of definitions, reproduced both ways from the same calls.

    TraceLens: per call, FLOPs over that call's kernel time (memsets it launched included), then
    the mean and median over calls. tcreport's headline: all FLOPs over all kernel time. This
    trace launches no memset in these ops, so the kernel times are the same times."""
    assert o.memset_ns == 0
    kernel_sum_ns = float(row["Kernel Time (µs)_sum"]) * 1e3  # TraceLens's µs floats: ~0.1 ns off
    assert o.gpu_ns == pytest.approx(kernel_sum_ns, abs=1.0)
    assert o.mean_tflops == pytest.approx(float(row["TFLOPS/s_mean"]), rel=1e-4)
    assert o.median_tflops == pytest.approx(float(row["TFLOPS/s_median"]), rel=1e-4)
    assert o.flops is not None and o.tflops is not None and o.mean_tflops is not None
    assert o.tflops == pytest.approx(o.flops / kernel_sum_ns / 1e3, rel=1e-5)
    # one shape, so every call does the same FLOPs: the mean of per-call rates is never below the
    # aggregate (Jensen), equal only when every call took the same time
    assert o.mean_tflops >= o.tflops * (1 - 1e-9)
    # TraceLens's "Pct Roofline" is per call, then averaged; tcreport's share is the aggregate's
    roofline_us = float(row["Roofline Time (µs)_first"])
    mean_us = float(row["Kernel Time (µs)_mean"])
    assert o.roofline_share == pytest.approx(roofline_us / mean_us, rel=1e-4)


def test_gemm_shapes_equal_tracelens(bert: Throughput) -> None:
    ours = {(o.name, o.input_shapes): o for o in bert.ops}
    rows = _oracle("GEMM.csv")
    assert len(rows) == 4
    for row in rows:
        o = ours[(row["name"], _dims(row["Input Dims_first"]))]
        _check_static(o, row)
        _check_rates(o, row)
        assert "bias" in o.formula  # addmm's bias add, counted as TraceLens counts it


def test_attention_equals_tracelens(bert: Throughput) -> None:
    """TraceLens names the SDPA op (``_scaled_dot_product_flash_attention``, [B, H, L, D]);
    tcreport counts the op that owns the kernels, its child ``_flash_attention_forward``
    ([B, L, H, D]): the same calls, kernels and figures."""
    (row,) = _oracle("SDPA_fwd.csv")
    assert row["param: causal"] == "False"
    o = next(o for o in bert.ops if o.name == "aten::_flash_attention_forward")
    assert json.loads(row["Input Dims_first"])[0] == [1, 8, 141, 64]
    assert o.input_shapes is not None and json.loads(o.input_shapes)[0] == [1, 141, 8, 64]
    _check_static(o, row)
    _check_rates(o, row)
    assert "not causal" in o.formula  # is_causal recorded False: no halving


def test_roofline_places_every_gemm_and_attention_shape(bert: Throughput) -> None:
    r = bert.roofline
    assert r is not None and r.matrix_unit == "Tensor Cores"
    assert r.memory_gbs == 3350 and [(f.precision, f.peak_tflops) for f in r.roofs] == [
        ("bf16", 989.4)
    ]
    assert r.roofs[0].ridge == pytest.approx(989.4e12 / 3350e9)
    assert len(r.points) == 5 and r.left_out == () and r.note is None
    assert r.drawn_gpu_ns == bert.heavy_gpu_ns  # every heavy op's time is on the chart
    assert all(p.bound is Bound.MEMORY for p in r.points)  # BERT-small at 141 tokens
