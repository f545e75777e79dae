"""The device table: one sourced, dated file that says what each accelerator is.

The names below are the device names traces report (nvidia-smi / CUDA ``deviceProperties`` /
ROCm spellings); the expected facts are the vendors' own (each table row cites its document).
"""

from __future__ import annotations

import re

import pytest

from tcreport.analysis import device_table as dt
from tcreport.analysis import gpu_arch, peaks
from tcreport.model import Gpu, gpu_vendor


def _gpu(name: str, cc: str | None = None) -> Gpu:
    return Gpu(device_id=0, name=name, compute_capability=cc, vendor=gpu_vendor(name))


def test_the_table_is_dated_and_every_row_cites_a_vendor_document() -> None:
    t = dt.table()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", t.compiled)
    for source in [a.source for a in t.architectures] + [m.source for m in t.models]:
        assert len(source) > 40, source
    for m in t.models:
        assert m.vendor == m.architecture.vendor, m.model
        assert all(v > 0 for _, v in m.tflops), m.model
        assert m.memory_gbs is None or m.memory_gbs > 0
        if m.vendor == "nvidia":  # a model's capability belongs to its architecture
            assert m.compute_capability in m.architecture.compute_capabilities, m.model
            assert m.gfx is None
        else:
            assert m.compute_capability is None and m.gfx in m.architecture.gfx, m.model


def test_the_table_covers_every_generation_the_issue_names() -> None:
    names = {a.name for a in dt.table().architectures}
    nvidia = {"Kepler", "Maxwell", "Pascal", "Volta", "Turing", "Ampere", "Ada Lovelace"}
    amd = {"CDNA 1", "CDNA 2", "CDNA 3", "CDNA 4", "RDNA 3", "RDNA 4"}
    assert nvidia | {"Hopper", "Blackwell"} | amd <= names
    for arch in dt.table().architectures:
        has = arch.matrix_unit != dt.NONE
        assert has == bool(arch.matrix_precisions), arch.id
        if arch.name in {"Kepler", "Maxwell", "Pascal"}:
            assert not has


@pytest.mark.parametrize(
    ("name", "cc", "arch", "tensor_cores"),
    [
        ("NVIDIA GeForce RTX 2070 SUPER", 7.5, "Turing", True),
        ("GeForce RTX 2080 Ti", 7.5, "Turing", True),
        ("NVIDIA GeForce GTX 1660 Ti", 7.5, "Turing", False),  # TU116: Turing without TCs
        ("NVIDIA GeForce GTX 1060 6GB", 6.1, "Pascal", False),
        ("NVIDIA GeForce GTX 1080 Ti", 6.1, "Pascal", False),
        ("Tesla P100-PCIE-16GB", 6.0, "Pascal", False),
        ("Tesla K80", 3.7, "Kepler", False),
        ("Tesla V100-SXM2-32GB", 7.0, "Volta", True),
        ("Tesla T4", 7.5, "Turing", True),
        ("NVIDIA A100-SXM4-80GB", 8.0, "Ampere", True),
        ("NVIDIA GeForce RTX 3090", 8.6, "Ampere", True),
        ("NVIDIA A10G", 8.6, "Ampere", True),
        ("NVIDIA L4", 8.9, "Ada Lovelace", True),
        ("NVIDIA GeForce RTX 4090", 8.9, "Ada Lovelace", True),
        ("NVIDIA H100 80GB HBM3", 9.0, "Hopper", True),
        ("NVIDIA GH200 480GB", 9.0, "Hopper", True),
        ("NVIDIA B200", 10.0, "Blackwell", True),
        ("NVIDIA GeForce RTX 5090", 12.0, "Blackwell", True),
    ],
)
def test_nvidia_names_give_the_models_compute_capability(
    name: str, cc: float, arch: str, tensor_cores: bool
) -> None:
    gpu = _gpu(name)
    facts = dt.describe(gpu)
    assert gpu_arch.compute_capability(gpu) == cc
    assert facts.architecture == arch
    assert facts.has_matrix_units is tensor_cores
    assert gpu_arch.has_matrix_units([gpu]) is tensor_cores


def test_a_recorded_capability_beats_the_table_and_identifies_an_unnamed_gpu() -> None:
    assert gpu_arch.compute_capability(_gpu("NVIDIA GeForce RTX 2070 SUPER", "7.5")) == 7.5
    unnamed = Gpu(device_id=0, compute_capability="6.1")
    assert dt.describe(unnamed).architecture == "Pascal"
    assert gpu_arch.has_matrix_units([unnamed]) is False


