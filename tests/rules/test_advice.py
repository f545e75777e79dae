"""Findings that name the cause and the framework's own fix (issue 15): TF32 off from the kernel
names when the trace records no dtype, compilation inside the range, float16 where bfloat16 would
need no loss scaler, float32 ops outside autocast. The A100 sample is real; the rest synthetic."""

from __future__ import annotations

import dataclasses
import io
import json
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from synthetic import MS, US, kernel_row, op_row, range_row, synthetic_rows_run
from trace_paths import REALTRACES, SAMPLES
from typer.testing import CliRunner

from tcreport import api, fmt
from tcreport.analysis import host_time
from tcreport.analysis.figures import KernelRow
from tcreport.cli import app
from tcreport.errors import OptionError
from tcreport.model import AuditKey, AuditSetting, ModelAudit, Run, SourceFormat
from tcreport.render import terminal
from tcreport.report import Report

A100 = next((SAMPLES / "kineto-a100-tf32-alexnet").glob("*.json.gz"))
ALIGNED = "[[64, 512], [512, 512]]"


def _ids(run: Run) -> list[str]:
    return [f.id for f in api.analyze(run).findings]


def test_a100_sample_top_finding_is_tf32_off_with_the_pytorch_fix() -> None:
    view = api.analyze(api.load(A100))
    top = view.findings[0]
    assert top.id == "TC001" and "TF32" in top.title
    assert "torch.backends.cuda.matmul.allow_tf32 = True" in (top.fix or "")
    assert 'torch.set_float32_matmul_precision("high")' in (top.fix or "")
    # the trace's convolutions ran TF32 xmma kernels, so cuDNN's switch is on: only the matmuls'
    # switch is advice (naming both was advice to do nothing for half of it)
    assert "torch.backends.cudnn.allow_tf32" not in (top.fix or "")
    assert "GEMMs" in top.title and "convolutions" not in top.title
    assert "ampere_sgemm_32x32_sliced1x4_tn" in top.detail
    assert top.estimated_saving_ns and top.estimated_saving_ns > 1 * MS
    assert "why: unknown" not in " ".join(f.detail for f in view.findings)
    assert view.analysis.meta.framework == "PyTorch"  # Kineto is torch.profiler's tracer


def test_tf32_off_from_kernel_names_in_tensorflow_words_synthetic() -> None:
    run = synthetic_rows_run(
        kernels=[kernel_row("ampere_sgemm_128x64_nn", "mm", 1000, 800 * US)],
        ops=[op_row("mm", "MatMul", None, 800 * US)],
        framework="TensorFlow 2.15",
        cc="8.0",
    )
    (f,) = [f for f in api.analyze(run).findings if f.id == "TC001"]
    assert "enable_tensor_float_32_execution(True)" in (f.fix or "")


def test_jax_runs_get_jax_switches_never_tensorflows_synthetic() -> None:
    """JAX writes the same XSpace as TensorFlow, but tf.config and the Keras policy do nothing in
    JAX: its TF32 switch is jax_default_matmul_precision, its mixed precision a cast."""
    for dtype, rule in ((None, "TC001"), ("float32", "TC001")):
        run = synthetic_rows_run(
            kernels=[kernel_row("ampere_sgemm_128x64_nn", "mm", 1000, 800 * US)],
            ops=[op_row("mm", "dot_general", dtype, 800 * US)],
            framework="JAX",
            cc="8.0",
        )
        view = api.analyze(run)
        (f,) = [f for f in view.findings if f.id == rule]
        words = (f.fix or "") + " ".join(w.fix for w in view.analysis.verdict.why_not)
        assert "jax_default_matmul_precision" in words, words
        assert "tf.config" not in words and "tensor_float_32" not in words
        assert "set_global_policy" not in words and "torch" not in words
        (it001,) = [f for f in view.findings if f.id == "IT001"]
        assert "jax.profiler.StepTraceAnnotation" in (it001.fix or "")


