"""Whose devices an XSpace profile ran on, and whose program it was: read from the profile.

The synthetic XSpaces here are written with the stats the ROCm tracers of XLA/TSL record on every
GPU plane (``device_vendor`` "AMD", ``compute_cap_major``/``minor`` from the gfx version, the gfx
id in ``gpu_device_name``: rocm_collector.cc) and the host event JAX's C++ dispatch records
(``PjitFunction(<fn>)``, xla/python/pjit.cc); a TPU plane is named ``/device:TPU:N``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("xprof")
pytest.importorskip("google.protobuf")

from tcreport import api  # noqa: E402
from tcreport.analysis import device_table  # noqa: E402
from tcreport.analysis.vendor import Vendor  # noqa: E402
from tcreport.ingest.xplane import reader as xplane_reader  # noqa: E402
from tcreport.ingest.xplane.proto import xspace_class  # noqa: E402

MFMA = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x256x64_MI16x16x1_SN_ISA942"
ELEMENTWISE = "loop_add_fusion"


def _stat(plane: Any, meta: dict[str, int], target: Any, key: str, value: object) -> None:
    if key not in meta:
        meta[key] = len(meta) + 1
        plane.stat_metadata[meta[key]].id = meta[key]
        plane.stat_metadata[meta[key]].name = key
    s = target.stats.add(metadata_id=meta[key])
    if isinstance(value, str):
        s.str_value = value
    else:
        s.int64_value = int(value)  # type: ignore[call-overload]


def _space(
    host_events: list[str], gpu_stats: dict[str, object], devices: int = 2, tpu: bool = False
) -> Any:
    space = xspace_class()()
    host = space.planes.add(id=1, name="/host:CPU")
    line = host.lines.add(id=1, name="python3", timestamp_ns=1_700_000_000_000_000_000)
    for i, name in enumerate(host_events, 1):
        host.event_metadata[i].id = i
        host.event_metadata[i].name = name
        line.events.add(metadata_id=i, offset_ps=i * 1_000_000, duration_ps=500_000)
    for dev in range(devices):
        plane = space.planes.add(id=100 + dev, name=f"/device:GPU:{dev}")
        meta: dict[str, int] = {}
        for key, value in gpu_stats.items():
            _stat(plane, meta, plane, key, value)
        stream = plane.lines.add(
            id=7, name="Stream #7(Compute)", timestamp_ns=1_700_000_000_000_001_000
        )
        for i, (kname, dur_ps) in enumerate(((MFMA, 30_000_000), (ELEMENTWISE, 10_000_000)), 1):
            plane.event_metadata[i].id = i
            plane.event_metadata[i].name = kname
            ev = stream.events.add(metadata_id=i, offset_ps=i * 50_000_000, duration_ps=dur_ps)
            _stat(plane, meta, ev, "correlation_id", 10 * dev + i)
            _stat(plane, meta, ev, "tf_op", f"jit(train_step)/dot_general_{i}:dot_general")
    if tpu:
        plane = space.planes.add(id=200, name="/device:TPU:0")
        plane.event_metadata[1].id = 1
        plane.event_metadata[1].name = "fusion.1"
        ops = plane.lines.add(id=1, name="XLA Ops", timestamp_ns=1_700_000_000_000_001_000)
        ops.events.add(metadata_id=1, offset_ps=0, duration_ps=2_000_000)
    return space


def _write(tmp_path: Path, space: Any, name: str = "host.xplane.pb") -> Path:
    path = tmp_path / name
    path.write_bytes(space.SerializeToString())
    return path


ROCM_MI300X = {
    "device_vendor": "AMD",
    "gpu_device_name": "gfx942",
    "compute_cap_major": 9,
    "compute_cap_minor": 4,
    "core_count": 304,
}


def test_synthetic_rocm_jax_xspace_is_amd_without_compute_capability(tmp_path: Path) -> None:
    path = _write(tmp_path, _space(["PjitFunction(train_step)", "pjit_train_step"], ROCM_MI300X))
    run = xplane_reader.read(path)
    assert run.meta.framework == "JAX"
    assert [g.device_id for g in run.meta.gpus] == [0, 1]
    for g in run.meta.gpus:
        assert (g.vendor, g.name, g.compute_capability) == ("amd", "gfx942", None)
        assert device_table.describe(g).architecture == "CDNA 3"
    view = api.analyze(run)
    a = view.analysis
    assert a.verdict.vendor is Vendor.AMD
    assert a.time.tc_kernel_ns == 2 * 30_000  # the MFMA GEMM on both devices, ns
    for text in (api.render_json(view), api.render_markdown(view)):
        assert "9.4" not in text and "sm 9" not in text and "cc 9" not in text
        assert "JAX" in text


def test_synthetic_cuda_xspace_keeps_its_compute_capability_and_tensorflow(tmp_path: Path) -> None:
    stats = {"device_vendor": "Nvidia", "compute_cap_major": 8, "compute_cap_minor": 0}
    run = xplane_reader.read(_write(tmp_path, _space(["SessionRun", "MatMul:MatMul"], stats, 1)))
    assert run.meta.framework == "TensorFlow"
    (g,) = run.meta.gpus
    assert (g.vendor, g.compute_capability) == ("nvidia", "8.0")


def test_synthetic_xspace_without_framework_events_names_no_framework(tmp_path: Path) -> None:
    run = xplane_reader.read(_write(tmp_path, _space(["some_host_work"], ROCM_MI300X, 1)))
    assert run.meta.framework is None


def test_synthetic_tpu_plane_is_not_a_cpu_only_profile(tmp_path: Path) -> None:
    run = xplane_reader.read(_write(tmp_path, _space(["PjitFunction(f)"], {}, devices=0, tpu=True)))
    notes = " ".join(run.meta.notes)
    assert "CPU-only" not in notes
    assert "1 TPU plane" in notes and "no matrix-unit verdict" in notes
    assert run.meta.device_events_unread == 1
    assert not api.analyze(run).analysis.host.cpu_only
