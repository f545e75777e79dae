"""DLProf CSV reader: the real v1.8 reports reproduce DLProf's own figures; damaged input is InputError."""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import budget
from trace_paths import DLPROF_CNN

from tcreport.errors import InputError
from tcreport.ingest import detect
from tcreport.ingest.dlprof import csv_reader as dlprof_csv
from tcreport.model import Granularity, IterationMethod, Run, SourceFormat
from tcreport.schema import TableKind, validate

FIXTURES = Path(__file__).parents[1] / "fixtures"
OLD = FIXTURES / "dlprof_v0_synthetic_old_columns"
MULTI_GPU = FIXTURES / "dlprof_synthetic_multi_gpu"
REPORTS = (
    "dlprof_detailed.csv",
    "dlprof_expert_systems.csv",
    "dlprof_group_op.csv",
    "dlprof_iteration.csv",
    "dlprof_kernel.csv",
    "dlprof_op_type.csv",
    "dlprof_summary.csv",
    "dlprof_tensor_core.csv",
)
#: dlprof_tensor_core.csv, Total GPU Time (ns) of the five TC-eligible ops
TC_REPORT_GPU_NS = {
    "CONV2D_1": 306779,
    "CONV2D_2": 233823,
    "LINEAR_1": 12960,
    "LINEAR_2": 10368,
    "LINEAR_3": 8833,
}
#: dlprof_detailed.csv, Total GPU Time (ns) of the same ops (busy span incl. memcpy/memset)
DETAILED_GPU_NS = {
    "CONV2D_1": 309276,
    "CONV2D_2": 230559,
    "LINEAR_1": 13632,
    "LINEAR_2": 10368,
    "LINEAR_3": 8833,
}


@pytest.fixture(scope="module")
def cnn() -> Run:
    if not DLPROF_CNN.exists():
        pytest.skip(f"real trace not available: {DLPROF_CNN}")
    return dlprof_csv.read(DLPROF_CNN)


def _copy(dst: Path, names: tuple[str, ...], rename: str = "dlprof") -> Path:
    if not DLPROF_CNN.exists():
        pytest.skip(f"real trace not available: {DLPROF_CNN}")
    dst.mkdir(parents=True, exist_ok=True)
    for n in names:
        shutil.copy(DLPROF_CNN / n, dst / n.replace("dlprof", rename, 1))
    return dst


def _check_tables(run: Run) -> None:
    for kind, table in (
        (TableKind.KERNELS, run.kernels),
        (TableKind.MEMORY, run.memory),
        (TableKind.OPS, run.ops),
    ):
        if table is not None:
            validate(table, kind)


# --- the real run ---------------------------------------------------------------------------------


def test_sniff_real_folder_and_each_report(dlprof_cnn: Path) -> None:
    assert dlprof_csv.sniff(dlprof_cnn)
    for name in REPORTS:
        assert dlprof_csv.sniff(dlprof_cnn / name), name
    assert not dlprof_csv.sniff(dlprof_cnn / "nsys_profile.sqlite")
    assert not dlprof_csv.sniff(dlprof_cnn / "dlprof_dldb_7.sqlite")


def test_detect_picks_the_csv_reader(dlprof_cnn: Path) -> None:
    assert detect(dlprof_cnn) is SourceFormat.DLPROF_CSV
    assert detect(dlprof_cnn / "dlprof_kernel.csv") is SourceFormat.DLPROF_CSV
    assert detect(MULTI_GPU) is SourceFormat.DLPROF_CSV


def test_meta_of_real_run(cnn: Run) -> None:
    m = cnn.meta
    assert m.format is SourceFormat.DLPROF_CSV
    assert m.path == str(DLPROF_CNN)
    assert (m.profiler, m.profiler_version) == ("DLProf v1.8.0", "v1.8.0")
    assert m.framework == "PyTorch 1.10.1+cu102"
    assert (m.cuda_version, m.cudnn_version, m.driver_version) == ("11.7", None, "515.43.04")
    assert [(g.device_id, g.name, g.compute_capability) for g in m.gpus] == [
        (0, "NVIDIA GeForce RTX 2070 SUPER", None)
    ]
    it = m.iterations
    assert (it.total, it.start, it.stop, it.aggregated, it.key_node) == (1, 0, 0, 1, None)
    assert (it.mean_ns, it.std_ns, it.method) == (2840562182.0, 0.0, IterationMethod.DLPROF)
    assert m.files == REPORTS
    assert m.kernel_granularity is Granularity.LAUNCH
    assert m.op_granularity is Granularity.AGGREGATE
    assert "DLProf build 29839685" in m.notes