def test_fp32_kernel_on_pre_ampere_is_not_called_tf32_synthetic() -> None:
    run = synthetic_rows_run(
        kernels=[kernel_row("volta_sgemm_128x64_nn", "mm", 1000, 800 * US)],
        ops=[op_row("mm", "linear", None, 800 * US)],
        cc="7.0",
    )
    (f,) = [f for f in api.analyze(run).findings if f.id == "TC001"]
    assert "TF32 is off" not in f.title and "no TF32" in (f.fix or "")


def test_tc004_names_outside_autocast_in_its_title_synthetic() -> None:
    """ "Outside autocast" only where the capture's audit saw the script enter one; a trace alone
    (or a script that casts by hand, as make/mix.py of the H200 sample) is "beside fp16/bf16"."""
    run = synthetic_rows_run(
        kernels=[
            kernel_row("volta_h884gemm_128x128_nn", "a", 1000, 100 * US),
            kernel_row("volta_sgemm_128x64_nn", "b", 200 * US, 300 * US),
        ],
        ops=[
            op_row("a", "linear", "float16", 100 * US, ALIGNED),
            op_row("b", "linear", "float32", 300 * US, ALIGNED),
        ],
    )
    (f,) = [f for f in api.analyze(run).findings if f.id == "TC004"]
    assert f.title == "1 eligible op run in float32 beside fp16/bf16 work"
    assert "autocast" not in f.detail and ".half()" in (f.fix or "")
    entered = AuditSetting(AuditKey.TORCH_AUTOCAST.value, "float16 on cuda", "train.py:30")
    for settings, title, words in (
        ((entered,), "outside autocast", "it is outside autocast"),
        ((), "beside fp16/bf16 work", "the script enters no autocast"),
    ):
        audited = run.replace(
            meta=dataclasses.replace(run.meta, audit=ModelAudit("pytorch", (), settings))
        )
        (f,) = [f for f in api.analyze(audited).findings if f.id == "TC004"]
        assert f.title == f"1 eligible op run in float32 {title}" and words in f.detail


def test_mix_trace_without_autocast_never_says_autocast() -> None:
    """make/mix.py (real, H200) computes fp16 GEMMs from fp16 tensors and an fp32 GEMM with TF32
    off, with no autocast anywhere: TC004 must not explain the fp32 GEMM by autocast."""
    view = api.analyze(api.load(SAMPLES / "h200-torch-cnn-ncu" / "mix" / "kineto_mix_h.json.gz"))
    (f,) = [f for f in view.findings if f.id == "TC004"]
    assert "beside fp16/bf16 work" in f.title
    assert "autocast" not in f.title + f.detail


def _compile_run(name: str, compile_ms: float) -> Run:
    return synthetic_rows_run(
        kernels=[kernel_row("volta_h884gemm_128x128_nn", None, 50 * MS, 10 * MS)],
        ranges=[
            range_row(name, 0, int(compile_ms * MS)),
            range_row("train_step", 0, 100 * MS),
        ],
        fmt=SourceFormat.KINETO_JSON,
    )


def test_it005_names_xla_and_torch_compile_compilation_synthetic() -> None:
    xla = api.analyze(_compile_run("_XlaCompile", 40))
    (f,) = [f for f in xla.findings if f.id == "IT005"]
    assert f.title.startswith("XLA compilation") and "drop_remainder" in (f.fix or "")
    dyn = api.analyze(_compile_run("TorchDynamo", 40))
    (g,) = [f for f in dyn.findings if f.id == "IT005"]
    assert g.title.startswith("torch.compile") and "mark_dynamic" in (g.fix or "")


def test_it005_silent_on_per_step_guards_synthetic() -> None:
    assert "IT005" not in _ids(_compile_run("TorchDynamo Cache Lookup", 40))
    assert "IT005" not in _ids(_compile_run("Torch-Compiled Region", 40))
    assert "IT005" not in _ids(_compile_run("_XlaCompile", 0.1))  # 1 % of the range


