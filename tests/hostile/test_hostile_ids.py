"""Hostile ids and clocks in real traces: the step breakdown and the HTML timeline on the bundled
2xH100 Nsight Systems export and the H100 Kineto trace, with values edited in (a device id of
2**31 - 1, a negative one, a stream id of 2**63 - 1, positions near the int64 limits, a step number
past int64). Each case is a real file with a few values changed (the tests say "synthetic"): the
figures must stay those of the unedited file, or the damaged rows are left out with a note."""

from __future__ import annotations

import dataclasses
import gzip
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import known_violations
import pyarrow.compute as pc
import pyarrow.parquet as pq
from trace_paths import REALTRACES, SAMPLES, need

from tcreport import api
from tcreport.analysis.activity import Cat

H100X2 = SAMPLES / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"
H100_KINETO = (
    REALTRACES
    / "kineto"
    / "h100-bf16-bert-small"
    / "gaunernst_bert-small-uncased__1016001.redacted.json.gz"
)
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
    return {(r.iteration, r.device_id): (r.span_ns, *r.parts) for r in view.analysis.steps.rows}


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
    tl = view.analysis.steps.timeline
    assert tl is not None
    gpu_lanes = [lane.label for lane in tl.lanes if lane.kind == "gpu"]
    assert f"GPU 1 · stream {2**63 - 1}" in gpu_lanes
    assert "GPU 0 · stream 7" in gpu_lanes
    gpu_blocks = [b for b in tl.blocks if b.cat <= Cat.MEMORY]
    assert sum(b.merged for b in gpu_blocks) == tl.events  # nothing lost, only merged
    assert f"stream {2**63 - 1}" in api.render_html(view)


def test_synthetic_nsys_start_near_int64_min_is_dropped_with_a_note(tmp_path: Path) -> None:
    """A kernel starting at -(2**63 - 1) (a sentinel, not a time): the HTML timeline used to take
    differences past int64 and raise; the reader now drops the row and says so."""
    before = _steps(H100X2)
    path = _edited(
        tmp_path,
        f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = {-(2**63 - 1)}, end = {-(2**63 - 1) + 1000}"
        " WHERE rowid = (SELECT max(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 1"
        " AND start < (SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 1) + 1)",
    )
    run = api.load(path)
    assert any("dropped 1 kernel rows" in n for n in run.meta.notes)
    view = api.analyze(run, with_timeline=True)
    assert view.analysis.steps.timeline is not None
    assert "<html" in api.render_html(view).lower()
    after = {(r.iteration, r.device_id): r for r in view.analysis.steps.rows}
    assert after[(0, 0)].parts == before[(0, 0)][1:]
    assert all(sum(r.parts) == r.span_ns and min(r.parts) >= 0 for r in after.values())


def _kineto(edit: Any, tmp_path: Path) -> Path:
    """The H100 Kineto trace without its ProfilerStep (the whole run is one window), ``edit``ed."""
    doc = json.loads(gzip.decompress(need(H100_KINETO).read_bytes()))
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") != "user_annotation"]
    edit([e for e in doc["traceEvents"] if e.get("cat") == "kernel"])
    path = tmp_path / "edited.pt.trace.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_synthetic_kineto_positions_past_int64_differences_are_dropped(tmp_path: Path) -> None:
    """Two kernels 8e18 ns apart, one lasting 3.9e18 ns: the breakdown's span wrapped negative
    (-3.9e18 ns of span, a negative idle). Such rows are dropped and counted in the notes."""

    def edit(kernels: list[dict[str, Any]]) -> None:
        kernels[0]["ts"] = -3.99e15
        kernels[1]["ts"], kernels[1]["dur"] = 3.99e15, 3.9e15

    run = api.load(_kineto(edit, tmp_path))
    assert any("2 malformed events skipped" in n for n in run.meta.notes)
    view = api.analyze(run, with_timeline=True)
    (row,) = view.analysis.steps.rows
    assert min(row.parts) >= 0 and sum(row.parts) == row.span_ns
    assert 0 < row.span_ns < 10**9  # the H100 trace's own few milliseconds
    summary = json.loads(api.render_json(view))
    assert summary["steps"][0]["span_ns"] == row.span_ns


def test_synthetic_host_causes_never_exceed_the_host_bound_idle(tmp_path: Path) -> None:
    """Gaps of 1e18 ns summed in float64 came out larger than the exact idle they explain."""

    def edit(kernels: list[dict[str, Any]]) -> None:
        kernels[0]["ts"] = -1e15
        kernels[1]["ts"], kernels[1]["dur"] = 1e15, 1e12

    view = api.analyze(api.load(_kineto(edit, tmp_path)), with_timeline=True)
    (row,) = view.analysis.steps.rows
    assert row.idle_host_ns > 10**18
    assert sum(c.idle_ns for c in row.host_causes) == row.idle_host_ns


