"""Nsight Systems SQLite reader: DLProf's own figures for the same run are the expectations."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from trace_paths import NSYS_H100_REAL, SAMPLES

from tcreport.errors import InputError
from tcreport.ingest import detect, load
from tcreport.ingest.nsys import db as _nsys_db
from tcreport.ingest.nsys import nvtx_nesting as _nvtx_nesting
from tcreport.ingest.nsys import nvtx_scan as _nvtx_scan
from tcreport.ingest.nsys import reader as nsys_sqlite
from tcreport.model import Granularity, IterationMethod, Run, SourceFormat
from tcreport.schema import TableKind, validate

pytestmark = pytest.mark.realtraces


@pytest.fixture
def cnn_export(dlprof_cnn: Path) -> Path:
    return dlprof_cnn / "nsys_profile.sqlite"


def _validate_all(run: object) -> None:
    for kind in TableKind:
        table = getattr(run, kind.value)
        if table is not None:
            validate(table, kind)


# --- DLProf's CNN run: figures from dlprof_summary.csv / dlprof_tensor_core.csv -----------------


def test_cnn_kernel_and_memory_totals(cnn_export: Path) -> None:
    run = nsys_sqlite.read(cnn_export)
    _validate_all(run)
    k = run.kernels
    assert k is not None and run.memory is not None
    assert k.num_rows == 59
    assert pc.sum(k["duration_ns"]).as_py() == 589147
    assert pc.count_distinct(k["name"].cast(pa.string())).as_py() == 27
    assert pc.sum(run.memory["duration_ns"]).as_py() == 66690
    assert run.meta.reported.wall_ns == 2840562182
    assert run.meta.kernel_granularity is Granularity.LAUNCH
    assert k["launch_ns"].null_count == 0
    first = k.slice(0, 1).to_pylist()[0]
    assert first["name"] == "implicit_convolve_sgemm"
    assert first["long_name"].startswith("void cudnn::detail::implicit_convolve_sgemm<float")
    assert (first["process_id"], first["correlation_id"], first["start_ns"]) == (
        743,
        534,
        2835448822,
    )
    assert first["launch_ns"] == 2835431565  # DLProf's "API Call Start" for this launch
    assert (first["grid_x"], first["block_x"]) == (900, 8)


def test_cnn_metadata(cnn_export: Path) -> None:
    meta = nsys_sqlite.read(cnn_export).meta
    assert meta.format is SourceFormat.NSYS_SQLITE
    assert meta.profiler == "Nsight Systems 2022.1.3.3"
    assert meta.framework == "PyTorch 1.10.1+cu102"
    assert (meta.cuda_version, meta.driver_version) == ("11.7", "515.43.04")
    (gpu,) = meta.gpus
    assert (gpu.device_id, gpu.name, gpu.compute_capability, gpu.sm_count) == (
        0,
        "NVIDIA GeForce RTX 2070 SUPER",
        "7.5",
        40,
    )
    assert meta.iterations.total == 1 and meta.iterations.method is IterationMethod.WHOLE_RUN


def test_cnn_tensor_core_eligible_ops_match_dlprof(cnn_export: Path) -> None:
    run = nsys_sqlite.read(cnn_export)
    ops = run.ops
    assert ops is not None and run.meta.op_granularity is Granularity.LAUNCH
    rows = {r["op_id"]: r for r in ops.to_pylist()}
    expected = {  # dlprof_tensor_core.csv: CONV2D_1, CONV2D_2, LINEAR_1..3
        "conv2d_1": 306779,
        "conv2d_2": 233823,
        "linear_1": 12960,
        "linear_2": 10368,
        "linear_3": 8833,
    }
    assert {k: rows[k]["gpu_ns"] for k in expected} == expected
    conv = rows["conv2d_1"]
    assert conv["name"] == (
        "/module/dummy_network::_call_impl/dummy_network::forward/Conv2d::_call_impl/"
        "Conv2d::forward/Conv2d::_conv_forward/conv2d"
    )
    assert rows["conv2d_2"]["name"].endswith(
        "/Conv2d::_call_impl[2]/Conv2d::forward/Conv2d::_conv_forward/conv2d"
    )
    assert conv["dtype"] == "float32"
    assert conv["input_shapes"] == "[[32, 3, 32, 32], [6, 3, 3, 3], [6]]"
    assert conv["cpu_ns"] == 2306368  # dlprof_detailed.csv "Total CPU Time"
    assert rows["linear_1"]["gpu_total_ns"] == 13632  # dlprof_detailed.csv, memory included
    assert rows["linear_1"]["kernel_calls"] == 3
    assert run.kernels is not None
    kernel_sum = pc.sum(
        pc.filter(run.kernels["duration_ns"], pc.equal(run.kernels["op_id"], "conv2d_1"))
    )
    assert kernel_sum.as_py() == 306779


def test_cnn_op_types_match_dlprof_op_type_report(cnn_export: Path) -> None:
    """dlprof_op_type.csv, less the two "unassociated" cudaDeviceSynchronize pseudo-ops DLProf
    makes from runtime calls outside any op (not NVTX ranges, so not ops here)."""
    ops = nsys_sqlite.read(cnn_export).ops
    assert ops is not None
    counts = {
        r["type"]: r["count"]
        for r in pc.value_counts(ops["type"].cast(pa.string())).to_pylist()
        for r in [{"type": r["values"], "count": r["counts"]}]
    }
    assert counts == {
        "conv2d": 2,
        "cuda": 11,
        "flatten": 1,
        "linear": 3,
        "max_pool2d": 2,
        "randn": 1,
        "relu": 4,
        "uniform_": 10,
    }
    by_type = ops.group_by("type").aggregate([("gpu_total_ns", "sum")]).to_pylist()
    totals = {str(r["type"]): r["gpu_total_ns_sum"] for r in by_type}
    assert totals["cuda"] == 55938  # memcpy-only ops: their copies are their GPU time
    assert totals["relu"] == 9088 and totals["max_pool2d"] == 7296
    assert totals["linear"] == 32833


def test_cnn_non_op_range_goes_to_ranges(cnn_export: Path) -> None:
    ranges = nsys_sqlite.read(cnn_export).ranges
    assert ranges is not None
    assert ranges["name"].cast(pa.string()).to_pylist() == ['{"model_config": {"emit_nvtx": true}}']


# --- H100 x2 export (2026.2.1, no TARGET_INFO_GPU) -------------------------------------------


def test_h100_per_device_figures(nsys_h100: Path) -> None:
    run = nsys_sqlite.read(nsys_h100)
    _validate_all(run)
    k = run.kernels
    assert k is not None
    assert k.num_rows == 3587
    per_dev = {r["device_id"]: r["count"] for r in _counts(k, "device_id")}
    assert per_dev == {0: 1793, 1: 1794}
    assert {r["process_id"] for r in _counts(k, "process_id")} == {148, 149}
    assert [(g.device_id, g.name) for g in run.meta.gpus] == [(0, None), (1, None)]
    assert run.meta.profiler_version == "2026.2.1.210"
    assert run.meta.driver_version == "580.95.05" and run.meta.cuda_version == "13.0"
    assert k["launch_ns"].null_count < 20
    assert run.memory is not None and run.memory.num_rows == 904 + 242
    kinds = {r["kind"]: r["count"] for r in _counts(run.memory, "kind")}
    assert kinds == {"memcpy HtoD": 32, "memcpy DtoD": 872, "memset": 242}
    # wall: the file is a cut-down export (META_DATA_EXPORT.DERIVED_WINDOW_NS starts at
    # 72896979304), so its span runs from the window's start, not the lost session's start
    assert run.meta.reported.wall_ns == 73196976680 - 72896979304


def test_h100_autograd_nvtx_ops(nsys_h100: Path) -> None:
    run = nsys_sqlite.read(nsys_h100)
    ops, k = run.ops, run.kernels
    assert ops is not None and k is not None
    types = {str(r["type"]) for r in _counts(ops, "type")}
    assert {"aten::linear", "FlashAttnFunc", "AllToAll4D", "aten::layer_norm"} <= types
    assert not any(t.startswith("FSDP::") for t in types)  # record_function labels are ranges
    # every kernel launched inside an op range is attributed, and the op sums agree
    attributed = pc.sum(pc.filter(k["duration_ns"], pc.is_valid(k["op_id"]))).as_py()
    assert attributed == pc.sum(ops["gpu_ns"]).as_py()
    assert k["op_id"].null_count <= 10
    assert pc.count_distinct(ops["op_id"].cast(pa.string())).as_py() == ops.num_rows
    linear = ops.filter(pc.equal(ops["type"], "aten::linear")).slice(0, 1).to_pylist()[0]
    assert linear["op_id"] == "aten::linear_1" and linear["kernel_calls"] >= 1
    assert ops["device_id"].null_count < ops.num_rows
    ranges = run.ranges
    assert ranges is not None and ranges.num_rows > 0
    assert all(n.startswith("FSDP::") for n in ranges["name"].cast(pa.string()).to_pylist())


def _counts(table: pa.Table, col: str) -> list[dict[str, object]]:
    vc = pc.value_counts(
        table[col].cast(table.schema.field(col).type.value_type)
        if pa.types.is_dictionary(table.schema.field(col).type)
        else table[col]
    )
    return [{col: r["values"], "count": r["counts"]} for r in vc.to_pylist()]


def test_sample_copy_is_the_same_file() -> None:
    # the real one itself, never its bundled stand-in (trace_paths.real_or_bundled relies on this)
    if not NSYS_H100_REAL.exists():
        pytest.skip(f"real trace not available: {NSYS_H100_REAL}")
    sample = SAMPLES / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"
    assert sample.read_bytes() == NSYS_H100_REAL.read_bytes()
    assert (SAMPLES / "nsys-h100x2-bf16" / "README.md").exists()


# --- 2022 Windows export: old metadata table, a non-UTF-8 TEXT value -------------------------


def test_windows_2022_export_reads(nsys_win2022: Path) -> None:
    run = nsys_sqlite.read(nsys_win2022)
    _validate_all(run)
    assert run.kernels is not None and run.kernels.num_rows == 9
    names = set(run.kernels["name"].cast(pa.string()).to_pylist())
    assert names <= {f"test{i}" for i in range(5)} and names
    assert run.meta.profiler_version == "2022.1.1.61"  # from EXPORT_META_DATA (2022 spelling)
    assert run.kernels["process_id"].to_pylist()[0] == 32084
    assert [g.name for g in run.meta.gpus] == ["GeForce GTX 1060 with Max-Q Design"]
    assert run.meta.gpus[0].compute_capability == "6.1"
    assert run.meta.driver_version == "426.00" and run.meta.cuda_version == "10.1"
    assert run.ops is None and run.meta.op_granularity is Granularity.NONE


# --- detection -------------------------------------------------------------------------------


def test_sniff(cnn_export: Path, dlprof_cnn: Path, nsys_h100: Path, tmp_path: Path) -> None:
    assert nsys_sqlite.sniff(cnn_export)
    assert nsys_sqlite.sniff(nsys_h100)
    assert not nsys_sqlite.sniff(dlprof_cnn / "dlprof_dldb_7.sqlite")
    assert not nsys_sqlite.sniff(dlprof_cnn)
    assert not nsys_sqlite.sniff(dlprof_cnn / "dlprof_summary.csv")
    assert detect(nsys_h100) is SourceFormat.NSYS_SQLITE
    assert load(nsys_h100).kernels is not None
    empty = tmp_path / "plain.sqlite"
    sqlite3.connect(empty).execute("CREATE TABLE t (x)").connection.commit()
    assert not nsys_sqlite.sniff(empty)


# --- bad input -------------------------------------------------------------------------------


def test_truncated_export_raises_input_error(nsys_h100: Path, tmp_path: Path) -> None:
    data = nsys_h100.read_bytes()
    for keep in (100, 4096, len(data) // 3, len(data) - 4096):
        bad = tmp_path / f"cut{keep}.sqlite"
        bad.write_bytes(data[:keep])
        with pytest.raises(InputError):
            nsys_sqlite.read(bad)


def test_garbage_in_pages_raises_input_error(nsys_win2022: Path, tmp_path: Path) -> None:
    bad = tmp_path / "garbled.sqlite"
    shutil.copyfile(nsys_win2022, bad)
    raw = bytearray(bad.read_bytes())
    rng = np.random.default_rng(7)
    for off in rng.integers(4096, len(raw), 200):
        raw[int(off)] ^= 0xFF
    bad.write_bytes(bytes(raw))
    with contextlib.suppress(InputError):  # the only acceptable failure
        nsys_sqlite.read(bad)


def test_export_without_cuda_or_nvtx_tables_is_an_input_error(tmp_path: Path) -> None:
    """Decision: an export with no CUPTI and no NVTX tables (profiled without ``--trace=cuda``) has
    nothing tcreport can report; an error that says how to fix the capture beats an empty report."""
    path = tmp_path / "cpu_only.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    con.execute("CREATE TABLE OSRT_API (start INTEGER, end INTEGER)")
    con.commit()
    con.close()
    assert not nsys_sqlite.sniff(path)
    with pytest.raises(InputError, match="--trace=cuda"):
        nsys_sqlite.read(path)


def test_export_with_empty_kernel_table_reads_as_empty_run(tmp_path: Path) -> None:
    path = tmp_path / "idle.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    con.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, "
        "streamId INTEGER, correlationId INTEGER, globalPid INTEGER, shortName INTEGER, demangledName INTEGER)"
    )
    con.commit()
    con.close()
    run = nsys_sqlite.read(path)
    _validate_all(run)
    assert run.kernels is not None and run.kernels.num_rows == 0
    assert run.meta.reported.wall_ns == 0


# --- nesting, on synthetic ranges ------------------------------------------------------------


def test_nesting_depth_parent_and_point_queries() -> None:
    # thread 0: A[0,100] > B[10,50] > C[20,30]; D[60,90]; E[100,120] touches A's end
    tcode = np.array([0, 0, 0, 0, 0, 1])
    start = np.array([0, 10, 20, 60, 100, 5])
    end = np.array([100, 50, 30, 90, 120, 8])
    nest = _nvtx_nesting.Nesting(tcode, start, end)
    assert nest.depth.tolist() == [0, 1, 2, 1, 0, 0]
    assert nest.parent.tolist() == [-1, 0, 1, 0, -1, -1]
    got = nest.innermost(
        np.array([0, 0, 0, 0, 0, 1, 1, -1]), np.array([25, 40, 55, 100, 130, 6, 9, 25])
    )
    assert got.tolist() == [2, 1, 0, 4, -1, 5, -1, -1]


def test_nesting_survives_huge_time_spans() -> None:
    tcode = np.array([0, 0, 3_000_000])
    start = np.array([0, 2**61, 0])
    end = np.array([2**62, 2**61 + 5, 10])
    nest = _nvtx_nesting.Nesting(tcode, start, end)
    assert nest.parent.tolist() == [-1, 0, -1]
    assert nest.innermost(np.array([0, 3_000_000]), np.array([2**61 + 1, 5])).tolist() == [1, 2]


def _same_run(a: Run, b: Run) -> None:
    for kind in TableKind:
        x, y = getattr(a, kind.value), getattr(b, kind.value)
        assert (x is None and y is None) or (x is not None and y is not None and x.equals(y)), kind
    assert a.meta == b.meta


@pytest.mark.parametrize("export", ["cnn", "h100", "win2022"])
def test_sqlite3_fallback_gives_the_same_tables(
    export: str,
    cnn_export: Path,
    nsys_h100: Path,
    nsys_win2022: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ADBC is an optional extra; without it the plain sqlite3 path must read the same rows."""
    path = {"cnn": cnn_export, "h100": nsys_h100, "win2022": nsys_win2022}[export]
    fast = nsys_sqlite.read(path)
    monkeypatch.setattr(_nsys_db, "_open_adbc", lambda path: None)
    _same_run(nsys_sqlite.read(path), fast)


