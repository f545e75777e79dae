"""Where the test inputs are: the bundled samples and the real traces beside the checkout.

Test modules import these names from here (``from trace_paths import REALTRACES``), never from
``conftest`` or from each other, so every module is imported once.
"""

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


def need(path: Path) -> Path:
    """``path``, or a skip of the calling test when that real trace is not beside the checkout."""
    if not path.exists():
        pytest.skip(f"real trace not available: {path}")
    return path
