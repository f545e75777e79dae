"""The DLProf Viewer database reader against the real database and DLProf's CSV reports of the same
run (``../shared/realtraces/dlprof/v1.8-pytorch-cnn/``): the CSVs are what DLProf showed its user,
so every figure read from the database must agree with them."""

from __future__ import annotations

import csv
import dataclasses
import shutil
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from profiles import budget

from tcreport.errors import InputError
from tcreport.ingest import detect
from tcreport.ingest.dlprof import viewer_db as dlprof_sqlite
from tcreport.model import (
    Granularity,
    IterationMethod,
    ReportedFigures,
    Run,
    RunMeta,
    SourceFormat,
)
from tcreport.schema import MemoryKind, TableKind, validate

pytestmark = pytest.mark.realtraces

DB = "dlprof_dldb_7.sqlite"
ELIGIBLE_GPU_NS = {  # dlprof_tensor_core.csv, "Total GPU Time (ns)"
    "CONV2D_1": 306779,
    "CONV2D_2": 233823,
    "LINEAR_1": 12960,
    "LINEAR_2": 10368,
    "LINEAR_3": 8833,
}


@pytest.fixture
def db(dlprof_cnn: Path) -> Path:
    return dlprof_cnn / DB


@pytest.fixture
def run(db: Path) -> Run:
    return dlprof_sqlite.read(db)


Report = Callable[[str], list[dict[str, str]]]


@pytest.fixture
def report(dlprof_cnn: Path) -> Report:
    """DLProf's CSV reports of the same run: line 1 is a title, line 2 the header."""

    def read(name: str) -> list[dict[str, str]]:
        with (dlprof_cnn / name).open(newline="") as fh:
            fh.readline()
            return list(csv.DictReader(fh))

    return read


def _col(table: pa.Table, name: str) -> list[object]:
    col = table.column(name)
    if pa.types.is_dictionary(col.type):
        col = col.cast(pa.string())
    values: list[object] = col.to_pylist()
    return values


# -- sniffing ----------------------------------------------------------------------------------


def test_sniff_accepts_the_viewer_database(db: Path) -> None:
    assert dlprof_sqlite.sniff(db)
    assert detect(db) is SourceFormat.DLPROF_SQLITE


def test_sniff_rejects_nsys_export_directory_csv_and_empty(db: Path, tmp_path: Path) -> None:
    assert not dlprof_sqlite.sniff(db.parent / "nsys_profile.sqlite")
    assert not dlprof_sqlite.sniff(db.parent)
    assert not dlprof_sqlite.sniff(db.parent / "dlprof_summary.csv")
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    assert not dlprof_sqlite.sniff(empty)


# -- metadata and DLProf's own figures ---------------------------------------------------------


def test_meta_system_and_gpu(run: Run) -> None:
    meta = run.meta
    assert meta.format is SourceFormat.DLPROF_SQLITE
    assert meta.path.endswith(DB)
    assert meta.files == (DB,)
    assert meta.profiler == "DLProf v1.8.0"
    assert meta.profiler_version == "1.8.0"
    assert meta.framework == "PyTorch 1.10.1+cu102"
    assert meta.cuda_version == "11.7"
    assert meta.cudnn_version is None  # the database holds an empty string
    assert meta.driver_version == "515.43.04"
    assert meta.kernel_granularity is Granularity.LAUNCH
    assert meta.op_granularity is Granularity.AGGREGATE
    (gpu,) = meta.gpus
    assert (gpu.device_id, gpu.name, gpu.compute_capability, gpu.sm_count) == (
        0,
        "NVIDIA GeForce RTX 2070 SUPER",
        "7.5",
        40,
    )
    assert meta.notes == ()
    assert RunMeta.from_json(meta.to_json()) == meta


