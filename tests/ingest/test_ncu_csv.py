"""Nsight Compute CSV reader: both pages, units, counters, bad input, and an analysis of ncu alone.

The fixtures are hand-written from ncu's documented layouts and real metric names (see
tests/fixtures/ncu_synthetic/README.md), for layouts and damaged values; real H200 output is read
in test_ncu_real.py.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import budget
from trace_paths import DLPROF_CNN, ROOT, need, real_or_bundled

from tcreport import api, schema
from tcreport.analysis import tc_kernels as tk
from tcreport.errors import InputError, TcreportError
from tcreport.ingest import detect
from tcreport.ingest.ncu import reader as ncu_csv
from tcreport.kernel_names import short_name
from tcreport.model import Granularity, SourceFormat

FIX = ROOT / "tests" / "fixtures" / "ncu_synthetic"
RAW = FIX / "ncu_raw_synthetic.csv"
DETAILS = FIX / "ncu_details_synthetic.csv"
NO_TENSOR = FIX / "ncu_no_tensor_metrics_synthetic.csv"
HEAD = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
    '"Block Size","Grid Size","Device","CC"'
)
LONG_HEAD = HEAD + ',"Section Name","Metric Name","Metric Unit","Metric Value"'


def _row(i: int, kernel: str, *rest: str) -> str:
    ident = [str(i), "1", "p", "h", kernel, "1", "7", "(128, 1, 1)", "(4, 2, 1)", "0", "8.0"]
    return ",".join(f'"{v}"' for v in [*ident, *rest])


def _write(tmp_path: Path, text: str, name: str = "ncu.csv") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


# --- detection ------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [RAW, DETAILS, NO_TENSOR], ids=lambda p: p.name)
def test_sniffed_by_content(path: Path, tmp_path: Path) -> None:
    assert ncu_csv.sniff(path)
    renamed = tmp_path / "profile.txt"  # suffixes are never trusted
    renamed.write_bytes(path.read_bytes())
    assert detect(renamed) is SourceFormat.NCU_CSV


def test_not_sniffed_for_other_inputs(tmp_path: Path) -> None:
    nsys_stats = _write(
        tmp_path, '"Time (%)","Total Time (ns)","Instances","Name"\n"1.0","5","1","k"\n'
    )
    assert not ncu_csv.sniff(nsys_stats)
    assert not ncu_csv.sniff(tmp_path)
    assert not ncu_csv.sniff(tmp_path / "absent.csv")


@pytest.mark.realtraces
def test_a_real_dlprof_kernel_report_is_not_taken_for_ncu(tmp_path: Path) -> None:
    """A DLProf kernel CSV is a CSV of kernels too: neither sniffed nor read as ncu output."""
    dlprof = need(DLPROF_CNN) / "dlprof_kernel.csv"
    assert not ncu_csv.sniff(dlprof)
    assert detect(dlprof) is SourceFormat.DLPROF_CSV
    _bad(tmp_path, dlprof.read_bytes(), "is this `ncu --csv` output")


# --- raw page -------------------------------------------------------------------------------------


def test_raw_page() -> None:
    run = ncu_csv.read(RAW)
    k = run.kernels
    assert k is not None
    schema.validate(k, schema.TableKind.KERNELS)
    assert k.column("name").to_pylist() == [
        "volta_sgemm_128x64_nn",
        "hmma_fprop_kernel",
        "vectorized_elementwise_kernel",
        "triton_tem_fused_mm_0",
        "volta_sgemm_128x64_nn",
    ]
    long = k.column("long_name").to_pylist()
    assert long[1].startswith("void cudnn::detail::hmma_fprop_kernel<float, 128")
    assert long[0] == "volta_sgemm_128x64_nn"
    # usecond with thousands separators -> exact integer nanoseconds
    assert k.column("duration_ns").to_pylist() == [1_205_500, 310_250, 4_060, 88_000, 1_198_750]
    # a bare HMMA count (no HFMA2.MMA count, no tensor-path ops) is no verdict: it may be moves
    assert k.column("counter_uses_tc").to_pylist() == [None, False, False, None, None]
    assert any("3 of 5 profiled launches executed tensor-pipe" in n for n in run.meta.notes)
    assert k.column("stream_id").to_pylist() == [7, 7, 7, 13, 7]
    assert k.column("process_id").to_pylist() == [31337] * 5
    assert (k.column("grid_x")[0].as_py(), k.column("grid_y")[0].as_py()) == (8, 16)
    assert k.column("block_x").to_pylist()[:2] == [256, 128]
    assert k.column("grid_x")[2].as_py() == 1024
    assert k.column("calls").to_pylist() == [1] * 5
    assert k.column("start_ns").null_count == 5  # ncu has no timeline
    m = run.meta
    assert (m.format, m.profiler, m.kernel_granularity) == (
        SourceFormat.NCU_CSV,
        "Nsight Compute",
        Granularity.LAUNCH,
    )
    assert len(m.gpus) == 1
    gpu = m.gpus[0]
    assert (gpu.device_id, gpu.name, gpu.compute_capability, gpu.sm_count) == (
        0,
        "Tesla V100-SXM2-16GB",
        "7.0",
        80,
    )
    assert m.files == (RAW.name,)
    assert "gpu-host-17" not in m.to_json() and "python3.10" not in m.to_json()  # privacy


def test_details_page_labels_units_and_rule_rows() -> None:
    run = ncu_csv.read(DETAILS)
    k = run.kernels
    assert k is not None
    assert k.column("name").to_pylist() == [
        "nvjet_tst_128x256_64x4_2x1_v_bz_TNT",
        "sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x32",
        "nvjet_tst_128x256_64x4_2x1_v_bz_TNT",
    ]
    # "Duration" in msecond, then usecond with a separator
    assert k.column("duration_ns").to_pylist() == [1_250_000, 612_480, 1_249_920]
    assert k.column("counter_uses_tc").to_pylist() == [True, False, True]  # Hopper gmma
    assert (k.column("block_x")[0].as_py(), k.column("grid_x")[1].as_py()) == (384, 66)
    gpu = run.meta.gpus[0]
    assert (gpu.name, gpu.compute_capability) == ("NVIDIA H100 80GB HBM3", "9.0")


def test_no_tensor_metrics_leaves_counter_null_and_names_decide() -> None:
    run = ncu_csv.read(NO_TENSOR)
    k = run.kernels
    assert k is not None
    assert k.column("counter_uses_tc").null_count == 3
    assert k.column("duration_ns").to_pylist() == [1_203_712, 402_176, 3_008]  # nsecond
    assert any("no tensor-pipe counters" in n for n in run.meta.notes)
    out = tk.classify_kernels(k)
    assert out.column("uses_tc").to_pylist() == [False, True, None]
    assert out.column("tc_rule").to_pylist() == ["sgemm", "volta-h884", None]


def test_label_name_metrics_ids_out_of_order_and_messages_inside(tmp_path: Path) -> None:
    text = "\n".join(
        [
            "some output of the profiled program",
            "==PROF== Connected to process 1 (/bin/app)",
            LONG_HEAD,
            _row(1, "k_b", "S", "Duration (gpu__time_duration.sum)", "second", "2.5e-06"),
            "==WARNING== a message in the middle",
            _row(1, "k_b", "S", "Executed Ipc (sm__inst_executed_pipe_tensor.sum)", "inst", "9"),
            _row(1, "k_b", "S", "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum", "", "0"),
            _row(0, "k_a", "S", "gpu__time_duration.sum", "ns", "1,000"),
            _row(0, "k_a", "S", "sm__inst_executed_pipe_tensor.sum", "inst", "n/a"),
            _row(0, "k_a", "S", "smsp__sass_thread_inst_executed_op_hmma_pred_on.sum", "", "0"),
            "==PROF== Disconnected from process 1",
        ]
    )
    k = ncu_csv.read(_write(tmp_path, text)).kernels
    assert k is not None
    assert k.column("name").to_pylist() == ["k_a", "k_b"]  # by ncu's ID
    assert k.column("duration_ns").to_pylist() == [1_000, 2_500]
    assert k.column("counter_uses_tc").to_pylist() == [False, True]


def test_missing_duration_counts_zero_with_a_note(tmp_path: Path) -> None:
    text = "\n".join(
        [HEAD + ',"sm__inst_executed_pipe_tensor.sum"', ",".join(['""'] * 11 + ['"inst"'])]
        + [_row(0, "k", "5")]
    )
    run = ncu_csv.read(_write(tmp_path, text))
    assert run.kernels is not None
    assert run.kernels.column("duration_ns").to_pylist() == [0]
    assert any("no gpu__time_duration.sum" in n for n in run.meta.notes)


@pytest.mark.parametrize(
    ("unit", "value", "ns"),
    [
        ("nsecond", "1,234", 1234),
        ("ns", "7", 7),
        ("usecond", "1.5", 1500),
        ("us", "2", 2000),
        ("msecond", "1,205.00", 1_205_000_000),
        ("ms", "0.001", 1000),
        ("second", "4.0e-05", 40_000),
        ("cycle", "10", None),
        ("usecond", "n/a", None),
        ("usecond", "-1", None),
    ],
)
def test_duration_units(unit: str, value: str, ns: int | None) -> None:
    assert ncu_csv.duration_ns(unit, value) == ns


@pytest.mark.parametrize(
    ("full", "short"),
    [
        ("volta_sgemm_128x64_nn", "volta_sgemm_128x64_nn"),
        ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm>(Params)", "Kernel2"),
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::threshold_kernel_impl"
            "<float>(at::TensorIteratorBase&, float, float)::{lambda(float, float)#1}, "
            "at::detail::Array<char*, 3> >(int, float)",
            "vectorized_elementwise_kernel",
        ),
        (
            "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10>(float*)",
            "softmax_warp_forward",
        ),
        ("k_a(float*)", "k_a"),
    ],
)
def test_short_names(full: str, short: str) -> None:
    assert short_name(full) == short


def test_tensor_metric_names() -> None:
    for name in (
        "sm__inst_executed_pipe_tensor.sum",
        "sm__inst_executed_pipe_tensor_op_hmma.sum",
        "sm__inst_executed_pipe_tensor_op_imma.sum",
        "sm__inst_executed_pipe_tensor_op_dmma.sum",
        "sm__inst_executed_pipe_tensor_op_gmma.sum",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
        "smsp__sass_thread_inst_executed_op_hmma_pred_on.sum",
        "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    ):
        assert ncu_csv.TENSOR_METRIC.search(name.split(".")[0]), name
    for name in ("smsp__inst_executed.sum", "dram__bytes_read.sum", "gpu__time_duration.sum"):
        assert not ncu_csv.TENSOR_METRIC.search(name.split(".")[0]), name


# --- bad input ------------------------------------------------------------------------------------


def _bad(tmp_path: Path, data: bytes, match: str, name: str = "bad_ncu.csv") -> None:
    p = tmp_path / name
    p.write_bytes(data)
    with pytest.raises(InputError, match=match) as info:
        ncu_csv.read(p)
    assert name in str(info.value) and "\n" not in str(info.value)


def test_empty_files(tmp_path: Path) -> None:
    _bad(tmp_path, b"", "empty")
    _bad(tmp_path, b" \n\r\n", "empty")


def test_truncated_files(tmp_path: Path) -> None:
    raw = RAW.read_bytes()
    cut_in_quote = raw[: raw.index(b"hmma_fprop_kernel<float") + 10]
    _bad(tmp_path, cut_in_quote, "line 11: .*truncated")
    lines = raw.splitlines(keepends=True)
    short_row = b"".join(lines[:10]) + b'"1","31337","python3.10"\n'
    _bad(tmp_path, short_row, "line 11: 3 fields where the header has 18")
    header_only = b"".join(lines[:9])
    _bad(tmp_path, header_only, "no profiled kernels")


def test_other_tools_csv_and_ncu_messages_only(tmp_path: Path) -> None:
    _bad(tmp_path, b'"Time (%)","Total Time (ns)","Name"\n"1.0","5","k"\n', "no CSV header")
    msgs = (
        b"==PROF== Connected to process 1\n==ERROR== The application returned an error code (1).\n"
    )
    _bad(tmp_path, msgs, "only ncu messages")


def test_not_utf8_and_binary(tmp_path: Path) -> None:
    latin1 = RAW.read_bytes().replace(b"gpu-host-17", b"gpu-h\xf6st")
    _bad(tmp_path, latin1, "not UTF-8")
    _bad(tmp_path, gzip.compress(RAW.read_bytes()), "not UTF-8")


def test_empty_id_in_details(tmp_path: Path) -> None:
    text = "\n".join([LONG_HEAD, _row(0, "k", "S", "gpu__time_duration.sum", "ns", "1")])
    bad = text.replace('"0","1","p"', '"","1","p"')
    _bad(tmp_path, bad.encode(), "empty 'ID'")


@settings(
    max_examples=budget(80),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_mutated_input_raises_only_tcreport_errors(tmp_path: Path, data: st.DataObject) -> None:
    src = data.draw(st.sampled_from([RAW, DETAILS, NO_TENSOR])).read_bytes()
    cut = data.draw(st.integers(0, len(src)))
    pos = data.draw(st.integers(0, max(cut - 1, 0)))
    junk = data.draw(st.binary(max_size=8))
    p = tmp_path / "mutated.csv"
    p.write_bytes(src[:pos] + junk + src[pos + len(junk) : cut])
    try:
        run = ncu_csv.read(p)
    except TcreportError:
        return
    assert run.kernels is not None
    schema.validate(run.kernels, schema.TableKind.KERNELS)


# --- an ncu run on its own ------------------------------------------------------------------------


def test_api_analyze_on_an_ncu_only_run() -> None:
    run = api.load(RAW)
    view = api.analyze(run)
    a = view.analysis
    rows = {k.name: k for k in a.breakdown.kernels}
    # its bare HMMA count decides nothing (HFMA2.MMA moves count there too): the name rule does
    assert rows["volta_sgemm_128x64_nn"].uses_tc is False
    assert rows["volta_sgemm_128x64_nn"].tc_rule == "sgemm"
    assert rows["hmma_fprop_kernel"].uses_tc is False
    assert rows["hmma_fprop_kernel"].tc_rule == tk.COUNTER_RULE
    assert {
        (d.name, d.name_verdict, d.counter_verdict) for d in a.verdict.counter_disagreements
    } == {("hmma_fprop_kernel", True, False)}
    assert a.time.timeline is None  # no timestamps in ncu output
    assert "Nsight Compute" in api.render_markdown(view)
    for text in (api.render_json(view), api.render_html(view)):
        assert "volta_sgemm_128x64_nn" in text


def test_real_kineto_trace_is_not_taken_for_ncu() -> None:
    trace = need(real_or_bundled("kineto/a100-tf32-alexnet"))
    for p in trace.iterdir():
        assert not ncu_csv.sniff(p)


def test_byte_order_mark_alone_is_an_empty_file(tmp_path: Path) -> None:
    """Found by the mutation test in CI: a file holding only a UTF-8 BOM."""
    p = tmp_path / "bom.csv"
    p.write_bytes(b"\xef\xbb\xbf")
    with pytest.raises(InputError, match="empty"):
        ncu_csv.read(p)


@pytest.mark.parametrize("value", ["9" * 50, "1e400", "9223372036854775807"])
def test_out_of_range_durations_are_not_a_traceback(tmp_path: Path, value: str) -> None:
    """Found by fuzzing: a duration past int64 (or infinite) made pyarrow raise OverflowError."""
    header = (
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
        '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
        '"Metric Value"\n'
    )
    row = (
        f'"0","1","p","h","k","1","7","(128, 1, 1)","(1, 1, 1)","0","8.0",'
        f'"GPU Speed Of Light Throughput","Duration","msecond","{value}"\n'
    )
    p = tmp_path / "huge_synthetic.csv"
    p.write_text(header + row)
    try:
        run = ncu_csv.read(p)
    except InputError:
        return
    assert run.kernels is not None