@pytest.mark.parametrize(
    ("name", "arch", "unit"),
    [
        ("AMD Instinct MI300X", "CDNA 3", "Matrix Cores"),
        ("AMD Instinct MI250X", "CDNA 2", "Matrix Cores"),
        ("AMD Instinct MI100", "CDNA 1", "Matrix Cores"),
        ("AMD Instinct MI355X", "CDNA 4", "Matrix Cores"),
        ("gfx942", "CDNA 3", "Matrix Cores"),  # the XSpace's gpu_device_name on ROCm
        ("gfx90a", "CDNA 2", "Matrix Cores"),
        ("AMD Radeon RX 7900 XTX", "RDNA 3", "AI Accelerators"),
        ("gfx1201", "RDNA 4", "AI Accelerators"),
        ("gfx906", "GCN 5 (Vega)", "none"),
    ],
)
def test_amd_devices_have_an_architecture_and_never_a_compute_capability(
    name: str, arch: str, unit: str
) -> None:
    gpu = _gpu(name)
    assert gpu.vendor == "amd"
    facts = dt.describe(gpu)
    assert (facts.architecture, facts.matrix_unit) == (arch, unit)
    assert facts.compute_capability is None
    assert gpu_arch.compute_capability(gpu) is None
    # even a HIP architecture number recorded as a "capability" is not one
    assert gpu_arch.compute_capability(Gpu(0, name, "9.4", vendor="amd")) is None


@pytest.mark.parametrize(
    ("name", "model", "cc", "arch"),
    [
        # a substring match gave these the data-centre row (A100: cc 8.0 and its peaks)
        ("NVIDIA RTX A1000", "RTX A-series", "8.6", "Ampere"),
        ("RTX A1000 6GB Laptop GPU", "RTX A-series", "8.6", "Ampere"),
        ("Quadro GV100", "TITAN V / Quadro GV100", "7.0", "Volta"),  # not "V100 SXM2"
        ("NVIDIA B300", "B300", "10.3", "Blackwell"),  # not "GB300"
        ("NVIDIA GB300", "GB300", "10.3", "Blackwell"),
        ("AMD Radeon PRO W7800", "Radeon PRO W7800", None, "RDNA 3"),  # not the W7900's row
        ("NVIDIA GeForce RTX 3090 Ti", "GeForce RTX 30 series", "8.6", "Ampere"),
        ("NVIDIA GeForce RTX 4090 D", "GeForce RTX 40 series", "8.9", "Ada Lovelace"),
    ],
)
def test_synthetic_names_match_whole_model_tokens_only(
    name: str, model: str, cc: str | None, arch: str
) -> None:
    facts = dt.describe(_gpu(name))
    assert (facts.model, facts.compute_capability, facts.architecture) == (model, cc, arch)
    # none of these rows has peaks: a neighbour's (the A100's, the desktop 4090's) is not theirs
    assert peaks.for_gpu(name) is None


def test_synthetic_mig_instance_is_its_gpu_without_the_whole_gpus_peaks() -> None:
    name = "NVIDIA H100 80GB HBM3 MIG 1g.10gb"
    facts = dt.describe(_gpu(name))
    assert (facts.model, facts.architecture, facts.has_matrix_units) == (
        "H100 SXM5",
        "Hopper",
        True,
    )
    assert dt.mig_profile(name) == "1g.10gb"
    assert dt.mig_profile("NVIDIA A100-SXM4-40GB MIG 1c.2g.10gb") == "1c.2g.10gb"
    assert dt.mig_profile("NVIDIA H100 80GB HBM3") is None
    assert peaks.for_gpu(name) is None and peaks.for_gpu("NVIDIA H100 80GB HBM3") is not None
    reason = peaks.mig_reason(["NVIDIA H100 80GB HBM3", name])
    assert reason is not None and "MIG instance (1g.10gb) of the H100 SXM5" in reason
    assert peaks.mig_reason(["NVIDIA H100 80GB HBM3"]) is None


def test_synthetic_mig_run_says_why_it_has_no_peaks() -> None:
    """The throughput section and the roofline say a MIG instance has no peaks, and why."""
    from synthetic import synthetic_vendor_run

    from tcreport import api

    run = synthetic_vendor_run("NVIDIA H100 80GB HBM3 MIG 1g.10gb", ["sm90_xmma_gemm_bf16bf16"])
    flops = api.analyze(run).analysis.throughput
    assert flops is not None and flops.gpu is None and flops.no_peaks is not None
    assert "MIG instance (1g.10gb)" in flops.no_peaks
    assert flops.roofline is not None and flops.roofline.note is not None
    assert flops.roofline.note.startswith("No roofline: the GPU is a MIG instance (1g.10gb)")


@pytest.mark.parametrize(
    "name",
    [
        "AMD Radeon Graphics",
        "Some Unknown Accelerator",
        "Ascend 910B",
        "",
        "NVIDIA H800",  # export parts: not in the table, so not guessed as an H100
        "NVIDIA A800-SXM4-80GB",
        "NVIDIA A1000X",  # no row's token
    ],
)
def test_unknown_names_stay_unknown(name: str) -> None:
    facts = dt.describe(_gpu(name))
    assert facts.model is None and facts.architecture is None and facts.matrix_unit is None
    assert facts.has_matrix_units is None
    assert gpu_arch.has_matrix_units([_gpu(name)]) is None
    assert peaks.for_gpu(name) is None