def test_reported_figures_match_dlprof_summary(run: Run) -> None:
    rep = run.meta.reported
    assert rep.gpu_utilization == pytest.approx(0.020359 / 100)  # model_summary holds a percent
    assert dataclasses.replace(rep, gpu_utilization=None) == ReportedFigures(
        wall_ns=2840562182,
        all_kernel_ns=655837,
        gpu_kernel_ns=589147,
        tc_kernel_ns=0,
        memory_ns=66690,
        unique_kernels=27,
        op_count=36,
        op_gpu_ns=644990,
        eligible_op_count=5,
        using_op_count=0,
        using_gpu_ns=0,
        eligible_not_using_op_count=5,
        eligible_not_using_gpu_ns=572668,
        tc_kernel_utilization=0.0,
    )
    # the summary CSV prints DLProf's percentages rounded to one decimal: 0.0 % here
    assert rep.gpu_utilization is not None and round(rep.gpu_utilization * 100, 1) == 0.0


def test_iteration_info(run: Run) -> None:
    it = run.meta.iterations
    assert (it.total, it.aggregated, it.start, it.stop) == (1, 1, 0, 0)
    assert it.mean_ns == 2840562182.0 and it.std_ns == 0.0
    assert it.key_node is None  # "key op  not found": DLProf stored an empty key node
    assert it.method is IterationMethod.DLPROF
    assert run.iterations is not None
    assert run.iterations.to_pylist() == [{"iteration": 0, "start_ns": 0, "end_ns": 2840562182}]


def test_source_findings_are_dlprof_expert_systems(run: Run, report: Report) -> None:
    ids = [f.id for f in run.meta.source_findings]
    assert ids == [
        "amp_detector",
        "underutilized_gpu_detector",
        "dataloader_detector",
        "no_iterations_detector",
    ]
    csv_rows = report("dlprof_expert_systems.csv")
    assert [(f.problem, f.recommendation) for f in run.meta.source_findings] == [
        (r["Problem"], r["Recommendation"]) for r in csv_rows
    ]


# -- tables ------------------------------------------------------------------------------------


def test_tables_are_canonical(run: Run) -> None:
    for table, kind in (
        (run.kernels, TableKind.KERNELS),
        (run.memory, TableKind.MEMORY),
        (run.ops, TableKind.OPS),
        (run.iterations, TableKind.ITERATIONS),
    ):
        assert table is not None
        validate(table, kind)


def test_kernels_total_launches_and_names(run: Run) -> None:
    k = run.kernels
    assert k is not None
    assert k.num_rows == 59
    assert pc.sum(k.column("duration_ns")).as_py() == 589147
    assert pc.count_distinct(k.column("name").cast(pa.string())).as_py() == 27
    assert set(_col(k, "calls")) == {1}
    assert set(_col(k, "profiler_uses_tc")) == {False}
    assert set(_col(k, "iteration")) == {0}
    assert k.column("uses_tc").null_count == 59  # tcreport's verdict is left to analysis
    assert run.ops is not None
    assert set(_col(k, "op_id")) <= set(_col(run.ops, "op_id"))


