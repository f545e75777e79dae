"""Values no profiler writes stop at the edge of ingest, whatever the reader: a negative count or
time drops its row with a note naming the field and the value, and a column whose total would wrap
int64 is one error (exit 2) naming the file, the table and the field."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from synthetic import run_meta, synthetic_run
from trace_paths import REALTRACES

from tcreport import api, schema
from tcreport.errors import InputError
from tcreport.ingest.common import plausible
from tcreport.model import ReportedFigures, Run

DLPROF = REALTRACES / "dlprof" / "v1.8-pytorch-cnn"


def _folder(tmp_path: Path) -> Path:
    return api.ingest(synthetic_run("fp16"), tmp_path / "run")


def _set(folder: Path, table: str, column: str, values: list[int] | int) -> int:
    """Overwrite the first values of ``column`` (all of them for an int); returns the row count."""
    path = folder / f"{table}.parquet"
    t = pq.read_table(path)
    col = t.column(column).to_pylist()
    col = [values] * len(col) if isinstance(values, int) else values + col[len(values) :]
    i = t.schema.get_field_index(column)
    pq.write_table(t.set_column(i, t.schema.field(i), pa.array(col, pa.int64())), path)
    return int(t.num_rows)


def _summary(folder: Path) -> dict[str, object]:
    doc: dict[str, object] = json.loads(api.render_json(api.analyze(api.load(folder))))
    return doc


def test_edited_op_times_are_dropped_with_a_note_and_never_wrap_synthetic(tmp_path: Path) -> None:
    """Issue 28 case 2: ``gpu_ns`` of -1e12, -1 and 2**63-1 gave ``eligible_gpu_ns`` past int64
    (18446744073716762614) and crashed batch; those rows are now left out, and said so."""
    folder = _folder(tmp_path)
    rows = _set(folder, "ops", "gpu_ns", [-(10**12), -1, 2**63 - 1])
    run = api.load(folder)
    assert run.ops is not None and run.ops.num_rows == rows - 3
    note = next(n for n in run.meta.notes if n.startswith("dropped 3 rows of ops.parquet"))
    assert "gpu_ns = -1,000,000,000,000" in note
    tc = _summary(folder)["tensor_core"]
    assert isinstance(tc, dict)
    assert 0 <= tc["eligible_gpu_ns"] < 2**62


def test_every_op_time_at_int64_max_leaves_no_negative_total_synthetic(tmp_path: Path) -> None:
    """All ``gpu_ns`` at 2**63-1 summed to ``eligible_gpu_ns: -52``; now every row is dropped."""
    folder = _folder(tmp_path)
    _set(folder, "ops", "gpu_ns", 2**63 - 1)
    tc = _summary(folder)["tensor_core"]
    assert isinstance(tc, dict) and tc["eligible_gpu_ns"] in (0, None)


def test_a_column_whose_total_would_wrap_is_one_error_synthetic(tmp_path: Path) -> None:
    """Each value plausible (under a year), their sum past 2**60: no sum after it is safe."""
    n = plausible.MAX_SUM // plausible.MAX_TOTAL_NS + 1
    ops = schema.conform(
        {"op_id": [f"op{i}" for i in range(n)], "name": ["mm"] * n, "gpu_ns": [1] * n},
        schema.TableKind.OPS,
    )
    folder = api.ingest(Run(meta=run_meta(), ops=ops), tmp_path / "run")
    _set(folder, "ops", "gpu_ns", plausible.MAX_TOTAL_NS - 1)
    with pytest.raises(InputError) as info:
        api.load(folder)
    msg = str(info.value)
    assert msg.startswith(str(folder)) and "ops.parquet: gpu_ns sums to" in msg
    assert info.value.exit_code == 2 and "\n" not in msg


def test_negative_counts_and_launch_durations_are_dropped_synthetic(tmp_path: Path) -> None:
    """Issue 28 case 4, in an ingest folder: an op with ``calls: -5``, a kernel at ``-1`` ns."""
    folder = _folder(tmp_path)
    _set(folder, "ops", "calls", [-5])
    kernels = _set(folder, "kernels", "duration_ns", [-1])
    run = api.load(folder)
    assert run.kernels is not None and run.kernels.num_rows == kernels - 1
    assert run.ops is not None and min(run.ops.column("calls").to_pylist()) >= 0
    notes = " | ".join(run.meta.notes)
    assert "calls = -5" in notes and "duration_ns = -1" in notes


def _edit_csv(path: Path, column: str, value: str) -> None:
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    rows[2][rows[1].index(column)] = value  # title line, header line, first row
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)


@pytest.mark.realtraces
def test_negative_dlprof_counts_and_durations_are_dropped(tmp_path: Path) -> None:
    """Issue 28 case 4 as found: ``No. Calls`` -5 in the detailed report gave an op with
    ``calls: -5``; a -1 in the iteration report a kernel of -1 ns that lowered the total."""
    if not DLPROF.exists():
        pytest.skip("real DLProf reports not available")
    folder = tmp_path / "dlprof"
    folder.mkdir()
    for f in DLPROF.glob("*.csv"):
        shutil.copy(f, folder / f.name)
    whole = api.analyze(api.load(folder)).analysis.time.gpu_kernel_ns
    _edit_csv(folder / "dlprof_detailed.csv", "No. Calls", "-5")
    with (folder / "dlprof_iteration.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    first_kernel = int(rows[2][rows[1].index("GPU Duration (ns)")])
    _edit_csv(folder / "dlprof_iteration.csv", "GPU Duration (ns)", "-1")
    run = api.load(folder)
    assert run.ops is not None and min(run.ops.column("calls").to_pylist()) >= 0
    notes = " | ".join(run.meta.notes)
    assert "calls = -5" in notes and "duration_ns = -1" in notes
    after = api.analyze(run).analysis.time.gpu_kernel_ns
    assert whole is not None and after == whole - first_kernel  # left out, not subtracted twice


def test_impossible_profiler_figures_are_left_out_with_a_note_synthetic() -> None:
    """The profiler's own totals (DLProf's summary) follow the same rule as the rows."""
    meta = run_meta(
        reported=ReportedFigures(gpu_kernel_ns=-7, op_count=12, gpu_utilization=1.7),
    )
    run = plausible.checked(Run(meta=meta))
    assert run.meta.reported.gpu_kernel_ns is None and run.meta.reported.op_count == 12
    assert run.meta.reported.gpu_utilization is None
    assert any("gpu_kernel_ns, gpu_utilization" in n for n in run.meta.notes)


def test_positions_that_would_wrap_differences_are_dropped_synthetic() -> None:
    ranges = schema.conform(
        {
            "name": ["step", "step", "bad"],
            "start_ns": [0, 100, -(2**62)],
            "end_ns": [90, 50, 10],  # the second ends before it starts
        },
        schema.TableKind.RANGES,
    )
    run = plausible.checked(Run(meta=run_meta(), ranges=ranges))
    assert run.ranges is not None and run.ranges.column("name").to_pylist() == ["step"]
    assert any("dropped 2 rows of the ranges table" in n for n in run.meta.notes)


def test_sound_runs_pass_unchanged_synthetic() -> None:
    run = synthetic_run("bf16")
    assert plausible.checked(run) is run


def test_a_timed_row_counts_one_call_synthetic() -> None:
    """A row with a start is one event: no count beyond it. Aggregated rows keep theirs."""
    kernels = schema.conform(
        {
            "name": ["a", "b", "c"],
            "duration_ns": [5, 5, 5],
            "calls": [1, 7, 3],
            "start_ns": [1, 2, None],  # "c" is an aggregate over three launches
        },
        schema.TableKind.KERNELS,
    )
    run = plausible.checked(Run(meta=run_meta(), kernels=kernels))
    assert run.kernels is not None and run.kernels.column("name").to_pylist() == ["a", "c"]
    assert any("calls = 7, a count beyond the one timed event" in n for n in run.meta.notes)


def test_an_impossible_launch_time_is_forgotten_not_its_kernel_synthetic(tmp_path: Path) -> None:
    """Fuzz case ingest:776: every kernel's ``launch_ns`` set to 2**62 dropped every kernel, while
    the ops kept their GPU time, so eligible time exceeded kernel time. A launch past the clock's
    range (or long after its kernel ended) is now forgotten, the kernel kept and placed by its GPU
    time, and the figures hold."""
    folder = _folder(tmp_path)
    before = _summary(folder)
    rows = _set(folder, "kernels", "launch_ns", 2**62)
    run = api.load(folder)
    assert run.kernels is not None and run.kernels.num_rows == rows
    assert run.kernels["launch_ns"].null_count == rows
    assert any(n.startswith(f"ignored the launch time of {rows} rows") for n in run.meta.notes)
    after = _summary(folder)
    assert after["invariant_violations"] == []
    assert after["time"]["gpu_kernel_ns"] == before["time"]["gpu_kernel_ns"]  # type: ignore[index]
    (tmp_path / "fresh").mkdir()
    fresh = _folder(tmp_path / "fresh")
    first = pq.read_table(fresh / "kernels.parquet").slice(0, 1).to_pylist()[0]
    late = first["start_ns"] + first["duration_ns"] + 2 * plausible.LATE_LAUNCH_NS
    _set(fresh, "kernels", "launch_ns", [late])
    notes = api.load(fresh).meta.notes
    assert any(n.startswith("ignored the launch time of 1 row ") for n in notes), notes
