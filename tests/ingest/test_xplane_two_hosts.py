"""A multi-host XSpace run: a device's identity includes its host.

``jax.profiler`` / the TF profiler write one ``<host>.xplane.pb`` per host into one run folder, and
the reader merges every file of it. Each host numbers its own GPUs from 0, so two one-GPU hosts
were one "GPU 0" in the merged run: one per-device row holding both hosts' kernels, two GPUs of
one id. The inputs are real profiles written twice into one run folder (``*synthetic*``, as the
hostile13 two-host test lays them out): the bundled one-GPU H200 JAX profile and the real
eight-GPU TF multi-worker one.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from trace_paths import REALTRACES, SAMPLES, need

pytest.importorskip("xprof")
pytest.importorskip("google.protobuf")

from tcreport import api  # noqa: E402
from tcreport.analysis import devices  # noqa: E402

JAX = next((SAMPLES / "h200-jax-xla-ncu" / "bf16").glob("plugins/profile/*/vm.xplane.pb"))
TF8 = REALTRACES / "tf_profiler" / "gpu-multiworker-xplane" / "34.83.195.179_6003.xplane.pb"


def _two_hosts(profile: Path, root: Path) -> Path:
    run = root / "two_hosts_synthetic" / "plugins" / "profile" / "run"
    run.mkdir(parents=True)
    shutil.copyfile(profile, run / "host0.xplane.pb")
    shutil.copyfile(profile, run / "host1.xplane.pb")
    return root / "two_hosts_synthetic"


def _rows(path: Path) -> list[tuple[int | None, int, int]]:
    run = api.load(path)
    return [(d.device_id, d.launches, d.gpu_kernel_ns) for d in devices.device_rows(run)]


def test_two_one_gpu_hosts_are_two_devices_with_their_own_figures_synthetic(
    tmp_path: Path,
) -> None:
    ((dev, launches, ns),) = _rows(JAX)  # one host: its GPU 0, as before
    assert dev == 0
    run = api.load(_two_hosts(JAX, tmp_path))
    assert [g.device_id for g in run.meta.gpus] == [0, 1]
    assert _rows(_two_hosts(JAX, tmp_path / "again")) == [(0, launches, ns), (1, launches, ns)]
    (note,) = [n for n in run.meta.notes if "hosts' profiles" in n]
    assert "host0.xplane.pb" in note and "GPU 0" in note
    assert "host1.xplane.pb" in note and "GPU 1" in note
    view = api.analyze(run)
    assert view.analysis.time.gpu_kernel_ns == 2 * ns


@pytest.mark.realtraces
def test_two_eight_gpu_hosts_are_sixteen_devices_synthetic(tmp_path: Path) -> None:
    assert [g.device_id for g in api.load(need(TF8)).meta.gpus] == list(range(8))
    one = _rows(TF8)  # the GPUs that ran anything (1, 4 and 6)
    assert one
    folder = _two_hosts(TF8, tmp_path)
    assert [g.device_id for g in api.load(folder).meta.gpus] == list(range(16))
    assert _rows(folder) == one + [(d + 8, n, ns) for d, n, ns in one if d is not None]
    assert not any("hosts' profiles" in n for n in api.load(TF8).meta.notes)
