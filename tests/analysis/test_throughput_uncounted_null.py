"""No op's FLOPs counted: the achieved TFLOP/s is unknown (JSON ``null``), never 0.0.

The A100 DDP trace was recorded without shapes, so no GEMM or convolution has a FLOP count; its
summary JSON said ``"achieved_tflops": 0.0`` beside ``"flops": 0`` and an MFU note saying why
there is none. SUMMARY-JSON.md: a figure the input cannot give is ``null``, never 0.
"""

from __future__ import annotations

import json

import pytest
from trace_paths import NSYS_H100, REALTRACES, need

from tcreport import api

DDP = REALTRACES / "kineto" / "a100-ddp-nccl-3step" / "nccl_data.json.gz"


@pytest.mark.realtraces
@pytest.mark.parametrize("path", [DDP, NSYS_H100], ids=["a100-ddp", "h100x2-nsys"])
def test_real_uncounted_run_has_null_achieved_tflops(path: object) -> None:
    from pathlib import Path

    assert isinstance(path, Path)
    view = api.analyze(api.load(need(path)))
    t = view.analysis.throughput
    assert t is not None and t.flops == 0 and t.counted_gpu_ns == 0
    assert t.tflops is None and t.mfu is None
    summary = json.loads(api.render_json(view))
    assert summary["throughput"]["achieved_tflops"] is None


def test_counted_run_keeps_its_achieved_tflops() -> None:
    from tcreport.analysis.throughput import Throughput

    t = Throughput(
        gpu=None, ops=(), flops=2_000_000_000, counted_gpu_ns=1_000, heavy_gpu_ns=1_000,
        missing=(), precision="bf16", wall_ns=1_000_000, gpus=1, iterations=(), mfu_note=None,
    )  # fmt: skip
    assert t.tflops == pytest.approx(2.0)


MI250 = REALTRACES / "kineto" / "mi250-rocm-minitoy" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"


@pytest.mark.realtraces
def test_real_iteration_without_counted_flops_is_listed_as_not_measured() -> None:
    """The MI250 run's second iteration has no op with a FLOP count: it is listed with a null
    count and rate (it was left out, and one in the middle of a run read 0 FLOPs, 0.0 TFLOP/s)."""
    view = api.analyze(api.load(need(MI250)))
    t = view.analysis.throughput
    assert t is not None and t.flops > 0
    first, second = t.iterations
    assert first.flops == t.flops and (first.tflops() or 0) > 0
    assert second.flops is None and second.tflops() is None and t.iteration_mfu(second) is None
    its = json.loads(api.render_json(view))["throughput"]["iterations"]
    assert [(i["iteration"], i["flops"], i["achieved_tflops"]) for i in its][1] == (1, None, None)


def test_iteration_rate_is_null_only_where_not_measured() -> None:
    from tcreport.analysis.throughput import IterationThroughput

    assert IterationThroughput(3, 1_000, None).tflops() is None
    assert IterationThroughput(3, 1_000, 0).tflops() == 0.0  # counted, and zero: a measurement
    assert IterationThroughput(3, 1_000, 2_000_000).tflops() == pytest.approx(2.0)