def test_reported_figures_of_real_summary(cnn: Run) -> None:
    r = cnn.meta.reported
    assert r.wall_ns == 2840562182
    assert (r.all_kernel_ns, r.gpu_kernel_ns, r.tc_kernel_ns, r.memory_ns) == (
        655837,
        589147,
        0,
        66690,
    )
    assert r.unique_kernels == 27
    assert (r.op_count, r.op_gpu_ns) == (36, 644990)
    assert (r.eligible_op_count, r.using_op_count, r.using_gpu_ns) == (5, 0, 0)
    assert (r.eligible_not_using_op_count, r.eligible_not_using_gpu_ns) == (5, 572668)
    assert (r.gpu_utilization, r.tc_kernel_utilization) == (0.0, 0.0)


def test_expert_systems_ids_match_the_viewer_database(cnn: Run) -> None:
    ids = [f.id for f in cnn.meta.source_findings]
    assert ids == [
        "amp_detector",
        "underutilized_gpu_detector",
        "dataloader_detector",
        "no_iterations_detector",
    ]
    amp = cnn.meta.source_findings[0]
    assert amp.problem == "5 ops were eligible to use tensor cores but none are using FP16"
    assert amp.recommendation.startswith("Try enabling AMP")


def test_kernels_are_the_compute_launches_of_the_iteration_report(cnn: Run) -> None:
    k = cnn.kernels
    assert k is not None
    _check_tables(cnn)
    assert k.num_rows == 59  # launches; the summary's figures below are compute kernels only
    assert pc.sum(k["duration_ns"]).as_py() == cnn.meta.reported.gpu_kernel_ns == 589147
    assert (
        pc.count_distinct(k["name"].cast("string")).as_py()
        == cnn.meta.reported.unique_kernels
        == 27
    )
    assert pc.all(pc.equal(k["calls"], 1)).as_py()
    assert not pc.any(k["profiler_uses_tc"]).as_py()
    assert k["start_ns"].null_count == k["launch_ns"].null_count == k["long_name"].null_count == 0
    assert cnn.memory is None  # DLProf's reports list no memcpy/memset rows; only the summary total
    first = k.slice(0, 1).to_pylist()[0]
    assert first["name"] == "computeOffsetsKernel" and first["op_id"] == "CONV2D_1"
    assert (first["start_ns"], first["duration_ns"], first["launch_ns"]) == (
        2835625461,
        2208,
        2835616288,
    )
    assert (first["grid_x"], first["block_x"], first["device_id"], first["iteration"]) == (
        8,
        128,
        0,
        0,
    )


def test_op_gpu_ns_is_the_sum_of_its_compute_kernels(cnn: Run) -> None:
    ops = cnn.ops
    assert ops is not None and cnn.kernels is not None
    assert ops.num_rows == cnn.meta.reported.op_count == 36
    rows = {r["op_id"]: r for r in ops.to_pylist()}
    for op_id, ns in TC_REPORT_GPU_NS.items():
        assert rows[op_id]["gpu_ns"] == ns, op_id
        assert rows[op_id]["gpu_total_ns"] == DETAILED_GPU_NS[op_id], op_id
        assert (
            rows[op_id]["profiler_tc_eligible"] is True and rows[op_id]["profiler_uses_tc"] is False
        )
    assert sum(r["gpu_ns"] for r in rows.values()) == 589147
    assert sum(r["gpu_total_ns"] for r in rows.values()) == cnn.meta.reported.op_gpu_ns
    eligible = sum(r["gpu_total_ns"] for r in rows.values() if r["profiler_tc_eligible"])
    assert eligible == cnn.meta.reported.eligible_not_using_gpu_ns == 572668
    assert (
        rows["CUDA_11"]["gpu_ns"] == 0 and rows["CUDA_11"]["gpu_total_ns"] == 31648
    )  # a memcpy op
    assert sum(r["kernel_calls"] for r in rows.values()) == 59