def test_peaks_and_bandwidth_come_from_the_same_rows() -> None:
    h100 = peaks.for_gpu("NVIDIA H100 80GB HBM3")
    assert h100 is not None and (h100.peak("bf16"), h100.memory_gbs) == (989.4, 3350.0)
    a100 = peaks.for_gpu("NVIDIA A100-SXM4-40GB")
    assert a100 is not None and (a100.peak("tf32"), a100.memory_gbs) == (156.0, 1555.0)
    v100 = peaks.for_gpu("Tesla V100-SXM2-16GB")
    assert v100 is not None and v100.memory_gbs == 900.0
    # a model the table knows without published peaks gives none, not a neighbour's
    assert peaks.for_gpu("NVIDIA GeForce RTX 2070 SUPER") is None
    assert peaks.for_gpu("NVIDIA B300") is None


# --- what the reports say ------------------------------------------------------------------------


def test_synthetic_pascal_card_reports_that_it_has_no_tensor_cores() -> None:
    from synthetic import synthetic_vendor_run

    from tcreport import api

    run = synthetic_vendor_run("NVIDIA GeForce GTX 1060 6GB", ["maxwell_sgemm_128x64_nn"])
    view = api.analyze(run)
    ids = {f.id for f in view.findings}
    assert "TC005" in ids and not ids & {"TC001", "TC003", "TC004", "PR001", "OP001"}
    (f,) = [f for f in view.findings if f.id == "TC005"]
    assert (
        f.title
        == "NVIDIA GeForce GTX 1060 6GB (Pascal, compute capability 6.1) has no Tensor Cores"
    )
    assert view.fix_first is None or view.fix_first.id != "TC005"
    for text in (api.render_markdown(view), api.render_json(view), api.render_html(view)):
        assert "has no Tensor Cores" in text


def test_synthetic_turing_card_keeps_its_advice_with_cc_7_5() -> None:
    from synthetic import synthetic_vendor_run

    from tcreport import api
    from tcreport.rules import _common

    run = synthetic_vendor_run("NVIDIA GeForce RTX 2070 SUPER", ["turing_sgemm_128x64_nn"])
    view = api.analyze(run)
    assert _common.compute_capability(view.analysis) == 7.5
    assert "TC005" not in {f.id for f in view.findings}


@pytest.mark.realtraces
def test_real_rtx_2070_super_dlprof_report_says_cc_7_5(dlprof_cnn: object) -> None:
    """The real DLProf v1.8 run names an RTX 2070 SUPER and no capability: Turing, 7.5 (it was
    reported as 7.0 when every pre-Ampere name was guessed as Volta)."""
    from pathlib import Path

    from tcreport import api

    assert isinstance(dlprof_cnn, Path)
    view = api.analyze(api.load(dlprof_cnn))
    (f,) = [f for f in view.findings if f.id == "TC001"]
    assert "This GPU (cc 7.5) has no TF32" in (f.fix or "")
    assert "cc 7.0" not in api.render_markdown(view)


@pytest.mark.realtraces
def test_real_pascal_nsys_export_says_the_gpu_has_no_tensor_cores(nsys_win2022: object) -> None:
    """The Windows Nsight Systems export ran on a GeForce GTX 1060 with Max-Q Design (Pascal,
    6.1): its report says the GPU has no Tensor Cores, in every output."""
    from pathlib import Path

    from tcreport import api

    assert isinstance(nsys_win2022, Path)
    view = api.analyze(api.load(nsys_win2022))
    (gpu,) = {g.name for g in view.analysis.meta.gpus}
    assert gpu is not None and "GTX 1060" in gpu
    title = f"{gpu} (Pascal, compute capability 6.1) has no Tensor Cores"
    assert [f.title for f in view.findings if f.id == "TC005"] == [title]
    for text in (api.render_json(view), api.render_markdown(view), api.render_html(view)):
        assert "has no Tensor Cores" in text


@pytest.mark.parametrize(
    ("cc", "arch"),
    [("7.5", "Turing"), (" 7.5 ", "Turing"), ("7.50", "Turing"), ("8", "Ampere"), ("8.0", "Ampere"),
     ("9.00", "Hopper"), ("7.7", None), ("13.0", None), ("abc", None), ("", None), ("\u0668.\u0660", None)],
)  # fmt: skip
def test_a_compute_capability_is_read_in_any_plain_spelling(cc: str, arch: str | None) -> None:
    """A recorded capability written " 7.50 " or "8" names its generation as "7.5" and "8.0" do
    (a hostile tester's find: they fell back to the kernel names); unknown ones stay unknown."""
    found = dt.architecture_of_cc(cc)
    assert (found.name if found else None) == arch