def test_synthetic_profiler_step_number_past_int64_is_not_a_step(tmp_path: Path) -> None:
    """``ProfilerStep#9223372036854775808``: the analysis cast the number to int64 and raised
    ArrowInvalid; a number of 19 digits or more is a name, and the run is one whole-run window."""
    doc = json.loads(gzip.decompress(need(H100_KINETO).read_bytes()))
    for e in doc["traceEvents"]:
        if e.get("cat") == "user_annotation":
            e["name"] = f"ProfilerStep#{2**63}"
    path = tmp_path / "step.pt.trace.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    view = api.analyze(api.load(path), with_timeline=True)
    (row,) = view.analysis.steps.rows
    assert sum(row.parts) == row.span_ns > 0
    assert json.loads(api.render_json(view))["steps"][0]["span_ns"] == row.span_ns


def test_synthetic_unknown_device_is_gpu_question_mark_in_chart_and_timeline(
    tmp_path: Path,
) -> None:
    """A kernel whose device id is past int32 (read as unknown): the step chart and the timeline
    lanes both call its GPU "?" (the timeline used to write "GPU -1")."""

    def edit(kernels: list[dict[str, Any]]) -> None:
        kernels[0]["args"]["device"] = 2**31

    view = api.analyze(api.load(_kineto(edit, tmp_path)), with_timeline=True)
    assert None in {r.device_id for r in view.analysis.steps.rows}
    tl = view.analysis.steps.timeline
    assert tl is not None
    labels = [lane.label for lane in tl.lanes]
    assert "GPU ? · stream 7" in labels and not any("GPU -1" in x for x in labels)
    html = api.render_html(view)
    assert "iter 0 · GPU ?" in html and "GPU -1" not in html


def test_synthetic_negative_host_durations_draw_as_points() -> None:
    """Ops with a negative ``cpu_ns`` and ranges ending before they start (a hand-edited ingest
    folder carries them): the timeline's cell leads were never found and it raised IndexError."""
    run = api.load(H100X2)
    assert run.ops is not None and run.ranges is not None
    cpu = pc.subtract(pc.negate(pc.fill_null(run.ops["cpu_ns"], 0)), 1_000_000)
    ends = pc.subtract(run.ranges["start_ns"], 10_000_000)
    hostile = dataclasses.replace(
        run,
        ops=run.ops.set_column(run.ops.schema.get_field_index("cpu_ns"), "cpu_ns", cpu),
        ranges=run.ranges.set_column(run.ranges.schema.get_field_index("end_ns"), "end_ns", ends),
    )
    with known_violations.lenient():
        a = api.analyze(hostile, with_timeline=True).analysis
    # the op rows' host time is negative: every output says which figure is wrong
    assert {v.figure for v in a.violations} >= {"breakdown.ops['aten::linear'].cpu_ns"}
    tl = a.steps.timeline
    assert tl is not None
    host = [b for b in tl.blocks if tl.lanes[b.lane].kind == "host"]
    assert host and all(b.dur_ns >= 0 and b.work_ns == 0 for b in host)


def test_synthetic_edited_ingest_folder_rows_no_reader_writes_are_dropped(tmp_path: Path) -> None:
    """An ingest folder of the 2xH100 export, edited: one kernel at -(2**63 - 1), one lasting
    2**62 ns, one with a negative duration. The HTML timeline raised (or asked for 1.4 PiB) and
    summaries went negative; the folder's reader drops the three rows and says so."""
    folder = api.ingest(api.load(H100X2), tmp_path / "ingest")
    path = folder / "kernels.parquet"
    k = pq.read_table(path)
    start, dur = k["start_ns"].to_pylist(), k["duration_ns"].to_pylist()
    start[0], dur[1], dur[2] = -(2**63 - 1), 2**62, -5
    k = k.set_column(k.schema.get_field_index("start_ns"), k.schema.field("start_ns"), [start])
    k = k.set_column(k.schema.get_field_index("duration_ns"), k.schema.field("duration_ns"), [dur])
    pq.write_table(k, path)
    run = api.load(folder)
    assert run.kernels is not None and run.kernels.num_rows == k.num_rows - 3
    assert any("dropped 3 rows of kernels.parquet" in n for n in run.meta.notes)
    view = api.analyze(run, with_timeline=True)
    assert view.analysis.steps.timeline is not None
    assert all(sum(r.parts) == r.span_ns and min(r.parts) >= 0 for r in view.analysis.steps.rows)
    summary = json.loads(api.render_json(view))
    assert summary["time"]["gpu_kernel_ns"] > 0
    assert "<html" in api.render_html(view).lower()


def test_synthetic_unedited_ingest_folder_keeps_every_row(tmp_path: Path) -> None:
    run = api.load(H100X2)
    again = api.load(api.ingest(run, tmp_path / "ingest"))
    for name in ("kernels", "memory", "ops", "ranges"):
        assert getattr(again, name).num_rows == getattr(run, name).num_rows, name
    assert again.meta.notes == run.meta.notes
