"""Hostile tests of what landed on main after 625a97d (hostile16).

* the GPU identity change: an unnamed GPU is headed by its recorded compute capability's
  generation, and the diff compares capability generations before kernel names';
* figures15: eligible GPU time not on Tensor Cores is one figure under one name everywhere.

Real traces first: the RTX 2070 SUPER Nsight Systems export (its GPU table dropped: the same run,
unnamed, ``*synthetic*``) and the real V100 ResNet-50 Kineto trace (six iterations).
"""

from __future__ import annotations

import re
import shutil
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from trace_paths import DLPROF_CNN, REALTRACES, need

from tcreport import api, fmt
from tcreport.analysis import gpu_arch
from tcreport.compare import diff
from tcreport.model import Gpu

# -- 1. the same GPU, named on one side and not on the other, stays comparable -----------------


def _nsys_unnamed(tmp_path: Path) -> Path:
    """The real RTX 2070 SUPER export without its GPU table (``*synthetic*``): the same run, its
    GPU known only by the ``volta_`` kernels cuBLAS/cuDNN ran on the Turing part."""
    out = tmp_path / "rtx2070_no_gpu_table_synthetic.sqlite"
    shutil.copyfile(need(DLPROF_CNN / "nsys_profile.sqlite"), out)
    with sqlite3.connect(out) as db:
        db.execute("DROP TABLE TARGET_INFO_GPU")
    return out


@pytest.mark.realtraces
def test_named_and_unnamed_export_of_one_run_stay_comparable_synthetic(tmp_path: Path) -> None:
    """The named side's generation is its capability's (Turing), the unnamed side's the one its
    kernel names were built for (Volta): a lower bound, since Volta kernels run on a Turing GPU.
    The diff refused the same run as "different GPU generation (Turing ... vs Volta ...)"."""
    named = api.analyze(api.load(need(DLPROF_CNN / "nsys_profile.sqlite")))
    unnamed = api.analyze(api.load(_nsys_unnamed(tmp_path)))
    for base, head in ((named, unnamed), (unnamed, named)):
        reasons = diff.comparability(base.analysis, head.analysis)
        assert not any("generation" in r for r in reasons), reasons


def _sides(base: tuple[str | None, str], head: tuple[str | None, str]) -> tuple[str, ...]:
    """comparability's reasons for the real export's analysis with its GPU and kernel names
    replaced on each side: (an unnamed GPU's compute capability or None, a kernel name)."""
    a = api.analyze(api.load(need(DLPROF_CNN / "nsys_profile.sqlite"))).analysis
    out = []
    for cc, kernel in (base, head):
        gpus = () if cc is None else (Gpu(device_id=0, compute_capability=cc),)
        side = replace(a, meta=replace(a.meta, gpus=gpus))
        side.__dict__["gpu"] = gpu_arch.identity(gpus, [kernel], False)  # its cached identity
        out.append(side)
    return diff.comparability(out[0], out[1])


@pytest.mark.realtraces
def test_kernels_newer_than_the_other_sides_capability_are_another_generation_synthetic() -> None:
    """Hopper kernels cannot run on a Turing GPU: that pair is still refused, each side's source
    named; Volta kernels beside a Turing capability are not."""
    reasons = _sides(("7.5", "volta_sgemm_128x64_nn"), (None, "sm90_xmma_gemm_bf16"))
    (gen,) = [r for r in reasons if "generation" in r]
    assert "Turing, inferred from compute capability" in gen
    assert "Hopper, inferred from kernel names" in gen
    assert not any("generation" in r for r in _sides(("7.5", "x"), (None, "volta_sgemm_128x64_nn")))
    both = _sides(("7.5", "x"), ("9.0", "x"))
    assert any("Turing vs Hopper, inferred from compute capability" in r for r in both), both


# -- 2. several unnamed GPUs: each device is named by its own capability ----------------------


def test_synthetic_each_unnamed_device_is_named_by_its_own_capability() -> None:
    """Two unnamed GPUs of different capabilities: the per-device list named every device by
    both ("0: Turing (compute capability 7.5); Ampere (compute capability 8.6) (sm 8.6); 1: ..."),
    its "; " the list's own separator."""
    gpus = (Gpu(device_id=0, compute_capability="8.6"), Gpu(device_id=1, compute_capability="7.5"))
    ident = gpu_arch.identity(gpus, [], False)
    text = fmt.gpus(gpus, per_device=True, unnamed=ident.unnamed_device)
    assert text == "0: Ampere (sm 8.6); 1: Turing (sm 7.5)", text


# -- 3. the batch index shows the card's figure under the card's name --------------------------

V100 = REALTRACES / "kineto" / "v100-legacy-resnet50" / "worker0.1623143089861.pt.trace.json.gz"


@pytest.mark.realtraces
def test_batch_index_shows_the_cards_missed_time_per_iteration(tmp_path: Path) -> None:
    """The V100 run's report card reads "66.7 ms / iteration"; the index's "eligible not on
    Tensor Cores (ms)" column showed the six iterations' total, 399.991, under the same name."""
    src = tmp_path / "in"
    src.mkdir()
    shutil.copyfile(need(V100), src / V100.name)
    out = tmp_path / "out"
    api.batch(src, out)
    page = (out / "index.html").read_text()
    card = api.analyze(api.load(need(V100))).analysis.verdict.miss_card.value
    assert card == "66.7 ms / iteration"
    assert "399.991" not in page
    assert re.search(r"eligible not on Tensor Cores \(ms / iteration\)", page)
    assert ">66.665<" in page