def test_op_fields(cnn: Run) -> None:
    assert cnn.ops is not None
    conv = next(r for r in cnn.ops.to_pylist() if r["op_id"] == "CONV2D_1")
    assert conv["name"].endswith("/Conv2d::_conv_forward/conv2d")
    assert conv["scope"] == conv["name"].rsplit("/", 1)[0]
    assert (conv["type"], conv["direction"], conv["dtype"], conv["calls"]) == (
        "conv2d",
        "fprop",
        "float32",
        1,
    )
    assert (conv["cpu_ns"], conv["kernel_calls"], conv["device_id"]) == (2306368, 24, 0)
    assert conv["input_shapes"] == "<N:32, C:3, H:32, W:32>; <K:6, C:3, R:3, S:3>; <6>"
    assert conv["output_shapes"] == "<N:32, K:6, P:30, Q:30>"
    sync = next(r for r in cnn.ops.to_pylist() if r["op_id"] == "CUDADEVICESYNCHRONIZE_V3020_1")
    assert (sync["scope"], sync["direction"], sync["dtype"]) == (None, None, None)


# --- subsets of the real reports ------------------------------------------------------------------


def test_only_summary_gives_every_summary_figure(tmp_path: Path, cnn: Run) -> None:
    run = dlprof_csv.read(_copy(tmp_path, ("dlprof_summary.csv",)))
    assert run.kernels is None and run.ops is None and run.memory is None
    assert run.meta.reported == cnn.meta.reported
    assert run.meta.iterations == cnn.meta.iterations and run.meta.gpus == cnn.meta.gpus
    assert run.meta.kernel_granularity is run.meta.op_granularity is Granularity.NONE
    assert run.meta.files == ("dlprof_summary.csv",)


def test_single_report_file_path(cnn: Run) -> None:
    run = dlprof_csv.read(DLPROF_CNN / "dlprof_summary.csv")
    assert run.meta.reported == cnn.meta.reported and run.meta.path == str(
        DLPROF_CNN / "dlprof_summary.csv"
    )


def test_only_detailed_keeps_profiler_gpu_total_and_leaves_gpu_ns_unknown(tmp_path: Path) -> None:
    run = dlprof_csv.read(_copy(tmp_path, ("dlprof_detailed.csv",)))
    assert run.kernels is None and run.ops is not None and run.ops.num_rows == 36
    assert run.ops["gpu_ns"].null_count == 36 and run.ops["kernel_calls"].null_count == 36
    assert pc.sum(run.ops["gpu_total_ns"]).as_py() == 644990
    assert run.meta.reported.wall_ns is None and run.meta.profiler == "DLProf"


def test_detailed_and_tensor_core_fill_gpu_ns_of_eligible_ops(tmp_path: Path) -> None:
    run = dlprof_csv.read(_copy(tmp_path, ("dlprof_detailed.csv", "dlprof_tensor_core.csv")))
    assert run.ops is not None
    got = {r["op_id"]: r["gpu_ns"] for r in run.ops.to_pylist() if r["gpu_ns"] is not None}
    assert got == TC_REPORT_GPU_NS


def test_kernel_report_gives_aggregate_kernels(tmp_path: Path) -> None:
    run = dlprof_csv.read(_copy(tmp_path, ("dlprof_kernel.csv", "dlprof_detailed.csv")))
    k = run.kernels
    assert k is not None and run.meta.kernel_granularity is Granularity.AGGREGATE
    assert k.num_rows == 49 and k["start_ns"].null_count == 49
    assert pc.sum(k["duration_ns"]).as_py() == 589147 and pc.sum(k["calls"]).as_py() == 59
    assert pc.count_distinct(k["name"].cast("string")).as_py() == 27
    assert run.ops is not None
    got = {r["op_id"]: r["gpu_ns"] for r in run.ops.to_pylist() if r["op_id"] in TC_REPORT_GPU_NS}
    assert got == TC_REPORT_GPU_NS


