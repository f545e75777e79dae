"""Compute capability 7.5 does not say whether a GPU has Tensor Cores.

Every Turing GPU reports 7.5: the RTX 20 series, the T4 and Quadro RTX have Tensor Cores; the
TU116/TU117 parts (GeForce GTX 16 series, GeForce MX450/MX550, NVIDIA T400-T2000) have none. A GPU
known only by 7.5 was taken for one with Tensor Cores. The real RTX 2070 SUPER Nsight Systems export
(which records the name, 7.5 and the chip) is read here with its GPU name taken out or replaced
(``*synthetic*``: no real trace lacks the name), the way traces of such GPUs come.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trace_paths import DLPROF_CNN, need, rtx2070_renamed_synthetic

from tcreport import api
from tcreport.analysis import device_table as dt
from tcreport.analysis import gpu_arch, peaks
from tcreport.model import Gpu, gpu_vendor

UNLESS = "Tensor Cores unless this is a GeForce GTX 16-series"


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA T1000",
        "NVIDIA T1000 8GB",
        "NVIDIA T600",
        "NVIDIA T400 4GB",
        "Quadro T2000",
        "Quadro T2000 with Max-Q Design",
        "Quadro T1000",
        "NVIDIA T1200 Laptop GPU",
        "NVIDIA T600 Laptop GPU",
        "NVIDIA GeForce MX450",
        "NVIDIA GeForce MX550",
    ],
)
def test_tu117_workstation_and_mx_parts_are_turing_without_tensor_cores(name: str) -> None:
    gpu = Gpu(device_id=0, name=name, vendor=gpu_vendor(name))
    facts = dt.describe(gpu)
    assert (facts.architecture, facts.compute_capability) == ("Turing", "7.5")
    assert facts.has_matrix_units is False and facts.matrix_unit_words == dt.NONE
    assert gpu_arch.has_matrix_units([gpu]) is False
    assert gpu_arch.matrix_units_caveat([gpu]) is None  # known: no doubt to state
    assert peaks.for_gpu(name) is None  # no T4's or RTX's peaks


@pytest.mark.parametrize("name", ["NVIDIA Jetson T4000", "NVIDIA T4000", "NVIDIA GeForce MX570"])
def test_synthetic_neighbouring_names_are_not_taken_for_tu117_parts(name: str) -> None:
    facts = dt.describe(Gpu(device_id=0, name=name))
    assert facts.model is None and facts.has_matrix_units is None


@pytest.mark.parametrize("name", [None, "NVIDIA Graphics Device"])
def test_synthetic_capability_7_5_alone_is_tensor_cores_unless_a_tu116_tu117_part(
    name: str | None,
) -> None:
    gpu = Gpu(device_id=0, name=name, compute_capability="7.5")
    facts = dt.describe(gpu)
    assert (facts.architecture, facts.compute_capability) == ("Turing", "7.5")
    assert facts.has_matrix_units is None  # neither a confident yes nor a no
    assert gpu_arch.has_matrix_units([gpu]) is None
    assert facts.matrix_unit_words is not None and facts.matrix_unit_words.startswith(UNLESS)
    caveat = gpu_arch.matrix_units_caveat([gpu])
    assert caveat is not None and caveat.startswith("GPU 0: compute capability 7.5 (Turing)")
    assert UNLESS in caveat and "MX450/MX550" in caveat and "T400-T2000" in caveat
    # what Tensor Cores there may be are Turing's: a Triton bf16 dot is still not one of them
    assert "bf16" not in facts.matrix_precisions and "fp16" in facts.matrix_precisions
    assert peaks.for_gpu(name) is None
    # other capabilities keep their one answer
    assert gpu_arch.has_matrix_units([Gpu(0, None, "8.6")]) is True
    assert gpu_arch.has_matrix_units([Gpu(0, None, "6.1")]) is False
    assert gpu_arch.matrix_units_caveat([Gpu(0, None, "7.0")]) is None


@pytest.mark.realtraces
@pytest.mark.parametrize("name", [None, "NVIDIA Graphics Device"])
def test_real_turing_export_without_a_known_name_is_not_a_confident_yes_synthetic(
    tmp_path: Path, name: str | None
) -> None:
    view = api.analyze(api.load(rtx2070_renamed_synthetic(tmp_path, name)))
    (gpu,) = view.analysis.meta.gpus
    assert (gpu.name, gpu.compute_capability) == (name, "7.5")
    caveat = view.analysis.verdict.matrix_units_caveat
    assert caveat is not None and UNLESS in caveat
    assert not view.analysis.verdict.no_matrix_units  # not a "no" either: TC005 stays silent
    ids = [f.id for f in view.findings]
    assert "TC006" in ids and "TC005" not in ids
    assert view.fix_first is None or view.fix_first.id != "TC006"
    assert view.analysis.throughput is None or view.analysis.throughput.gpu is None
    summary = json.loads(api.render_json(view))
    (tc006,) = [f for f in summary["findings"] if f["id"] == "TC006"]
    assert caveat in tc006["detail"]
    for text in (api.render_markdown(view), api.render_html(view)):
        assert "TC006" in text and "Tensor Cores unless this is a GeForce GTX 16-series" in text


@pytest.mark.realtraces
@pytest.mark.parametrize(
    "name", ["NVIDIA GeForce GTX 1650", "NVIDIA T1000", "NVIDIA GeForce MX450"]
)
def test_real_turing_export_named_as_a_tu117_part_has_no_tensor_cores_synthetic(
    tmp_path: Path, name: str
) -> None:
    view = api.analyze(api.load(rtx2070_renamed_synthetic(tmp_path, name)))
    ids = [f.id for f in view.findings]
    assert "TC005" in ids and "TC006" not in ids and "TC001" not in ids
    assert view.analysis.verdict.matrix_units_caveat is None


@pytest.mark.realtraces
def test_real_rtx_2070_super_export_keeps_its_tensor_cores_without_a_caveat() -> None:
    view = api.analyze(api.load(need(DLPROF_CNN / "nsys_profile.sqlite")))
    assert view.analysis.verdict.matrix_units_caveat is None
    assert not {"TC005", "TC006"} & {f.id for f in view.findings}


@pytest.mark.realtraces
def test_real_turing_export_without_a_name_is_headed_turing_not_volta_synthetic(
    tmp_path: Path,
) -> None:
    """The export records 7.5 but (here) no name, and runs cuBLAS's ``volta_`` kernels (built for
    7.0, run on Turing too): the heading names the generation of the recorded capability, as
    TC006 does, not "Volta (inferred from kernel names)"; the diff compares that generation."""
    from tcreport.compare import diff

    view = api.analyze(api.load(rtx2070_renamed_synthetic(tmp_path, None)))
    gpu = view.analysis.gpu
    assert gpu.generation == "Volta"  # what the kernel names alone say
    assert gpu.label == "Turing (compute capability 7.5)" == view.analysis.gpu_names()
    assert gpu.best_generation == "Turing"
    md, page = api.render_markdown(view), api.render_html(view)
    assert "Turing (compute capability 7.5)" in md and "Volta (inferred" not in md
    # per device the capability stands beside the generation once
    assert "<dd>Turing, compute capability 7.5" in page and "Volta (inferred" not in page
    named = api.analyze(api.load(need(DLPROF_CNN / "nsys_profile.sqlite")))
    d = diff.diff(named, view, force=True)
    assert "head GPU not recorded: Turing inferred from compute capability" in d.notes
    assert named.analysis.gpu.best_generation == "Turing"  # the model's 7.5, not its kernels'
    assert not any("GPU" in r for r in diff.comparability(named.analysis, view.analysis))
