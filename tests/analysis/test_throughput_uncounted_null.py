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