def test_tensor_core_or_op_type_report_alone(tmp_path: Path) -> None:
    tc = dlprof_csv.read(_copy(tmp_path / "tc", ("dlprof_tensor_core.csv",)))
    assert tc.ops is not None
    assert (
        dict(zip(tc.ops["op_id"].to_pylist(), tc.ops["gpu_ns"].to_pylist(), strict=True))
        == TC_REPORT_GPU_NS
    )
    types = dlprof_csv.read(_copy(tmp_path / "ot", ("dlprof_op_type.csv",)))
    assert types.ops is not None and "conv2d" in types.ops["type"].to_pylist()
    assert pc.sum(types.ops["gpu_total_ns"]).as_py() == 644990


def test_profile_name_prefix_is_irrelevant(tmp_path: Path, cnn: Run) -> None:
    run = dlprof_csv.read(_copy(tmp_path, REPORTS, rename="resnet_try3"))
    assert run.meta.files == tuple(sorted(n.replace("dlprof", "resnet_try3") for n in REPORTS))
    for t in ("kernels", "ops"):
        assert getattr(run, t).equals(getattr(cnn, t))
    assert run.meta.reported == cnn.meta.reported


def test_unrelated_files_in_the_folder_are_ignored(tmp_path: Path, cnn: Run) -> None:
    d = _copy(tmp_path, REPORTS)
    (d / "notes.csv").write_text("a,b,c\n1,2,3\n")
    (d / "blob.bin").write_bytes(b"\xff\xfe\x00")
    assert dlprof_csv.read(d).meta.files == REPORTS


# --- synthetic: what the real run lacks -----------------------------------------------------------


def test_old_version_columns_synthetic() -> None:
    run = dlprof_csv.read(OLD)
    _check_tables(run)
    m = run.meta
    assert (m.profiler, m.cudnn_version, m.iterations.key_node) == (
        "DLProf 0.16.0",
        "8.0.4",
        "global_step",
    )
    assert (m.iterations.total, m.iterations.aggregated, m.iterations.std_ns) == (3, 2, 100.5)
    assert (
        m.reported.op_count is None
        and m.reported.gpu_kernel_ns == 8000
        and m.reported.tc_kernel_ns == 6000
    )
    assert (m.reported.gpu_utilization, m.reported.tc_kernel_utilization) == (0.125, 0.8)
    assert "dlprof_group_node.csv" in m.files
    assert [f.id for f in m.source_findings] == ["dlprof_feedback_1", "no_iterations_detector"]
    assert run.kernels is not None and run.kernels["calls"].to_pylist() == [2, 2]
    assert run.kernels["op_id"].to_pylist() == [
        "model/conv1/Conv2D",
        "model/relu1/Relu",
    ]  # joined by name
    assert run.ops is not None
    ops = {r["op_id"]: r for r in run.ops.to_pylist()}
    assert (
        ops["model/conv1/Conv2D"]["gpu_ns"] == 6000
        and ops["model/conv1/Conv2D"]["gpu_total_ns"] == 7000
    )
    assert (
        ops["model/conv1/Conv2D"]["direction"] is None
        and ops["model/step/global_step"]["gpu_ns"] == 0
    )


def test_multi_gpu_summary_with_unquoted_commas_synthetic() -> None:
    run = dlprof_csv.read(MULTI_GPU)
    assert [(g.device_id, g.name) for g in run.meta.gpus] == [
        (0, "Tesla V100-SXM2-16GB"),
        (1, "Tesla V100-SXM2-16GB"),
    ]
    assert run.meta.files == ("run7_iteration.csv", "run7_summary.csv")
    assert run.kernels is not None and run.kernels["device_id"].to_pylist() == [0, 1]
    assert run.memory is not None and run.memory.to_pylist()[0]["kind"] == "memcpy"
    assert run.meta.reported.tc_kernel_ns == 8000 and run.meta.reported.eligible_op_count == 2


# --- bad input ------------------------------------------------------------------------------------


def _error(path: Path) -> str:
    with pytest.raises(InputError) as info:
        dlprof_csv.read(path)
    return str(info.value)


def test_empty_file(tmp_path: Path) -> None:
    f = tmp_path / "dlprof_kernel.csv"
    f.write_bytes(b"")
    assert "dlprof_kernel.csv" in _error(f) and "empty" in _error(f)