def _fp16_scaler_run(cc: str | None) -> Run:
    return synthetic_rows_run(
        kernels=[
            kernel_row("ampere_fp16_s16816gemm_fp16_128x128", "mm", 1000, 5 * MS),
            kernel_row("amp_update_scale_cuda_kernel", None, 6 * MS, 20 * US),
        ],
        ops=[op_row("mm", "linear", "float16", 5 * MS, ALIGNED)],
        cc=cc,
    )


def test_pr001_suggests_bf16_instead_of_loss_scaling_on_ampere_synthetic() -> None:
    view = api.analyze(_fp16_scaler_run("8.0"))
    (f,) = [f for f in view.findings if f.id == "PR001"]
    assert "torch.bfloat16" in (f.fix or "") and "GradScaler" in (f.fix or "")
    assert f.estimated_saving_ns == 20 * US
    assert "PR001" not in _ids(_fp16_scaler_run("7.0"))  # Volta has no bf16


def test_pr001_reads_ampere_from_kernel_names_when_the_gpu_is_unnamed_synthetic() -> None:
    """No model and no compute capability recorded (as in Kineto traces and nsys exports without a
    GPU table): the ampere_* GEMM says the GPU is Ampere or newer, so bfloat16 is there."""
    (f,) = [f for f in api.analyze(_fp16_scaler_run(None)).findings if f.id == "PR001"]
    assert "on cc 8.0" in f.detail


def test_findings_doc_lists_the_new_rules() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "findings.md").read_text("utf-8")
    for rule_id in ("PR001", "IT005", "CM001"):
        assert f"### {rule_id}" in doc


# --- fix first and communication ----------------------------------------------------------------

H100 = SAMPLES / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"


def test_h100_sample_reports_nccl_and_fix_first_is_actionable() -> None:
    view = api.analyze(api.load(H100))
    comm = view.analysis.communication.collectives
    assert comm is not None and comm.names == ("ncclDevKernel_SendRecv",)
    assert comm.kernel_ns == 33_742_101 and round(comm.kernel_share or 0, 3) == 0.069
    assert round(comm.max_device_share or 0, 3) == 0.094  # GPU 1
    ff = view.fix_first
    # CM002 (collectives on the compute stream, no overlap) names the cause, so it carries the
    # communication advice alone; CM001's share-only finding is for traces without a timeline
    assert ff is not None and ff.id == "CM002" and ff.severity in ("high", "medium")
    assert "CM001" not in [f.id for f in view.findings]
    assert "AllToAll4D" in ff.detail and (ff.estimated_saving_ns or 0) > 0
    assert "IT001" in [f.id for f in view.findings]  # the note is there, but not first
    summary = json.loads(api.render_json(view))
    assert summary["fix_first"]["id"] == "CM002"
    assert summary["communication"]["kernel_ns"] == 33_742_101
    assert "**Fix first:** `CM002`" in api.render_markdown(view)
    html = api.render_html(view)
    assert 'id="fix-first"' in html and "Fix first:" in html


def test_fix_first_on_the_a100_sample_is_the_tf32_finding() -> None:
    view = api.analyze(api.load(A100))
    assert view.fix_first is view.findings[0] and view.fix_first.id == "TC001"
    out = io.StringIO()
    terminal.render(view, Console(file=out, width=200))
    assert out.getvalue().splitlines()[1].startswith("Fix first: TC001: Matmul TF32 (")


def test_notes_never_take_the_fix_first_place_synthetic() -> None:
    run = synthetic_rows_run(kernels=[kernel_row("volta_h884gemm_128x128_nn", None, 1000, 10 * US)])
    view = api.analyze(run)
    assert [f.id for f in view.findings] == ["IT001"]
    assert view.fix_first is None
    assert json.loads(api.render_json(view))["fix_first"] is None
    assert "Fix first:** no actionable finding" in api.render_markdown(view)