@pytest.mark.parametrize("pooled", [True, False], ids=["thread-pool", "calling-thread"])
def test_small_chunks_and_batches_give_the_same_tables(
    nsys_h100: Path, cnn_export: Path, monkeypatch: pytest.MonkeyPatch, pooled: bool
) -> None:
    """Rowid ranges of a few hundred rows put ops and the ranges inside them in different chunks
    (so the merge must find what one chunk alone cannot), and 5-row batches make ADBC type
    columns from batches that are all NULL (textId) or all empty text. The chunks are scanned by
    the thread pool (as in every export of 16 MiB or more: these are smaller) and by the calling
    thread alone, and both give the tables one whole-table scan gives."""
    pools: list[int] = []
    real_pool = ThreadPoolExecutor

    def counted(workers: int) -> ThreadPoolExecutor:
        pools.append(workers)
        return real_pool(workers)

    for path in (nsys_h100, cnn_export):
        whole = nsys_sqlite.read(path)
        pools.clear()
        monkeypatch.setattr(_nsys_db, "CHUNK_ROWS", 7)
        monkeypatch.setattr(_nsys_db, "BATCH_ROWS", 5)
        monkeypatch.setattr(_nsys_db, "SMALL_EXPORT", 0 if pooled else 1 << 62)
        monkeypatch.setattr(_nsys_db, "_cpus", lambda: 2)  # a pool even on a one-core runner
        monkeypatch.setattr(_nsys_db, "ThreadPoolExecutor", counted)
        _same_run(nsys_sqlite.read(path), whole)
        assert (pools != []) == pooled
        monkeypatch.undo()


