"""TensorFlow profiler XSpace reader, against a real 8-GPU profile (TF 2.4 era, fp16 BERT).

Cross-checks use what the profiler's own tooling says about the same file: xprof's
``kernel_stats`` (per-kernel occurrences and total time) and ``overview_page`` (the share of device
compute time in 16-bit ops).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections import defaultdict
from pathlib import Path

import pytest

pytest.importorskip("xprof")
pytest.importorskip("google.protobuf")

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
from trace_paths import DLPROF_CNN, REALTRACES  # noqa: E402

from tcreport import api  # noqa: E402
from tcreport.errors import TcreportError  # noqa: E402
from tcreport.ingest import detect  # noqa: E402
from tcreport.ingest.xplane import reader as tf_xplane
from tcreport.model import Run, SourceFormat  # noqa: E402

XPLANE_DIR = REALTRACES / "tf_profiler" / "gpu-multiworker-xplane"
XPLANE = XPLANE_DIR / "34.83.195.179_6003.xplane.pb"


@pytest.fixture(scope="module")
def xplane() -> Path:
    if not XPLANE.exists():
        pytest.skip("real trace not available")
    return XPLANE


@pytest.fixture(scope="module")
def run(xplane: Path) -> Run:
    return tf_xplane.read(xplane)


def test_sniff_file_folder_and_tensorboard_layout(xplane: Path, tmp_path: Path) -> None:
    assert tf_xplane.sniff(xplane)
    assert tf_xplane.sniff(xplane.parent)
    run_dir = tmp_path / "logs" / "plugins" / "profile" / "2021_01_01_00_00_00"
    run_dir.mkdir(parents=True)
    renamed = run_dir / "host.xplane.pb"
    shutil.copyfile(xplane, renamed)
    assert tf_xplane.sniff(tmp_path / "logs")
    assert detect(tmp_path / "logs") is SourceFormat.TF_XPLANE
    other = tmp_path / "other.xplane.pb"
    other.write_bytes(b"\x0a\x05hello world, not a profile")
    assert not tf_xplane.sniff(other)
    if DLPROF_CNN.exists():
        assert not tf_xplane.sniff(DLPROF_CNN)


def test_gpus_from_plane_stats(run: Run) -> None:
    gpus = run.meta.gpus
    assert [g.device_id for g in gpus] == list(range(8))
    assert {(g.compute_capability, g.sm_count) for g in gpus} == {("7.0", 80)}


def test_kernels_per_launch_match_xprof_kernel_stats(run: Run) -> None:
    k = run.kernels
    assert k is not None
    assert k.num_rows == 1330
    assert set(k.column("device_id").to_pylist()) == {4, 6}
    by_device = {
        r["device_id"]: (r["duration_ns_count"], r["duration_ns_sum"])
        for r in k.group_by("device_id")
        .aggregate([("duration_ns", "count"), ("duration_ns", "sum")])
        .to_pylist()
    }
    assert by_device == {4: (665, 14_825_385), 6: (665, 14_865_363)}
    # xprof's kernel_stats splits a kernel by launch configuration; per name it must agree.
    stats = json.loads(_tool(XPLANE, "kernel_stats"))
    expected: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in stats["rows"]:
        v = [c.get("v") for c in row["c"]]
        expected[v[1]][0] += int(v[10])
        expected[v[1]][1] += round(v[11] * 1000)
    t = pa.table({"n": k.column("name").cast(pa.string()), "d": k.column("duration_ns")})
    ours = {
        r["n"]: [r["d_count"], r["d_sum"]]
        for r in t.group_by("n").aggregate([("d", "count"), ("d", "sum")]).to_pylist()
    }
    assert ours == dict(expected)


def _tool(path: Path, tool: str) -> bytes:
    """Ask xprof directly (on a scratch copy: the converter caches beside its input)."""
    from xprof.convert import raw_to_tool_data

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / path.name
        shutil.copyfile(path, copy)
        data, _ = raw_to_tool_data.xspace_to_tool_data([str(copy)], tool, {})
    return data if isinstance(data, bytes) else data.encode()


def test_every_kernel_is_attributed_to_an_op(run: Run) -> None:
    k, ops = run.kernels, run.ops
    assert k is not None and ops is not None
    assert k.column("op_id").null_count == 0
    assert set(k.column("op_id").cast(pa.string()).to_pylist()) <= set(
        ops.column("op_id").cast(pa.string()).to_pylist()
    )
    assert (
        pc.sum(ops.column("gpu_ns")).as_py()
        == pc.sum(k.column("duration_ns")).as_py()
        == 29_690_748
    )


def test_op_rows_from_framework_op_stats(run: Run) -> None:
    ops = run.ops
    assert ops is not None
    rows = {r["name"]: r for r in ops.to_pylist()}
    drop = rows[
        "replica_4/bert_span_labeler/bert_encoder_1/transformer/layer_0/dropout/dropout/Mul"
    ]
    assert (drop["type"], drop["dtype"]) == ("Mul", "float16")  # inputs (half[4,384,1024];half[])
    # Host row of framework_op_stats (self-time 70.246 us, 2 occurrences) merged with the device
    # time of the one kernel the device plane attributes to it.
    cast = rows["replica_4/bert_span_labeler/bert_encoder_1/word_embeddings/GatherV2/Cast"]
    assert (cast["type"], cast["dtype"], cast["calls"]) == ("Cast", "float32", 2)
    assert (cast["cpu_ns"], cast["gpu_ns"], cast["kernel_calls"]) == (70_246, 246_783, 1)
    assert "IDLE" not in rows


def test_precision_mix_agrees_with_tensorflows_own_figure(run: Run) -> None:
    notes = run.meta.notes
    assert (
        "TensorFlow profiler: device compute time 30.5% in 16-bit ops, 69.5% in 32-bit ops."
        in notes
    )
    mix = next(n for n in notes if n.startswith("Precision mix (device time"))
    assert "float16 30.5%" in mix
    assert any(
        n.startswith("Per device: GPU 4 (sm_70): 665 kernel launches, 14.825 ms") for n in notes
    )
    assert not any("CPU-only" in n for n in notes)


def test_reading_never_writes_beside_the_input(xplane: Path, tmp_path: Path) -> None:
    folder = tmp_path / "profile"
    folder.mkdir()
    shutil.copyfile(xplane, folder / xplane.name)
    before = sorted(p.name for p in folder.iterdir())
    tf_xplane.read(folder)
    tf_xplane.read(folder / xplane.name)
    assert sorted(p.name for p in folder.iterdir()) == before


def test_whole_pipeline_renders(run: Run) -> None:
    view = api.analyze(run)
    summary = json.loads(api.render_json(view))
    assert summary["source"]["format"] == "tf-xplane"
    assert summary["time"]["gpu_kernel_ns"] == 29_690_748
    assert summary["tensor_core"]["kernel_time_share"] == 0.0  # fp16 Eigen/Philox kernels, no GEMMs
    assert "Tensor Core report" in api.render_html(view)


@pytest.mark.parametrize("cut", [1, 17, 1000, 200_000])
def test_damaged_file_is_an_input_error(xplane: Path, tmp_path: Path, cut: int) -> None:
    bad = tmp_path / "bad.xplane.pb"
    bad.write_bytes(xplane.read_bytes()[:cut] + b"\xff\xff\xff")
    # Either some rows or a TcreportError; never a protobuf or converter exception.
    with contextlib.suppress(TcreportError):
        tf_xplane.read(bad)
