"""CV003 on real traces: cuDNN's NCHW <-> NHWC transposes, measured from their kernels.

HTA's A100 DDP trace (a PyTorch model in the default channels-first format) spends 9.3 % of its
GPU kernel time in cuDNN's ``nchwToNhwcKernel`` / ``nhwcToNchwKernel``; the other real traces
either have no convolutions or convert too little to say so.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from trace_paths import REALTRACES, need

from tcreport import api
from tcreport.rules import Finding

DDP = REALTRACES / "kineto" / "a100-ddp-nccl-3step" / "nccl_data.json.gz"
ALEXNET = REALTRACES / "kineto" / "a100-tf32-alexnet"


def _cv003(path: Path) -> list[Finding]:
    view = api.analyze(api.load(need(path)), api.Slice())
    return [f for f in view.findings if f.id == "CV003"]


def test_a100_ddp_trace_converts_layouts() -> None:
    (f,) = _cv003(DDP)
    assert f.title == "cuDNN layout conversions (NCHW ↔ NHWC) take 9.3% of GPU time"
    assert all("ToN" in e.key for e in f.evidence)


@pytest.mark.parametrize("path", [ALEXNET], ids=["a100-tf32-alexnet"])
def test_silent_where_little_is_converted(path: Path) -> None:
    assert _cv003(path) == []
