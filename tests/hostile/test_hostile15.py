"""Hostile tests of what landed on main after 625a97d (hostile15).

* the ``tcreport`` process builds only the command its argv names (``cli.app.app_for``): every
  odd argv must give what the whole app gives;
* the device table's Turing parts without Tensor Cores (T-series, MX, GTX 16) and TC005/TC006;
* several hosts' ``*.xplane.pb`` merged into one run (``ingest.xplane.space.merge``).

Real traces first: the RTX 2070 SUPER Nsight Systems export with its GPU name replaced, the
bundled H200 JAX profile and the real eight-GPU TF profile laid out as several hosts
(``*synthetic*``: no real multi-host folder is at hand).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from trace_paths import REALTRACES, SAMPLES, need, rtx2070_renamed_synthetic
from typer.testing import CliRunner

from tcreport import api
from tcreport.analysis import device_table as dt
from tcreport.analysis import gpu_arch
from tcreport.cli.app import app, app_for
from tcreport.errors import InputError
from tcreport.model import Gpu, gpu_vendor

NSYS = SAMPLES / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"

# -- 1. the one-command app: every argv gives what the whole app gives -------------------------

ODD_ARGV = [
    ["-v"],
    ["-vvv", "summary"],
    ["--verbose=1", "summary"],
    ["--", "summary"],
    ["-h", "summary"],
    ["summary", "-h"],
    ["-v", "--", "summary"],
    ["-vh", "summary"],
    ["-vx", "summary"],
    ["--verb", "summary"],
    ["summary", "--version"],
    ["summary", "--install-completion"],
    ["summary", "summary", "summary"],
    ["Summary", "x"],
    ["", "summary"],
    ["-v", ""],
    ["summary=x"],
    ["summary", "--bogus"],
    ["summary", "no_such_file.sqlite"],
    ["-vv", "report", "report"],  # a file named like a command
]


@pytest.mark.parametrize("argv", ODD_ARGV, ids=lambda a: " ".join(a) or "empty")
def test_odd_argv_gives_what_the_whole_app_gives(argv: list[str]) -> None:
    runner = CliRunner()
    whole = runner.invoke(app, argv, prog_name="tcreport")
    one = runner.invoke(app_for(argv), argv, prog_name="tcreport")
    assert (one.exit_code, one.stdout, one.stderr) == (whole.exit_code, whole.stdout, whole.stderr)
    assert one.exit_code in (0, 2)  # help or a one-line usage error, never a traceback
    assert "Traceback" not in one.output


def test_a_file_named_like_a_command_is_read_by_the_one_command_app(tmp_path: Path) -> None:
    report = tmp_path / "report"
    shutil.copyfile(NSYS, report)
    argv = ["summary", "--json", str(report)]
    runner = CliRunner()
    whole = runner.invoke(app, argv, prog_name="tcreport")
    one = runner.invoke(app_for(argv), argv, prog_name="tcreport")
    assert app_for(argv) is not app
    assert whole.exit_code == one.exit_code == 0
    assert one.stdout == whole.stdout


# -- 3. the device table: Turing parts without Tensor Cores ------------------------------------


@pytest.mark.realtraces
@pytest.mark.parametrize("name", ["NVIDIA T1000 8GB", "NVIDIA GeForce MX550"])
def test_tc005_on_a_t_series_or_mx_part_does_not_say_only_gtx_16_lacks_tensor_cores_synthetic(
    tmp_path: Path, name: str
) -> None:
    """TC005 said "NVIDIA GPUs have them from Volta on, except the GeForce GTX 16 series" and
    "run on ... Volta or newer, not a GTX 16" to the user of a T1000 or an MX550: the very GPU it
    had just named as having none is, by those words, one that has them."""
    view = api.analyze(api.load(rtx2070_renamed_synthetic(tmp_path, name)))
    (tc005,) = [f for f in view.findings if f.id == "TC005"]
    text = f"{tc005.detail} {tc005.fix}"
    assert "MX450/MX550" in text and "T400" in text, text
    assert "except the GeForce GTX 16 series)" not in text
    assert "not a GTX 16)" not in text


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA T500",  # TU117 laptop part, Dec 2020, 7.5
        "NVIDIA T550 Laptop GPU",  # TU117 laptop part, 2022, 7.5
        "NVIDIA GeForce GTX 1630",  # TU117-150, June 2022, 7.5
    ],
)
def test_synthetic_the_other_tu117_parts_are_known_without_tensor_cores(name: str) -> None:
    """TC006 words a bare 7.5 as "unless this is a ... NVIDIA T400-T2000 (TU116/TU117) part"; a
    T500 is in that range by name and a GTX 1630 is a GTX 16, yet the table knew neither: the
    report called them "a name the device table does not know" and assumed Tensor Cores."""
    gpu = Gpu(device_id=0, name=name, compute_capability="7.5", vendor=gpu_vendor(name))
    facts = dt.describe(gpu)
    assert facts.model is not None, name
    assert facts.has_matrix_units is False
    assert gpu_arch.matrix_units_caveat([gpu]) is None


@pytest.mark.parametrize("cc", [None, "8.6"])
def test_synthetic_the_rtx_2050_is_an_ampere_part(cc: str | None) -> None:
    """The GeForce RTX 2050 (laptop, Dec 2021) is the Ampere GA107, compute capability 8.6, not
    a Turing: the "RTX 20[5-8]0" row took it for Turing, whose Tensor Cores take no bf16/TF32."""
    facts = dt.describe(Gpu(device_id=0, name="NVIDIA GeForce RTX 2050", compute_capability=cc))
    assert facts.architecture == "Ampere"
    assert facts.compute_capability == "8.6"
    assert facts.has_matrix_units is True and "bf16" in facts.matrix_precisions
    for turing in ("NVIDIA GeForce RTX 2060", "NVIDIA GeForce RTX 2080 SUPER"):
        assert dt.describe(Gpu(device_id=0, name=turing)).architecture == "Turing"


@pytest.mark.parametrize(
    "name",
    ["NVIDIA T4", "GRID T4-16Q", "NVIDIA RTX 2000 Ada Generation", "NVIDIA RTX A2000 12GB"],
)
def test_synthetic_names_beside_the_tu117_rows_keep_their_tensor_cores(name: str) -> None:
    """ "T4" is not "T400", "RTX 2000"/"RTX A2000" are not "T2000"."""
    assert dt.describe(Gpu(device_id=0, name=name)).has_matrix_units is True


@pytest.mark.realtraces
def test_tc006_names_each_unsure_gpu_once_among_mixed_gpus_synthetic(tmp_path: Path) -> None:
    """A 7.5 without a name beside a named GTX 1650: not "no Tensor Cores" (one may have them),
    TC006 for the unnamed one only."""
    path = rtx2070_renamed_synthetic(tmp_path, None)
    view = api.analyze(api.load(path))
    meta = view.analysis.meta
    mixed = (*meta.gpus, Gpu(device_id=1, name="NVIDIA GeForce GTX 1650", compute_capability="7.5"))
    assert gpu_arch.has_matrix_units(mixed) is None
    caveat = gpu_arch.matrix_units_caveat(mixed)
    assert caveat is not None and caveat.startswith("GPU 0: ") and "GPU 1" not in caveat


# -- 4. several hosts' XSpace files ------------------------------------------------------------

JAX = next((SAMPLES / "h200-jax-xla-ncu" / "bf16").glob("plugins/profile/*/vm.xplane.pb"))
TF8 = REALTRACES / "tf_profiler" / "gpu-multiworker-xplane" / "34.83.195.179_6003.xplane.pb"


def _hosts(root: Path, files: dict[str, Path | bytes]) -> Path:
    run = root / "hosts_synthetic" / "plugins" / "profile" / "run"
    run.mkdir(parents=True)
    for name, src in files.items():
        if isinstance(src, bytes):
            (run / name).write_bytes(src)
        else:
            shutil.copyfile(src, run / name)
    return root / "hosts_synthetic"


def test_hosts_are_numbered_in_their_names_natural_order_synthetic(tmp_path: Path) -> None:
    """worker1, worker2, worker10: the run's GPU 1 is worker2's, not worker10's (file names
    sorted as text put worker10 before worker2)."""
    pytest.importorskip("xprof")
    folder = _hosts(tmp_path, {f"worker{i}.xplane.pb": JAX for i in (10, 2, 1)})
    run = api.load(folder)
    (note,) = [n for n in run.meta.notes if "hosts' profiles" in n]
    assert note.index("worker1.xplane.pb") < note.index("worker2.xplane.pb")
    assert note.index("worker2.xplane.pb") < note.index("worker10.xplane.pb")
    assert "worker2.xplane.pb (vm): GPU 1" in note and "worker10.xplane.pb (vm): GPU 2" in note


@pytest.mark.parametrize("position", ["host0", "host1"])
def test_an_empty_host_file_is_an_error_not_a_host_left_out_synthetic(
    tmp_path: Path, position: str
) -> None:
    """A host whose profiler died before writing leaves an empty ``.xplane.pb``: alone it is
    "file is empty"; beside another host's file it was read as a host with nothing on it and the
    run reported one host as if it were the whole job."""
    pytest.importorskip("xprof")
    other = "host1" if position == "host0" else "host0"
    folder = _hosts(tmp_path, {f"{position}.xplane.pb": b"", f"{other}.xplane.pb": JAX})
    with pytest.raises(InputError) as err:
        api.load(folder)
    assert f"{position}.xplane.pb" in str(err.value) and "empty" in str(err.value)


@pytest.mark.realtraces
def test_a_host_without_gpus_beside_gpu_hosts_keeps_ids_and_note_synthetic(tmp_path: Path) -> None:
    """Eight-GPU host, one-GPU host: ids 0-7 and 8, the note names each host's."""
    pytest.importorskip("xprof")
    folder = _hosts(tmp_path, {"host0.xplane.pb": need(TF8), "host1.xplane.pb": JAX})
    run = api.load(folder)
    assert [g.device_id for g in run.meta.gpus] == list(range(9))
    (note,) = [n for n in run.meta.notes if "hosts' profiles" in n]
    assert "host0.xplane.pb (34.83.195.179:6003): GPUs 0, 1, 2, 3, 4, 5, 6, 7" in note
    assert "host1.xplane.pb (vm): GPU 8" in note
