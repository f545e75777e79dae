"""Where the test inputs are: the bundled samples and the real traces beside the checkout.

Test modules import these names from here (``from trace_paths import REALTRACES``), never from
``conftest`` or from each other, so every module is imported once.
"""

from __future__ import annotations

import functools
import importlib
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: CI clones the repo with shared/ beside it; developers have it at ../shared as well.
REALTRACES = Path(os.environ.get("TCREPORT_REALTRACES", ROOT.parent / "shared" / "realtraces"))
SAMPLES = ROOT / "sample_traces"
#: realtraces folder -> the bundled copy of the same trace (byte for byte; tests/ingest/test_nsys_sqlite.py
#: checks the nsys one when both are present). Without ../shared (a fresh clone, or
#: TCREPORT_REALTRACES=/nonexistent) the cases of these two traces read the bundled copies, so
#: only tests that need the other real traces skip.
BUNDLED = {
    "nsys/h100x2-bf16-fastvideo": SAMPLES / "nsys-h100x2-bf16",
    "kineto/a100-tf32-alexnet": SAMPLES / "kineto-a100-tf32-alexnet",
}


#: The two single-trace samples the batch tests count on (an A100 Kineto run and a 2-rank nsys
#: job). ``sample_traces/h200-torch-cnn-ncu/`` is a folder of several runs and ncu CSVs for the
#: counter tests, so a batch of all of ``sample_traces/`` has many more runs.
BATCH_SAMPLES = (SAMPLES / "kineto-a100-tf32-alexnet", SAMPLES / "nsys-h100x2-bf16")
H200_NCU = SAMPLES / "h200-torch-cnn-ncu"


def batch_samples(dest: Path) -> Path:
    """A folder holding copies of :data:`BATCH_SAMPLES` (batch does not follow links out of its
    folder), for tests whose figures are those two runs'."""
    for folder in BATCH_SAMPLES:
        shutil.copytree(folder, dest / folder.name)
    return dest


def real_or_bundled(rel: str) -> Path:
    """``REALTRACES / rel``, or its bundled copy in ``sample_traces/`` when ``../shared`` is absent
    (a path with no bundled copy is returned as is, for the caller to skip on)."""
    real = REALTRACES / rel
    if real.exists():
        return real
    for folder, sample in BUNDLED.items():
        if rel == folder or rel.startswith(folder + "/"):
            return sample / rel[len(folder) :].lstrip("/")
    return real


DLPROF_CNN = REALTRACES / "dlprof" / "v1.8-pytorch-cnn"
NSYS_H100_REAL = REALTRACES / "nsys" / "h100x2-bf16-fastvideo" / "mfu_2gpu_after.sqlite"
NSYS_H100 = real_or_bundled("nsys/h100x2-bf16-fastvideo/mfu_2gpu_after.sqlite")
NSYS_WIN2022 = REALTRACES / "nsys" / "v2022.1-windows-synthetic" / "con_kernel.sqlite"


#: Why a case that reads a TensorFlow profile skips: its reader needs the [tf] extra.
NO_TF = "needs the [tf] extra (xprof) to read TensorFlow profiles"


@functools.cache
def have_tf_reader() -> bool:
    """Whether the xplane reader can run here (``pip install -e '.[tf]'``): without it a real
    TensorFlow trace is an input tcreport refuses, and the cases reading one skip."""
    try:
        importlib.import_module("xprof")
    except ImportError:
        return False
    return True


def reads_tf(path: Path) -> bool:
    """Whether reading ``path`` (a file or a folder of traces) needs the TensorFlow reader."""
    return path.suffix == ".pb" or "tf_profiler" in path.parts or path.name == "tf_profiler"


def need(path: Path) -> Path:
    """``path``, or a skip of the calling test when that real trace is not beside the checkout."""
    if not path.exists():
        pytest.skip(f"real trace not available: {path}")
    return path


def rtx2070_renamed_synthetic(tmp_path: Path, name: str | None) -> Path:
    """The real RTX 2070 SUPER Nsight Systems export (compute capability 7.5) with its GPU's name
    taken out (``None``) or replaced: how traces of unnamed or unknown Turing parts come
    (``*synthetic*``: no real trace lacks the name)."""
    out = tmp_path / "rtx2070_renamed_synthetic.sqlite"
    shutil.copyfile(need(DLPROF_CNN / "nsys_profile.sqlite"), out)
    with sqlite3.connect(out) as db:
        db.execute("UPDATE TARGET_INFO_GPU SET name = ?", (name,))
    return out