@pytest.mark.parametrize(
    "name", ["dlprof_iteration.csv", "dlprof_detailed.csv", "dlprof_kernel.csv"]
)
def test_truncated_mid_row_and_mid_quote(tmp_path: Path, name: str) -> None:
    data = _copy(tmp_path / "src", (name,)).joinpath(name).read_bytes()
    for cut in (data.rindex(b',"') + 5, data.rindex(b"\n", 0, len(data) - 1) + 12, len(data) // 2):
        f = tmp_path / f"cut{cut}" / name
        f.parent.mkdir()
        f.write_bytes(data[:cut])
        assert name in _error(f), cut


def test_csv_from_another_tool(tmp_path: Path) -> None:
    f = tmp_path / "dlprof_kernel.csv"
    f.write_text("a,b,c\n1,2,3\n")
    assert not dlprof_csv.sniff(f)
    msg = _error(f)
    assert "dlprof_kernel.csv" in msg and "not a DLProf report title" in msg


def test_missing_required_column_is_named(tmp_path: Path) -> None:
    f = tmp_path / "mine_kernel.csv"
    f.write_text("Kernel Report\nKernel,Op ID,Total GPU Time (ns)\nk,OP_1,5\n")
    msg = _error(f)
    assert "mine_kernel.csv" in msg and "'Kernel Name'" in msg and "line 2" in msg


def test_not_utf8(tmp_path: Path) -> None:
    f = tmp_path / "dlprof_summary.csv"
    f.write_bytes(b"System Config\nGPU Name(s),caf\xe9\xff\n")
    assert "dlprof_summary.csv" in _error(f) and "UTF-8" in _error(f)


def test_directory_without_reports(tmp_path: Path) -> None:
    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    assert not dlprof_csv.sniff(tmp_path)
    assert "no DLProf CSV reports" in _error(tmp_path)


def test_two_profiles_in_one_folder(tmp_path: Path) -> None:
    _copy(tmp_path, ("dlprof_kernel.csv",))
    _copy(tmp_path, ("dlprof_kernel.csv",), rename="other")
    assert "two DLProf kernel reports" in _error(tmp_path)


def test_bad_number_names_line_and_column(tmp_path: Path) -> None:
    f = tmp_path / "dlprof_summary.csv"
    f.write_text("Summary Report\nWall Clock Time (ns),soon\n")
    msg = _error(f)
    assert "dlprof_summary.csv" in msg and "line 2" in msg and "Wall Clock Time" in msg


@settings(max_examples=budget(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(REPORTS),
    edits=st.lists(
        st.tuples(
            st.sampled_from(["set", "insert", "delete", "cut"]),
            st.floats(0, 1),
            st.binary(min_size=1, max_size=3),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_mutated_reports_read_or_raise_input_error(
    name: str, edits: list[tuple[str, float, bytes]]
) -> None:
    if not DLPROF_CNN.exists():
        pytest.skip("real trace not available")
    data = bytearray((DLPROF_CNN / name).read_bytes())
    for op, where, blob in edits:
        i = min(int(where * len(data)), max(len(data) - 1, 0))
        if op == "set":
            data[i : i + len(blob)] = blob
        elif op == "insert":
            data[i:i] = blob
        elif op == "delete":
            del data[i : i + len(blob)]
        else:
            del data[i:]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for other in REPORTS:
            if other != name:
                shutil.copy(DLPROF_CNN / other, folder / other)
        (folder / name).write_bytes(bytes(data))
        for target in (folder, folder / name):
            try:
                run = dlprof_csv.read(target)
            except InputError as exc:
                assert str(exc)
            else:
                _check_tables(run)


@pytest.mark.parametrize(
    "key", ["Average Iteration Time (ns)", "Iteration Time Standard Deviation"]
)
def test_a_negative_iteration_time_in_the_summary_is_an_input_error(
    dlprof_cnn: Path, tmp_path: Path, key: str
) -> None:
    """Found by benchmarks/fuzz.py: the summary's mean and spread were passed on as negative."""
    run_dir = tmp_path / "run"
    shutil.copytree(dlprof_cnn, run_dir)
    summary = run_dir / "dlprof_summary.csv"
    lines = summary.read_text(encoding="utf-8").splitlines(keepends=True)
    summary.write_text(
        "".join(f"{key},-5.0\n" if line.startswith(key + ",") else line for line in lines),
        encoding="utf-8",
    )
    with pytest.raises(InputError, match=re.escape(f"'{key}' is negative (-5)")):
        dlprof_csv.read(run_dir)
