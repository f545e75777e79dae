"""Shared test fixtures: where the real traces live, and a scratch copy helper."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: CI clones the repo with shared/ beside it; developers have it at ../shared as well.
REALTRACES = Path(os.environ.get("TCREPORT_REALTRACES", ROOT.parent / "shared" / "realtraces"))
SAMPLES = ROOT / "sample_traces"
DLPROF_CNN = REALTRACES / "dlprof" / "v1.8-pytorch-cnn"
NSYS_H100 = REALTRACES / "nsys" / "h100x2-bf16-fastvideo" / "mfu_2gpu_after.sqlite"
NSYS_WIN2022 = REALTRACES / "nsys" / "v2022.1-windows-synthetic" / "con_kernel.sqlite"


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"real trace not available: {path}")
    return path


@pytest.fixture
def dlprof_cnn() -> Path:
    return _need(DLPROF_CNN)


@pytest.fixture
def nsys_h100() -> Path:
    return _need(NSYS_H100)


@pytest.fixture
def nsys_win2022() -> Path:
    return _need(NSYS_WIN2022)