def test_small_communication_is_no_finding_synthetic() -> None:
    run = synthetic_rows_run(
        kernels=[
            kernel_row("volta_h884gemm_128x128_nn", None, 1000, 100 * US),
            kernel_row("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", None, 200 * US, 2 * US),
        ]
    )
    view = api.analyze(run)
    assert view.analysis.communication.collectives is not None
    assert view.analysis.communication.collectives.kernel_ns == 2 * US
    assert "CM001" not in [f.id for f in view.findings]


# --- key-node suggestions ---------------------------------------------------------------------------


def test_h100_and_a100_samples_suggest_no_per_layer_op_as_key_node() -> None:
    for path, bad in ((H100, {"aten::linear", "aten::to", "aten::mul"}), (A100, set())):
        view = api.analyze(api.load(path))
        sel = view.analysis.iterations
        assert sel.candidates == ()  # nothing in these traces repeats once per step
        (it001,) = [f for f in view.findings if f.id == "IT001"]
        assert "none is suggested" in it001.detail
        for name in bad | {"_has_compatible_shallow_copy_type", "empty_strided"}:
            assert name not in it001.detail.replace("such as aten::linear", "")
        assert "record_function('train_step')" in (it001.fix or "")


def _steps_with_noise(marker: str, kind: str, n: int = 6) -> Run:
    """Synthetic: n steps of 10 ms, a step marker (an op or a range) in each, and per-layer ops
    at irregular times that repeat far more often than the marker."""
    kernels, ops, ranges = [], [], []
    for i in range(n):
        t0 = i * 10 * MS
        kernels.append(kernel_row("volta_h884gemm_128x128_nn", f"l{i}", t0 + 100, 2 * MS))
        for j, dt in enumerate((0, 1, 5, 6, 9)):  # layers: bursts, not a steady period
            ops.append({**op_row(f"l{i}-{j}", "linear", "float16", 0, start=t0 + dt * 100 * US)})
            ops[-1]["name"] = "aten::linear"
        if kind == "op":
            ops.append({**op_row(f"s{i}", marker, None, 0, start=t0 + 9 * MS)})
            ops[-1]["name"] = marker
        else:
            ranges.append(range_row(marker, t0, t0 + 10 * MS - 1))
    return synthetic_rows_run(kernels=kernels, ops=ops, ranges=ranges or None, cc="8.0")


def test_step_markers_are_suggested_with_their_confidence_synthetic() -> None:
    for marker, kind in (
        ("Optimizer.step#SGD.step", "op"),
        ("AssignAddVariableOp", "op"),
        ("train_step", "range"),
    ):
        run = _steps_with_noise(marker, kind)
        if kind == "range":  # a repeating outer range is used directly; ask as a fallback would
            from tcreport.analysis import key_nodes

            (cand,) = key_nodes.validated_candidates(run)
        else:
            view = api.analyze(run)
            cand = view.analysis.iterations.suggestions[0]
            (it001,) = [f for f in view.findings if f.id == "IT001"]
            assert f"--key-node {marker!r}" in (it001.fix or "")
            assert "aten::linear" not in view.analysis.iterations.candidates
        assert cand.name == marker and cand.occurrences == 6
        assert cand.confidence in ("high", "medium") and (cand.period_cv or 0) < 0.05


# --- iteration options that would do nothing ---------------------------------------------------------

runner = CliRunner()


