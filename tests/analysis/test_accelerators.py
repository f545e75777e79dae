"""Honest verdicts for every accelerator a PyTorch trace can come from.

The AMD MI250 trace is real. The others are synthetic (no licence-clean real file exists), written
from the event shapes libkineto emits: categories as ``ActivityType.cpp`` names them
(``mtia_runtime``, ``mtia_ccp_events``, ``cuda_profiler_range``), a range-profiler event per
kernel as ``CuptiRangeProfiler.cpp`` writes it (demangled kernel name, ``pid`` the device, the
counters in ``args``, times split evenly over the span, no correlation id), and an MTIA device
named "ARTEMIS" in ``deviceProperties`` as issue 27 reports.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from trace_paths import REALTRACES

from tcreport import api
from tcreport.analysis import tc_kernels
from tcreport.analysis.vendor import Vendor
from tcreport.ingest.kineto import reader as kineto
from tcreport.report import Report

MI250 = REALTRACES / "kineto" / "mi250-rocm-minitoy" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"


def _op(name: str, ts: float, dur: float, eid: int) -> dict[str, Any]:
    return {
        "ph": "X", "cat": "cpu_op", "name": name, "pid": 10, "tid": 11, "ts": ts, "dur": dur,
        "args": {"External id": eid},
    }  # fmt: skip


def _launch(cat: str, name: str, ts: float, corr: int, eid: int) -> dict[str, Any]:
    return {
        "ph": "X", "cat": cat, "name": name, "pid": 10, "tid": 11, "ts": ts, "dur": 5,
        "args": {"correlation": corr, "External id": eid},
    }  # fmt: skip


def _write(tmp_path: Path, devices: list[dict[str, Any]], events: list[dict[str, Any]]) -> Path:
    path = tmp_path / "synthetic_trace.json"
    doc = {"schemaVersion": 1, "deviceProperties": devices, "traceEvents": events}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _outputs(view: Report) -> list[str]:
    """The JSON, Markdown and terminal outputs (the HTML's words are the report page's)."""
    import io

    from rich.console import Console

    from tcreport.render import terminal

    buf = io.StringIO()
    terminal.render(view, Console(file=buf, width=200, highlight=False))
    return [api.render_json(view), api.render_markdown(view), buf.getvalue()]


# --- AMD ---------------------------------------------------------------------------------------


@pytest.mark.realtraces
def test_real_mi250_matrix_core_time_and_no_tensor_core_words() -> None:
    if not MI250.exists():
        pytest.skip("real trace not available")
    view = api.analyze(api.load(MI250))
    a = view.analysis
    assert (
        a.verdict.vendor is Vendor.AMD and a.time.tc_kernel_ns == 30_240
    )  # 30.24 µs on Matrix Cores
    for text in _outputs(view):
        assert "Tensor Core" not in text
        assert "NVIDIA" not in text and "nsys" not in text
    assert "AMD Matrix Core kernel time" in _outputs(view)[2]


def test_synthetic_rocm_device_missing_from_device_properties_keeps_the_listed_model(
    tmp_path: Path,
) -> None:
    """An MI300 process pinned to GPU 2: its kernels say device 2, deviceProperties lists id 0."""
    dev = {"id": 0, "name": "AMD Instinct MI300X", "computeMajor": 9, "computeMinor": 4}
    kernel = {
        "ph": "X", "cat": "kernel", "name": "Cijk_Alik_Bljk_BBS_BH_MT256x256x64_MI16x16x1_SN",
        "pid": 2, "tid": 0, "ts": 120, "dur": 40,
        "args": {"device": 2, "stream": 0, "correlation": 7, "External id": 1},
    }  # fmt: skip
    events = [_op("aten::mm", 100, 30, 1), _launch("cuda_runtime", "hipLaunchKernel", 105, 7, 1)]
    run = kineto.read(_write(tmp_path, [dev], [*events, kernel]))
    (gpu,) = run.meta.gpus
    assert (gpu.device_id, gpu.name, gpu.vendor, gpu.compute_capability) == (
        2, "AMD Instinct MI300X", "amd", None
    )  # fmt: skip
    assert any("device 2" in n and "lists 0" in n for n in run.meta.notes)
    view = api.analyze(run)
    assert view.analysis.verdict.vendor is Vendor.AMD
    assert all("unknown GPU" not in text for text in _outputs(view))


# --- MTIA --------------------------------------------------------------------------------------


def _mtia_trace(tmp_path: Path) -> Path:
    dev = {"id": 0, "name": "ARTEMIS", "totalGlobalMem": 68719476736}
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 10, "tid": 11,
         "ts": 90, "dur": 400},
        _op("aten::linear", 100, 60, 1),
        _op("aten::addmm", 102, 50, 2),
        _launch("mtia_runtime", "launchKernel", 110, 21, 2),
        _op("aten::relu", 170, 20, 3),
        _launch("mtia_runtime", "launchKernel", 175, 22, 3),
        {"ph": "X", "cat": "mtia_ccp_events", "name": "fc_fwd_kernel", "pid": 0, "tid": 1,
         "ts": 200, "dur": 80, "args": {"correlation": 21}},
        {"ph": "X", "cat": "mtia_ccp_events", "name": "relu_kernel", "pid": 0, "tid": 1,
         "ts": 290, "dur": 20, "args": {"correlation": 22}},
        {"ph": "X", "cat": "mtia_insight", "name": "insight", "pid": 0, "tid": 2, "ts": 200,
         "dur": 100},
    ]  # fmt: skip
    return _write(tmp_path, [dev], events)


def test_synthetic_mtia_trace_names_the_accelerator_and_gives_no_verdict(tmp_path: Path) -> None:
    run = kineto.read(_mtia_trace(tmp_path))
    assert run.kernels is not None and run.kernels.num_rows == 2
    assert [(g.device_id, g.name, g.vendor) for g in run.meta.gpus] == [(0, "ARTEMIS", "meta")]
    view = api.analyze(run)
    a = view.analysis
    assert a.verdict.vendor is Vendor.META and not a.host.cpu_only
    assert a.time.gpu_kernel_ns == 100_000 and a.time.tc_kernel_ns == 0
    assert all(k.uses_tc is None for k in a.breakdown.kernels)  # unknown, never "no"
    assert {o.name: o.gpu_ns for o in a.breakdown.ops if o.gpu_ns} == {
        "aten::addmm": 80_000,
        "aten::relu": 20_000,
    }
    assert not [f for f in view.findings if f.id in ("TC001", "TC003", "TC004")]
    (tc002,) = [f for f in view.findings if f.id == "TC002"]
    assert tc002.title == "No matrix-unit verdict for ARTEMIS"
    for text in _outputs(view):
        assert "CPU-only" not in text and "ARTEMIS" in text
        assert "Tensor Core" not in text.replace("tensor_core", "")


def test_synthetic_accelerator_events_alone_are_not_a_cpu_only_run(tmp_path: Path) -> None:
    """Only device events tcreport cannot read (MTIA insight), and ops: device activity."""
    events = [
        _op("aten::mm", 100, 30, 1),
        {"ph": "X", "cat": "mtia_insight", "name": "i", "pid": 0, "tid": 2, "ts": 110, "dur": 9},
    ]
    run = kineto.read(_write(tmp_path, [{"id": 0, "name": "ARTEMIS"}], events))
    assert run.meta.device_events_unread == 1
    assert any("mtia_insight 1" in n for n in run.meta.notes)
    view = api.analyze(run)
    assert not view.analysis.host.cpu_only
    assert all("CPU-only" not in text for text in _outputs(view))


# --- CUPTI range profiler ----------------------------------------------------------------------

TENSOR = "sm__inst_executed_pipe_tensor.sum"
HFMA = "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum"
#: Without it a tensor-pipe count is no verdict: HFMA2.MMA moves run on the tensor pipe too.
HFMA2_MMA = "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum"


def _range(name: str, ts: float, counters: dict[str, float]) -> dict[str, Any]:
    return {
        "ph": "X", "cat": "cuda_profiler_range", "name": name, "pid": 0, "tid": 0, "ts": ts,
        "dur": 100, "args": counters,
    }  # fmt: skip


def _range_trace(tmp_path: Path, with_time: bool) -> Path:
    t = {"gpu__time_duration.sum": 30_000} if with_time else {}
    u = {"gpu__time_duration.sum": 10_000} if with_time else {}
    events = [
        _op("aten::mm", 100, 30, 1),
        _launch("cuda_runtime", "cudaLaunchKernel", 105, 31, 1),
        _op("aten::add", 140, 20, 2),
        _launch("cuda_runtime", "cudaLaunchKernel", 145, 32, 2),
        # names no rule can judge: the counters decide
        _range("triton_tem_fused_mm_0", 1000, {TENSOR: 8192.0, HFMA2_MMA: 0.0, HFMA: 0.0, **t}),
        _range("triton_poi_fused_add_1", 1100, {TENSOR: 0.0, HFMA: 65536.0, **u}),
    ]
    dev = {"id": 0, "name": "NVIDIA A100-SXM4-40GB", "computeMajor": 8, "computeMinor": 0}
    return _write(tmp_path, [dev], events)


@pytest.mark.parametrize("with_time", [True, False])
def test_synthetic_cupti_range_profiler_trace_reads_each_range_as_a_kernel(
    tmp_path: Path, with_time: bool
) -> None:
    run = kineto.read(_range_trace(tmp_path, with_time))
    k = run.kernels
    assert k is not None and k.num_rows == 2
    assert k.column("counter_uses_tc").to_pylist() == [True, False]
    notes = " ".join(run.meta.notes)
    assert "CUPTI range profiler" in notes and "replayed under the profiler" in notes
    assert ("not measured" in notes) is not with_time
    view = api.analyze(run)
    a = view.analysis
    assert not a.host.cpu_only and a.verdict.vendor is Vendor.NVIDIA
    rows = {r.name: r for r in a.breakdown.kernels}
    assert rows["triton_tem_fused_mm_0"].uses_tc is True
    assert rows["triton_poi_fused_add_1"].uses_tc is False
    assert {r.tc_rule for r in a.breakdown.kernels} == {tc_kernels.COUNTER_RULE}
    assert a.verdict.classified_share == 1.0
    if with_time:  # gpu__time_duration.sum: the replayed kernels' own durations
        assert (a.time.gpu_kernel_ns, a.time.tc_kernel_ns) == (40_000, 30_000)
        assert {o.name: o.gpu_ns for o in a.breakdown.ops} == {
            "aten::mm": 30_000,
            "aten::add": 10_000,
        }
    for text in _outputs(view):
        assert "CPU-only" not in text


def test_synthetic_range_trace_parses_the_same_with_either_parser(tmp_path: Path) -> None:
    path = _range_trace(tmp_path, True)
    fast, slow = kineto.read_with(path, use_msgspec=True), kineto.read_with(path, use_msgspec=False)
    assert fast.kernels is not None and slow.kernels is not None
    assert fast.kernels.equals(slow.kernels) and fast.meta == slow.meta


# --- CUDA-graph replays ------------------------------------------------------------------------


def _kernel(name: str, ts: float, dur: float, corr: int) -> dict[str, Any]:
    return {
        "ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
        "args": {"device": 0, "stream": 7, "correlation": corr},
    }  # fmt: skip


def test_synthetic_cuda_graph_replays_belong_to_what_replayed_them(tmp_path: Path) -> None:
    """vLLM-style decoding: graph replays launched inside a record_function range (linked by its
    External id) and one launched outside every range; an ordinary op beside them."""
    annotation = {
        "ph": "X", "cat": "user_annotation", "name": "execute_model", "pid": 10, "tid": 11,
        "ts": 100, "dur": 300, "args": {"External id": 5},
    }  # fmt: skip
    events = [
        annotation,
        _launch("cuda_runtime", "cudaGraphLaunch", 150, 40, 5),
        _launch("cuda_runtime", "cudaGraphLaunch", 600, 41, 0),
        _op("aten::mm", 450, 30, 9),
        _launch("cuda_runtime", "cudaLaunchKernel", 455, 50, 9),
        _kernel("nvjet_tst_128x128_64x4_2x1_v_bz_TNT", 200, 40, 40),
        _kernel("void vllm::rms_norm_kernel<c10::BFloat16>(x)", 240, 10, 40),
        _kernel("nvjet_tst_128x128_64x4_2x1_v_bz_TNT", 700, 40, 41),
        _kernel("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn", 460, 20, 50),
    ]
    dev = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0}
    run = kineto.read(_write(tmp_path, [dev], events))
    assert any("replayed from CUDA graphs" in n for n in run.meta.notes)
    view = api.analyze(run)
    ops = {o.name: o for o in view.analysis.breakdown.ops}
    assert ops["execute_model"].type == "CUDA graph replay"
    assert ops["execute_model"].gpu_ns == 50_000
    assert ops["cudaGraphLaunch"].gpu_ns == 40_000  # no range encloses it: the launch owns it
    assert ops["aten::mm"].gpu_ns == 20_000
    assert view.analysis.breakdown.unattributed_kernel_ns == 0
    assert (
        sum(o.gpu_ns or 0 for o in view.analysis.breakdown.ops) == view.analysis.time.gpu_kernel_ns
    )


def test_range_counters_that_are_no_numbers_are_no_counts() -> None:
    """One column per counter name for every range event at once; a bool, a string, an int past
    float's range or a negative value is no count (hostile4), and an event without the counter
    has none."""
    from tcreport.ingest.kineto.columns import range_tensor_verdicts

    args: list[dict[str, Any]] = [
        {TENSOR: 8192, HFMA2_MMA: 0},  # ints are counts
        {TENSOR: True, HFMA2_MMA: False},
        {TENSOR: "8192", HFMA2_MMA: 0.0},  # the one count left is 0: none
        {TENSOR: 10**400, HFMA2_MMA: 0.0},
        {TENSOR: 4.0, HFMA2_MMA: -1.0},
        {TENSOR: 4.0, HFMA2_MMA: 4.0},
        {"name": "no counters"},
    ]
    assert range_tensor_verdicts(args) == [True, None, False, False, None, False, None]
