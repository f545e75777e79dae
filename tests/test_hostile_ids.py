"""Hostile ids and clocks in real traces: the step breakdown and the HTML timeline on the bundled
2xH100 Nsight Systems export and the H100 Kineto trace, with values edited in (a device id of
2**31 - 1, a negative one, a stream id of 2**63 - 1, positions near the int64 limits, a step number
past int64). Each case is a real file with a few values changed (the tests say "synthetic"): the
figures must stay those of the unedited file, or the damaged rows are left out with a note."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from trace_paths import SAMPLES

from tcreport import api
from tcreport.analysis.activity import Cat

H100X2 = SAMPLES / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"
GPU_TABLES = (
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
)


def _edited(tmp_path: Path, *sql: str) -> Path:
    """The 2xH100 export with ``sql`` applied to a copy."""
    path = tmp_path / "edited.sqlite"
    shutil.copy(H100X2, path)
    con = sqlite3.connect(path)
    for statement in sql:
        con.execute(statement)
    con.commit()
    con.close()
    return path


def _steps(path: Path) -> dict[tuple[int, int | None], tuple[int, ...]]:
    view = api.analyze(api.load(path), with_timeline=True)
    return {(r.iteration, r.device_id): (r.span_ns, *r.parts) for r in view.analysis.steps}


def _renumber(device: int) -> list[str]:
    return [f"UPDATE {t} SET deviceId = {device} WHERE deviceId = 1" for t in GPU_TABLES]


def test_synthetic_device_id_int32_max_keeps_its_own_steps(tmp_path: Path) -> None:
    """GPU 1 renumbered 2**31 - 1: its (iteration, GPU) row is the old GPU 1's, not iteration -1
    of GPU 0 (the int32 ``device + 1`` wrapped)."""
    before = _steps(H100X2)
    after = _steps(_edited(tmp_path, *_renumber(2**31 - 1)))
    assert sorted(after, key=str) == [(0, 0), (0, 2**31 - 1)]
    assert after[(0, 2**31 - 1)] == before[(0, 1)]
    assert after[(0, 0)] == before[(0, 0)]


def test_synthetic_negative_device_ids_keep_their_own_steps(tmp_path: Path) -> None:
    """A negative device id other than -1 (unknown) is its own GPU, not iteration -2 / None."""
    before = _steps(H100X2)
    for device in (-7, -(2**31)):
        after = _steps(_edited(tmp_path, *_renumber(device)))
        assert sorted(after, key=str) == sorted([(0, 0), (0, device)], key=str)
        assert after[(0, device)] == before[(0, 1)]


def test_synthetic_stream_id_int64_max_gets_its_own_timeline_lane(tmp_path: Path) -> None:
    """GPU 1's stream renumbered 2**63 - 1: the HTML timeline still draws it as its own lane (the
    lane key used to overflow packing (device, stream) into one int64)."""
    path = _edited(
        tmp_path,
        f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET streamId = {2**63 - 1} WHERE deviceId = 1",
    )
    view = api.analyze(api.load(path), with_timeline=True)
    tl = view.analysis.iteration_timeline
    assert tl is not None
    gpu_lanes = [lane.label for lane in tl.lanes if lane.kind == "gpu"]
    assert f"GPU 1 · stream {2**63 - 1}" in gpu_lanes
    assert "GPU 0 · stream 7" in gpu_lanes
    gpu_blocks = [b for b in tl.blocks if b.cat <= Cat.MEMORY]
    assert sum(b.merged for b in gpu_blocks) == tl.events  # nothing lost, only merged
    assert f"stream {2**63 - 1}" in api.render_html(view)