def test_iter_start_past_a_one_iteration_trace_is_exit_2() -> None:
    result = runner.invoke(app, ["summary", str(A100), "--iter-start", "5"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--iter-start 5 is past the last iteration" in lines[0]
    assert "the run has 1 (0 to 0" in lines[0] and "(--allow-empty to aggregate anyway)" in lines[0]
    ok = runner.invoke(app, ["summary", str(A100), "--iter-start", "5", "--allow-empty"])
    assert ok.exit_code == 0


def test_unknown_key_node_is_exit_2_with_the_candidates() -> None:
    result = runner.invoke(app, ["summary", "--json", str(H100), "--key-node", "aten::nope"])
    assert result.exit_code == 2 and result.stdout == ""
    assert "'aten::nope' never occurs" in result.stderr
    assert "repeat once per iteration here: none found" in result.stderr
    ok = runner.invoke(app, ["summary", "--json", str(H100), "--key-node", "x", "--allow-empty"])
    assert ok.exit_code == 0
    doc = json.loads(ok.stdout)  # the sample is a 2-rank job: its rank shown in full
    assert any(f["id"] == "IT001" for f in doc["detail"]["summary"]["findings"])


def test_unknown_key_node_lists_validated_candidates_synthetic() -> None:
    with pytest.raises(OptionError) as raised:
        api.analyze(_steps_with_noise("Optimizer.step#SGD.step", "op"), api.Slice(key_node="nope"))
    msg = str(raised.value)
    assert (
        raised.value.reason.startswith("key_node 'nope' never occurs")
        and "'Optimizer.step#SGD.step'" in msg
    )


# --- CPU-only runs -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cpu_capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real TensorFlow profiler capture of examples/mnist_keras.py on this machine's CPU."""
    pytest.importorskip("tensorflow")
    pytest.importorskip("xprof")
    import tcreport.cli.profile_cmd  # noqa: F401  (registers the command)

    out = tmp_path_factory.mktemp("cpu") / "out"
    example = Path(__file__).resolve().parents[2] / "examples" / "mnist_keras.py"
    result = runner.invoke(
        app, ["profile", str(example), "--backend", "tf", "--output-dir", str(out)]
    )
    assert result.exit_code == 0, result.output
    return out


def test_cpu_only_tf_capture_has_no_tc_verdict_and_host_time_columns(cpu_capture: Path) -> None:
    summary = json.loads((cpu_capture / "summary.json").read_text())
    assert summary["cpu_only"] is True
    assert not [f for f in summary["findings"] if f["id"].startswith(("TC", "PR", "CV", "OP"))]
    host = summary["host"]
    assert host["ops"] and host["op_types"]
    assert (
        abs(sum(r["share"] for r in host["op_types"]) - 1.0) < 1e-9 or len(host["op_types"]) == 20
    )
    assert all(r["cpu_ns"] > 0 for r in host["ops"])
    xplane = next(cpu_capture.rglob("*.xplane.pb"))
    text = runner.invoke(app, ["summary", str(xplane)]).stdout
    assert text.splitlines()[1].startswith("CPU-only run: no GPU kernels")
    assert "Top ops by host time" in text and "Op types by host time" in text
    assert "No GPU time of its own" not in text and "TC004" not in text
    html = (cpu_capture / "report.html").read_text()
    assert "CPU-only run: no GPU kernels." in html and "Host time (CPU-only run)" in html
    md = runner.invoke(app, ["report", str(xplane), "--markdown", "-o", str(cpu_capture / "r.md")])
    assert md.exit_code == 0
    assert "**CPU-only run: no GPU kernels**" in (cpu_capture / "r.md").read_text()
    # host time in ops: TF's op statistics are self time without timestamps, so the rows' sum is
    # the total (nothing nests); every output shows the analysis' one figure
    assert host["total_method"] == host_time.SUMMED
    assert host["total_ns"] >= sum(r["cpu_ns"] for r in host["ops"])
    if len(host["op_types"]) < 20:
        assert host["total_ns"] == sum(r["cpu_ns"] for r in host["op_types"])
    shown = fmt.ns(host["total_ns"])
    (line,) = [x for x in text.splitlines() if x.startswith("Host time (ops)")]
    assert line.split()[-2:] == shown.split()
    assert f"Host time in ops: {shown} (" in (cpu_capture / "r.md").read_text()
    assert f"Host time in ops: <strong>{shown}</strong>" in html


def test_batch_index_shows_no_tc_finding_for_a_cpu_run(cpu_capture: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    out = tmp_path / "batch"
    result = runner.invoke(app, ["batch", str(cpu_capture / "plugins"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    runs = pq.read_table(out / "dataset" / "runs").to_pylist()
    assert len(runs) == 1
    top = runs[0]["top_finding_id"]
    assert top is None or not top.startswith(("TC", "PR", "CV", "OP", "GP"))
    assert "TC004" not in (out / "index.html").read_text()


# --- the diff guard ----------------------------------------------------------------------------------

V100 = REALTRACES / "kineto" / "v100-legacy-resnet50" / "worker0.1623143089861.pt.trace.json.gz"


def _one_process_h100(tmp_path: Path) -> Path:
    """The H100 sample with every kernel in one process (*synthetic*): one run of two GPUs, as
    the sample read before a multi-process export became a job."""
    path = tmp_path / "h100-one-process-synthetic.sqlite"
    shutil.copy(H100, path)
    with sqlite3.connect(path) as con:
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = 281477459738624")
    return path


def test_diff_of_the_two_bundled_samples_refuses_in_one_line(tmp_path: Path) -> None:
    import tcreport.cli.compare_cmds  # noqa: F401  (registers diff/check)

    job = runner.invoke(app, ["diff", str(A100), str(H100)])  # the sample is a 2-rank job
    assert job.exit_code == 2 and "one trace and the other a distributed job" in job.stderr
    h100 = _one_process_h100(tmp_path)
    result = runner.invoke(app, ["diff", str(A100), str(h100)])
    assert result.exit_code == 2 and result.stdout == ""
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert (
        len(lines) == 1
        and "different GPU generation (Ampere, inferred from compute capability, vs Hopper"
        in lines[0]
    )
    assert "--force" in lines[0]
    gate = runner.invoke(app, ["check", str(h100), "--baseline", str(A100)])
    assert (
        gate.exit_code == 2
        and "different GPU generation (Ampere, inferred from compute capability, vs Hopper"
        in gate.stderr
    )


def test_the_bundled_nsys_sample_compares_with_itself_by_inferred_identity(tmp_path: Path) -> None:
    """The export records no GPU table and no framework: Hopper from its nvjet kernels and
    PyTorch from its aten:: ops identify it, and the notes say they were inferred."""
    import tcreport.cli.compare_cmds  # noqa: F401  (registers diff/check)

    result = runner.invoke(app, ["diff", str(H100), str(H100), "-f", "json"])
    assert result.exit_code == 0, result.stderr
    notes = json.loads(result.stdout)["detail"]["notes"]  # a job diff: its rank shown in full
    assert "base GPU not recorded: Hopper inferred from kernel names" in notes
    assert "head framework not recorded: pytorch inferred from op names" in notes
    gate = runner.invoke(app, ["check", str(H100), "--baseline", str(H100)])
    assert gate.exit_code == 0, gate.stderr
    assert runner.invoke(app, ["diff", str(A100), str(A100)]).exit_code == 0
    h100 = _one_process_h100(tmp_path)
    forced = runner.invoke(app, ["diff", str(A100), str(h100), "--force", "-f", "json"])
    assert forced.exit_code == 0 and json.loads(forced.stdout)["forced"] is True


def test_forced_diff_names_the_inferred_gpu_in_its_row_as_in_its_warning(tmp_path: Path) -> None:
    """A newcomer saw GPU "unknown" in the table under a warning that said Hopper: the row and
    the warning read one decision (Analysis.gpu), in Markdown, JSON and HTML alike."""
    import tcreport.cli.compare_cmds  # noqa: F401

    H100 = _one_process_h100(tmp_path)  # the sample itself is a two-rank job: one process of it
    md = runner.invoke(app, ["diff", str(A100), str(H100), "--force"])
    assert md.exit_code == 0, md.stderr
    # the A100's generation is its model's compute capability; the unnamed H100's, its kernels'
    assert "(Ampere, inferred from compute capability, vs Hopper, inferred from kernel names)" in (
        md.stderr
    )
    assert "| GPU | NVIDIA A100-PG509-200 | Hopper (inferred from kernel names) |" in md.stdout
    doc = json.loads(
        runner.invoke(app, ["diff", str(A100), str(H100), "--force", "-f", "json"]).stdout
    )
    assert doc["head"]["gpu"] == "Hopper (inferred from kernel names)"
    assert doc["base"]["gpu"] == "NVIDIA A100-PG509-200"
    page = tmp_path / "diff.html"
    html = runner.invoke(app, ["diff", str(A100), str(H100), "--force", "-o", str(page)])
    assert html.exit_code == 0, html.stderr
    assert "Hopper (inferred from kernel names)" in page.read_text(encoding="utf-8")


def test_a_run_against_itself_compares_with_a_verdict_line() -> None:
    import tcreport.cli.compare_cmds  # noqa: F401

    result = runner.invoke(app, ["diff", str(A100), str(A100)])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[2] == "**Verdict: no change beyond noise**"
    data = json.loads(runner.invoke(app, ["diff", str(A100), str(A100), "-f", "json"]).stdout)
    assert data["verdict"] == "no change beyond noise" and data["not_comparable"] == []


def test_three_and_four_iterations_of_the_same_model_compare() -> None:
    from tcreport.compare import diff as compare

    if not V100.exists():
        pytest.skip("real trace not available")
    run = api.load(V100)
    three = api.analyze(run, api.Slice(iter_start=1, iter_stop=3))
    four = api.analyze(run, api.Slice(iter_start=2, iter_stop=5))
    assert (
        three.analysis.iterations.info.aggregated,
        four.analysis.iterations.info.aggregated,
    ) == (
        3,
        4,
    )
    d = compare.diff(three, four)
    assert not d.forced and d.not_comparable == ()
    assert d.verdict.split(":")[0] in ("better", "worse", "mixed", "no change beyond noise")


def test_guard_reasons_synthetic() -> None:
    import dataclasses

    from tcreport.analysis import framework
    from tcreport.compare import diff as compare
    from tcreport.model import Gpu

    base = api.analyze(
        synthetic_rows_run(
            kernels=[kernel_row("ampere_sgemm_128x64_tn", "mm", 1000, 100 * US)],
            ops=[op_row("mm", "linear", "float32", 100 * US)],
            gpus=(Gpu(0, "NVIDIA A100-SXM4-80GB", "8.0"),),
        )
    )
    a = base.analysis

    # **meta: RunMeta fields of several types, forwarded to dataclasses.replace (which checks them)
    # (the framework's flavour is decided with the verdict, so a changed framework changes it too)
    def variant(kernels: tuple[KernelRow, ...] | None = None, **meta: Any) -> Report:
        ks = a.breakdown.kernels if kernels is None else kernels
        fw = meta.get("framework", a.meta.framework)
        flavour = framework.flavour(fw, (o.name for o in a.breakdown.ops))
        return dataclasses.replace(
            base,
            analysis=dataclasses.replace(
                a,
                breakdown=dataclasses.replace(a.breakdown, kernels=ks),
                meta=dataclasses.replace(a.meta, **meta),
                verdict=dataclasses.replace(a.verdict, flavour=flavour),
            ),
        )

    unmarked = tuple(dataclasses.replace(k, name="gemm_kernel") for k in a.breakdown.kernels)

    two = (Gpu(0, "NVIDIA A100-SXM4-80GB", "8.0"), Gpu(1, "NVIDIA A100-SXM4-80GB", "8.0"))
    cases = {
        "different GPU count (1 vs 2)": variant(gpus=two),
        "cannot verify comparability: head framework unknown": variant(framework=None),
        "cannot verify comparability: head GPU unknown": variant(unmarked, gpus=(Gpu(0),)),
        "cannot verify comparability: base and head GPU unknown, head framework unknown": (
            variant(unmarked, gpus=(Gpu(0),), framework=None)
        ),
        "different framework (PyTorch 2.3.0 vs TensorFlow 2.15)": variant(
            framework="TensorFlow 2.15"
        ),
    }
    for reason, head in cases.items():
        with pytest.raises(compare.NotComparableError, match=re.escape(reason)):
            compare.diff(variant(unmarked, gpus=(Gpu(0),)) if "base and" in reason else base, head)
    assert compare.diff(base, variant(framework="PyTorch")).not_comparable == ()  # no version
    # an unrecorded GPU whose kernels say Ampere compares with the recorded A100
    inferred = compare.diff(base, variant(gpus=(Gpu(0),)))
    assert inferred.not_comparable == ()
    assert "head GPU not recorded: Ampere inferred from kernel names" in inferred.notes


# --- profile: a script that fails before its first step ---------------------------------------------


@pytest.mark.parametrize(
    ("body", "code", "shown"),
    [
        ("raise ValueError('bad data path')\n", 1, "ValueError: bad data path"),
        ("import sys\nsys.exit(7)\n", 7, "exit code 7"),
    ],
)
def test_profile_of_a_script_that_fails_before_its_first_step(
    tmp_path: Path, body: str, code: int, shown: str
) -> None:
    pytest.importorskip("tensorflow")
    pytest.importorskip("xprof")
    import tcreport.cli.profile_cmd  # noqa: F401

    script = tmp_path / "crash.py"
    script.write_text("import tensorflow as tf\n" + body)
    result = runner.invoke(
        app, ["profile", str(script), "--backend", "tf", "--output-dir", str(tmp_path / "o")]
    )
    assert result.exit_code == code
    last = [ln for ln in result.stderr.splitlines() if ln.startswith("tcreport:")]
    assert len(last) == 1 and "crash.py failed before its first step" in last[0]
    assert shown in last[0] and "--key-node" not in last[0]
    if code == 1:
        assert "crash.py:2: ValueError: bad data path" in last[0]


def test_hostile_names_in_a_cpu_only_run_stay_data_synthetic() -> None:
    from synthetic import HOSTILE

    markup = "[bold red]x[/bold red]"
    run = synthetic_rows_run(
        kernels=[],
        ops=[
            {**op_row("a", HOSTILE, "float32", 0), "gpu_ns": None, "name": HOSTILE},
            {**op_row("b", markup, "float32", 0), "gpu_ns": None, "name": markup},
        ],
        gpus=(),
    )
    view = api.analyze(run)
    assert view.analysis.host.cpu_only and {r.name for r in view.analysis.host.ops} == {
        HOSTILE,
        markup,
    }
    html = api.render_html(view)
    assert HOSTILE not in html and "&lt;/script&gt;&lt;img" in html
    assert "<img" not in api.render_markdown(view)
    out = io.StringIO()
    terminal.render(view, Console(file=out, width=300))
    assert HOSTILE in out.getvalue() and markup in out.getvalue()


def test_cpu_only_run_claims_no_saving_even_where_a_rule_measures_one_synthetic(
    tmp_path: Path,
) -> None:
    """Host steps of 1 to 4 ms, back to back, make IT003 fire on a CPU-only trace; its saving
    (time above the median host step) would contradict the run's own words that savings need a
    GPU run."""
    events = []
    durs = [1000, 4000, 1000, 3000, 1000, 4000, 1000, 3500]
    for n, dur in enumerate(durs):
        t0 = 10_000.0 + sum(durs[:n])  # each step starts where the one before ended
        events.append(
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 1,
             "tid": 1, "ts": t0, "dur": dur}
        )  # fmt: skip
        events.append(
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t0 + 1,
             "dur": dur - 2, "args": {"Input type": ["float", "float"]}}
        )  # fmt: skip
    path = tmp_path / "cpu_steps_synthetic.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    view = api.analyze(api.load(path))
    assert view.analysis.host.cpu_only
    assert "savings in time for each finding" in (view.analysis.host.gpu_run_adds or "")
    it003 = next(f for f in view.findings if f.id == "IT003")
    assert it003.estimated_saving_ns is None and "CPU-only" in (it003.assumptions or "")
    assert all(f.estimated_saving_ns is None for f in view.findings)
    assert "saves ~" not in api.render_markdown(view)