def test_kernels_match_dlprof_iteration_report_launch_by_launch(run: Run, report: Report) -> None:
    assert run.kernels is not None
    fields = ["name", "op_id", "start_ns", "duration_ns", "launch_ns", "device_id"]
    fields += ["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "long_name"]
    ours = Counter(zip(*(_col(run.kernels, f) for f in fields), strict=True))
    theirs = Counter(
        (
            r["Kernel Name"],
            r["Op ID"],
            int(r["GPU Start Time (ns)"]),
            int(r["GPU Duration (ns)"]),
            int(r["API Call Start (ns)"]),
            int(r["Device ID"]),
            *(int(r[f"{g} {a}"]) for g in ("Grid", "Block") for a in "XYZ"),
            r["Long Kernel Name"],
        )
        for r in report("dlprof_iteration.csv")
    )
    assert ours == theirs


def test_kernel_totals_match_dlprof_kernelreport(run: Run, report: Report) -> None:
    assert run.kernels is not None
    grouped = (
        pa.table({"name": _col(run.kernels, "name"), "op": _col(run.kernels, "op_id")})
        .append_column("d", run.kernels.column("duration_ns"))
        .group_by(["name", "op"])
        .aggregate([("d", "sum")])
    )
    ours = {(r["name"], r["op"]): r["d_sum"] for r in grouped.to_pylist()}
    theirs = {
        (r["Kernel Name"], r["Op ID"]): int(r["Total GPU Time (ns)"])
        for r in report("dlprof_kernel.csv")
    }
    assert ours == theirs


def test_memory_is_dlprof_memory_row(run: Run) -> None:
    m = run.memory
    assert m is not None
    assert pc.sum(m.column("duration_ns")).as_py() == 66690
    kinds = m.group_by("kind").aggregate([("duration_ns", "sum"), ("bytes", "count")])
    got = {str(r["kind"]): (r["duration_ns_sum"], r["bytes_count"]) for r in kinds.to_pylist()}
    assert got == {MemoryKind.HTOD.value: (57698, 13), MemoryKind.MEMSET.value: (8992, 4)}


def test_ops_eligible_gpu_time_matches_tensor_corereport(run: Run, report: Report) -> None:
    ops = run.ops
    assert ops is not None and ops.num_rows == 36
    eligible = ops.filter(pc.equal(ops.column("profiler_tc_eligible"), True))
    assert dict(zip(_col(eligible, "op_id"), _col(eligible, "gpu_ns"), strict=True)) == (
        ELIGIBLE_GPU_NS
    )
    assert set(_col(ops, "profiler_uses_tc")) == {False}
    tc_csv = {r["Op ID"]: r for r in report("dlprof_tensor_core.csv")}
    for row in eligible.to_pylist():
        assert row["name"] == tc_csv[row["op_id"]]["Op Name"]
        assert row["type"] == tc_csv[row["op_id"]]["Op Type"]
        assert row["direction"] == tc_csv[row["op_id"]]["Direction"] == "fprop"
        assert row["dtype"] == "float32"


def test_ops_match_dlprof_detailedreport(run: Run, report: Report) -> None:
    """Calls, CPU time and DLProf's node GPU time (``gpu_total_ns``) for every op."""
    assert run.ops is not None
    ours = {
        r["op_id"]: (r["name"], r["type"], r["calls"], r["cpu_ns"], r["gpu_total_ns"])
        for r in run.ops.to_pylist()
    }
    theirs = {
        r["Op ID"]: (
            r["Op Name"],
            r["Op Type"],
            int(r["No. Calls"]),
            int(r["Total CPU Time (ns)"]),
            int(r["Total GPU Time (ns)"]),
        )
        for r in report("dlprof_detailed.csv")
    }
    assert ours == theirs
    flags = {r["Op ID"]: r["TC Eligible"] == "yes" for r in report("dlprof_detailed.csv")}
    assert dict(
        zip(_col(run.ops, "op_id"), _col(run.ops, "profiler_tc_eligible"), strict=True)
    ) == (flags)


def test_op_types_match_dlprof_op_typereport(run: Run, report: Report) -> None:
    assert run.ops is not None
    by_type = run.ops.group_by("type").aggregate([("op_id", "count"), ("calls", "sum")])
    ours = {str(r["type"]): (r["op_id_count"], r["calls_sum"]) for r in by_type.to_pylist()}
    theirs = {
        r["Op Type"]: (int(r["# Ops"]), int(r["# Calls"])) for r in report("dlprof_op_type.csv")
    }
    assert ours == theirs


def test_op_scope_shapes_and_kernel_calls(run: Run) -> None:
    assert run.ops is not None
    conv = next(r for r in run.ops.to_pylist() if r["op_id"] == "CONV2D_1")
    assert conv["scope"] == conv["name"].rsplit("/", 1)[0]
    assert conv["input_shapes"] == "[[32,3,32,32],[6,3,3,3],[6]]"
    assert conv["output_shapes"] == "[[32,6,30,30]]"
    assert conv["kernel_calls"] == 24
    assert conv["start_ns"] is None  # aggregated rows


# -- bad input ---------------------------------------------------------------------------------


def _copy(db: Path, tmp_path: Path, name: str = "synthetic_copy.sqlite") -> Path:
    dst = tmp_path / name
    shutil.copyfile(db, dst)
    dst.chmod(0o644)
    return dst


def test_empty_file_and_directory_raise_input_error(db: Path, tmp_path: Path) -> None:
    empty = tmp_path / "dlprof_dldb.sqlite"
    empty.touch()
    with pytest.raises(InputError, match="empty"):
        dlprof_sqlite.read(empty)
    with pytest.raises(InputError, match="directory"):
        dlprof_sqlite.read(db.parent)
    with pytest.raises(InputError, match="not an SQLite"):
        dlprof_sqlite.read(db.parent / "dlprof_summary.csv")


def test_truncated_database_raises_input_error(db: Path, tmp_path: Path) -> None:
    cut = _copy(db, tmp_path, "synthetic_truncated.sqlite")
    data = cut.read_bytes()
    cut.write_bytes(data[: len(data) // 3])
    with pytest.raises(InputError):
        dlprof_sqlite.read(cut)


def test_overwritten_pages_raise_input_error(db: Path, tmp_path: Path) -> None:
    bad = _copy(db, tmp_path, "synthetic_overwritten.sqlite")
    data = bytearray(bad.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    for start in range(page, len(data), page):  # every page header after the schema page
        data[start : start + 16] = b"\xa5" * 16
    bad.write_bytes(bytes(data))
    with pytest.raises(InputError, match="SQLite"):
        dlprof_sqlite.read(bad)


def test_other_tools_database_names_missing_tables(db: Path) -> None:
    nsys = db.parent / "nsys_profile.sqlite"
    assert not dlprof_sqlite.sniff(nsys)
    with pytest.raises(InputError) as err:
        dlprof_sqlite.read(nsys)
    assert "read_only_ops" in err.value.reason and "read_only_kernels" in err.value.reason


def _drop(path: Path, *tables: str) -> None:
    with sqlite3.connect(path) as con:
        for t in tables:
            con.execute(f"DROP TABLE {t}")


def test_missing_optional_table_still_reads(db: Path, tmp_path: Path) -> None:
    """Synthetic: the real database less ``expert_systems_feedback``."""
    path = _copy(db, tmp_path, "synthetic_no_feedback.sqlite")
    _drop(path, "expert_systems_feedback")
    run = dlprof_sqlite.read(path)
    assert run.meta.source_findings == ()
    assert any("expert_systems_feedback" in n for n in run.meta.notes)
    assert run.meta.reported.gpu_kernel_ns == 589147
    assert run.kernels is not None and run.kernels.num_rows == 59


def test_without_dlprof_aggregation_tables(db: Path, tmp_path: Path) -> None:
    """Synthetic: only the raw ``read_only_*`` records left; figures become unknown, not 0."""
    path = _copy(db, tmp_path, "synthetic_raw_only.sqlite")
    _drop(path, "op_nodes", "model_summary", "kernel_iteration_node", "iteration_list",
          "kernel_summary_metrics", "read_only_grid_block")  # fmt: skip
    run = dlprof_sqlite.read(path)
    assert run.meta.reported.gpu_kernel_ns is None
    assert run.meta.reported.wall_ns is None
    assert run.iterations is None
    k, ops = run.kernels, run.ops
    assert k is not None and ops is not None
    assert pc.sum(k.column("duration_ns")).as_py() == 589147
    assert k.column("iteration").null_count == k.column("grid_x").null_count == 59
    assert ops.num_rows == 36 and set(_col(ops, "calls")) == {1}  # one instance each
    assert ops.column("profiler_tc_eligible").null_count == 36
    gpu = dict(zip(_col(ops, "op_id"), _col(ops, "gpu_ns"), strict=True))
    assert {op: gpu[op] for op in ELIGIBLE_GPU_NS} == ELIGIBLE_GPU_NS


def test_latest_aggregation_wins(db: Path, tmp_path: Path) -> None:
    """Synthetic: a second aggregation, as the Viewer adds when the user re-aggregates."""
    path = _copy(db, tmp_path, "synthetic_two_aggregations.sqlite")
    with sqlite3.connect(path) as con:
        cols = [r[1] for r in con.execute("PRAGMA table_info(model_summary)") if r[1] != "id"]
        picked = ", ".join(
            "2" if c == "aggr_id" else "123" if c == "wall_time" else c for c in cols
        )
        con.execute(
            f"INSERT INTO model_summary ({', '.join(cols)}) SELECT {picked} FROM model_summary"
        )
    run = dlprof_sqlite.read(path)
    assert run.meta.reported.wall_ns == 123
    assert any("aggregation 2" in n for n in run.meta.notes)
    assert run.ops is not None  # op_nodes hold no rows for aggregation 2: DLProf flags unknown
    assert run.ops.column("profiler_tc_eligible").null_count == 36


def test_dangling_dictionary_id_is_input_error(db: Path, tmp_path: Path) -> None:
    path = _copy(db, tmp_path, "synthetic_dangling.sqlite")
    with sqlite3.connect(path) as con:
        con.execute("UPDATE read_only_kernels SET name_id = 999999 WHERE id = 1")
    with pytest.raises(InputError, match="without name"):
        dlprof_sqlite.read(path)


@settings(
    max_examples=budget(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    hits=st.lists(
        st.tuples(
            st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
            st.binary(min_size=1, max_size=64),
        ),
        min_size=1,
        max_size=8,
    )
)
@example(hits=[(0.3203125, b"\x80")])  # a schema name CPython cannot decode in the error message
def test_random_corruption_reads_or_raises_input_error(
    db: Path, hits: list[tuple[float, bytes]]
) -> None:
    data = bytearray(db.read_bytes())
    for where, junk in hits:
        at = int(where * len(data))
        data[at : at + len(junk)] = junk
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "synthetic_corrupt.sqlite"
        path.write_bytes(bytes(data[: len(data)]))
        try:
            run = dlprof_sqlite.read(path)
        except InputError:
            return
    for table, kind in ((run.kernels, TableKind.KERNELS), (run.ops, TableKind.OPS)):
        assert table is not None
        validate(table, kind)


def test_a_column_mixing_floats_and_huge_integers_is_an_input_error(tmp_path: Path) -> None:
    """Found by benchmarks/fuzz.py (dlprof-sqlite seed 4011): pyarrow cannot hold 2**62+ and 0.5
    in one column, and its ArrowInvalid escaped as a traceback."""
    from tcreport.ingest.common import sqlite as common_sqlite

    db = tmp_path / "mixed_synthetic.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (x)")
    con.executemany("INSERT INTO t VALUES (?)", [(0.5,), (-(2**62) - 1,)])
    con.commit()
    con.close()
    with common_sqlite.connect(db) as ro, pytest.raises(InputError, match="mixed types"):
        common_sqlite.query_arrow(ro, "SELECT x FROM t", ["x"], db)


@pytest.mark.parametrize("column", ["avg_iteration_time", "iteration_time_std_dev"])
def test_a_negative_iteration_time_is_an_input_error(
    dlprof_cnn: Path, tmp_path: Path, column: str
) -> None:
    """Found by benchmarks/fuzz.py: the database's mean and spread were passed on as negative."""
    from tcreport import api

    db = tmp_path / "dlprof_dldb_7.sqlite"
    shutil.copy(dlprof_cnn / "dlprof_dldb_7.sqlite", db)
    with sqlite3.connect(db) as con:
        con.execute(f"UPDATE model_summary SET {column} = -5")
    with pytest.raises(InputError, match="is negative"):
        api.load(db)