def test_merged_chunk_orders_give_the_sorted_tables(
    nsys_h100: Path, cnn_export: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The outline takes the ranges in (thread, start, -end) order merged from the chunks' own
    sorted orders; with the merge turned off it sorts them again, and the tables are the same."""
    monkeypatch.setattr(_nsys_db, "CHUNK_ROWS", 7)
    for path in (nsys_h100, cnn_export):
        merged = nsys_sqlite.read(path)
        with monkeypatch.context() as m:
            m.setattr(_nvtx_scan, "_MAX_CELLS", 0)
            _same_run(nsys_sqlite.read(path), merged)


def test_rows_out_of_time_order_across_chunks_are_sorted_again(
    nsys_h100: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An export whose NVTX rows are not in time order (here: written backwards) has chunks that
    are each sorted but do not join up: the seams between them are checked, the merge is refused,
    and the ranges are sorted as one table, as without the merge."""
    path = tmp_path / "backwards.sqlite"
    shutil.copyfile(nsys_h100, path)
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE nvtx_copy AS SELECT * FROM NVTX_EVENTS ORDER BY rowid DESC")
    con.execute("DELETE FROM NVTX_EVENTS")
    con.execute("INSERT INTO NVTX_EVENTS SELECT * FROM nvtx_copy")
    con.execute("DROP TABLE nvtx_copy")
    con.commit()
    con.close()
    monkeypatch.setattr(_nsys_db, "CHUNK_ROWS", 1000)
    seams: list[bool] = []
    checked = _nvtx_scan._seams_ordered

    def spy(*args: np.ndarray) -> bool:
        seams.append(checked(*args))
        return seams[-1]

    with monkeypatch.context() as m:
        m.setattr(_nvtx_scan, "_seams_ordered", spy)
        merged = nsys_sqlite.read(path)
    assert seams == [False]
    monkeypatch.setattr(_nvtx_scan, "_MAX_CELLS", 0)
    _same_run(nsys_sqlite.read(path), merged)
    forwards = nsys_sqlite.read(nsys_h100).ops
    assert merged.ops is not None and forwards is not None
    assert merged.ops.num_rows == forwards.num_rows


def test_start_end_ranges_land_in_ranges(cnn_export: Path, tmp_path: Path) -> None:
    """nvtxRangeStart/End ranges (eventType 60) may end on another thread, so they never nest and
    never own kernels: they are ranges, with no depth, and leave the ops as they were."""
    path = tmp_path / "with_start_end.sqlite"
    shutil.copyfile(cnn_export, path)
    con = sqlite3.connect(path)
    gtid = con.execute("SELECT globalTid FROM NVTX_EVENTS LIMIT 1").fetchone()[0]
    con.executemany(
        "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, endGlobalTid) "
        "VALUES (?, ?, 60, ?, ?, ?)",
        [
            (2_835_000_000, 2_836_000_000, "epoch 0", gtid, gtid + 1),
            (2_835_400_000, 2_835_500_000, "ProfilerStep#1", gtid, gtid),
        ],
    )
    con.commit()
    con.close()
    before, after = nsys_sqlite.read(cnn_export), nsys_sqlite.read(path)
    assert before.ops is not None and after.ops is not None and after.ops.equals(before.ops)
    assert after.kernels is not None and before.kernels is not None
    assert after.kernels["op_id"].equals(before.kernels["op_id"])
    ranges = after.ranges
    assert ranges is not None
    rows = {r["name"]: r for r in ranges.to_pylist()}
    assert set(rows) == {'{"model_config": {"emit_nvtx": true}}', "epoch 0", "ProfilerStep#1"}
    assert rows["epoch 0"]["depth"] is None and rows["ProfilerStep#1"]["depth"] is None
    assert rows["epoch 0"]["end_ns"] - rows["epoch 0"]["start_ns"] == 1_000_000
    assert ranges["start_ns"].to_pylist() == sorted(ranges["start_ns"].to_pylist())


def test_every_range_an_op_reads(cnn_export: Path, tmp_path: Path) -> None:
    """An export whose NVTX ranges are all ops (no marker or user range around them) has
    nothing to nest the ops in: they are read with no scope, and attribution is unchanged."""
    path = tmp_path / "only_ops.sqlite"
    shutil.copyfile(cnn_export, path)
    con = sqlite3.connect(path)
    con.execute("DELETE FROM NVTX_EVENTS WHERE text IS NULL OR text NOT LIKE '{''mod''%'")
    con.commit()
    con.close()
    before, after = nsys_sqlite.read(cnn_export), nsys_sqlite.read(path)
    assert after.ops is not None and before.ops is not None
    assert after.ops.num_rows == before.ops.num_rows > 0
    assert after.ops["scope"].null_count == after.ops.num_rows
    assert after.kernels is not None and before.kernels is not None
    assert after.kernels["op_id"].null_count == before.kernels["op_id"].null_count


def test_device_id_out_of_range_is_an_input_error(cnn_export: Path, tmp_path: Path) -> None:
    path = tmp_path / "huge_device.sqlite"
    shutil.copyfile(cnn_export, path)
    con = sqlite3.connect(path)
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET deviceId = 4611686018427387904")
    con.commit()
    con.close()
    with pytest.raises(InputError, match="unexpected value in an export column: memory.device_id"):
        nsys_sqlite.read(path)
