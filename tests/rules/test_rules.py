"""The findings engine: each rule fires on a synthetic run built for it and stays silent on its
near-twin; the registry never raises and never promises more time than the run has; the real
DLProf v1.8 trace reproduces DLProf's own AMP verdict. Synthetic runs are named as such."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import known_violations
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import budget
from synthetic import MS, US, kernel_row, op_row, synthetic_rows_run
from trace_paths import ROOT

from tcreport import api, rules
from tcreport.analysis.result import Analysis
from tcreport.model import Gpu, Run, RunSettings
from tcreport.rules import Finding, Severity


def findings(run: Run, rule_id: str, **kw: Any) -> list[Finding]:
    """The ``rule_id`` findings of ``run`` analysed with the slice ``kw`` describes."""
    return [f for f in api.analyze(run, api.Slice(**kw)).findings if f.id == rule_id]


def _gemm_run(
    dtype: str, kernel: str, shapes: str, framework: str = "PyTorch 2.3.0", cc: str = "7.0"
) -> Run:
    return synthetic_rows_run(
        kernels=[
            kernel_row(kernel, "mm", 1000, 800 * US),
            kernel_row("vectorized_elementwise_kernel", "relu", 900 * US, 200 * US),
        ],
        ops=[
            op_row("mm", "linear", dtype, 800 * US, shapes),
            op_row("relu", "relu", dtype, 200 * US, "[[64, 512]]", start=800 * US),
        ],
        framework=framework,
        cc=cc,
    )


ALIGNED = "[[64, 512], [512, 512]]"


# --- Tensor Cores and precision ---------------------------------------------------------------------


def test_tc001_fires_on_fp32_eligible_ops_with_framework_fix() -> None:
    (f,) = findings(_gemm_run("float32", "volta_sgemm_128x64_nn", ALIGNED), "TC001")
    assert f.evidence[0].key == "/model/mm/linear"
    assert f.estimated_saving_ns == 400 * US
    assert "torch.autocast" in (f.fix or "") and "GradScaler" in (f.fix or "")
    assert "no TF32" in (f.fix or "")  # cc 7.0
    assert f.assumptions and "2x" in f.assumptions
    ampere = findings(_gemm_run("float32", "volta_sgemm_128x64_nn", ALIGNED, cc="8.0"), "TC001")
    assert "allow_tf32" in (ampere[0].fix or "") and "bfloat16" in (ampere[0].fix or "")
    keras = findings(
        _gemm_run("float32", "volta_sgemm_128x64_nn", ALIGNED, framework="TensorFlow 2.15"), "TC001"
    )
    assert "mixed_float16" in (keras[0].fix or "")


def test_tc001_silent_when_the_gemm_runs_on_tensor_cores() -> None:
    assert not findings(_gemm_run("float16", "volta_h884gemm_128x128_nn", ALIGNED), "TC001")


def test_tc004_fires_on_fp32_op_outside_autocast() -> None:
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
    view = api.analyze(run)
    (f,) = [f for f in view.findings if f.id == "TC004"]
    assert "float32-among-half" in f.detail and [e.key for e in f.evidence] == ["/model/b/linear"]
    assert not [f for f in view.findings if f.id == "TC001"]  # one op, one rule


def test_tc004_silent_when_everything_uses_tensor_cores() -> None:
    assert not findings(_gemm_run("float16", "volta_h884gemm_128x128_nn", ALIGNED), "TC004")


def test_tc003_names_the_padding() -> None:
    (f,) = findings(
        _gemm_run("float16", "volta_sgemm_128x64_nn", "[[64, 100], [50257, 100]]"), "TC003"
    )
    assert "50257 → 50264" in f.detail and "100 → 104" in f.detail
    assert f.estimated_saving_ns == 400 * US


def test_synthetic_tc003_lists_five_paddings_then_counts_the_rest() -> None:
    """Seven misaligned GEMMs: the detail the terminal and Markdown print lists five and says how
    many more, not an uncounted "…"."""
    n = 7
    run = synthetic_rows_run(
        kernels=[
            kernel_row("volta_sgemm_128x64_nn", f"mm{i}", 1000 + i * 100 * US, 90 * US)
            for i in range(n)
        ],
        ops=[
            op_row(f"mm{i}", "linear", "float16", 90 * US, f"[[64, 100], [{50 + i}, 100]]",
                   start=i * 100 * US)
            for i in range(n)
        ],
    )  # fmt: skip
    (f,) = findings(run, "TC003")
    assert f.detail.count(" → ") == 5 * 2 and f.detail.endswith("; and 2 more.")


def test_tc003_names_tf32_multiple_on_a_float32_run() -> None:
    """TF32 aligns to 4, not fp16's 8: a float32 TensorFlow run with TF32 on (its convolution ran
    on Tensor Cores) whose matmul's N is 333 is told 'multiples of 4'."""
    run = synthetic_rows_run(
        kernels=[
            kernel_row("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32", "conv", 1000, 500 * US),
            kernel_row("ampere_sgemm_128x64_nn", "mm", 600 * US, 300 * US),
        ],
        ops=[
            op_row("conv", "Conv2D", "float32", 500 * US, ALIGNED),
            op_row("mm", "MatMul", "float32", 300 * US, "[[64, 32], [32, 333]]", start=500 * US),
        ],
        framework="TensorFlow 2.15",
        cc="8.0",
    )
    (f,) = findings(run, "TC003")
    assert f.title.endswith("dimensions not multiples of 4")
    assert "333 → 336" in f.detail and "4 for TF32" in (f.fix or "")


def test_tc003_silent_on_aligned_dims() -> None:
    assert not findings(_gemm_run("float16", "volta_sgemm_128x64_nn", ALIGNED), "TC003")


def test_op001_fires_on_heavy_resize() -> None:
    run = synthetic_rows_run(
        kernels=[
            kernel_row("volta_h884gemm_128x128_nn", "mm", 1000, 700 * US),
            kernel_row("upsample_bilinear2d_out_frame", "up", 800 * US, 300 * US),
        ],
        ops=[
            op_row("mm", "conv2d", "float16", 700 * US),
            op_row("up", "upsample_bilinear2d", "float16", 300 * US),
        ],
    )
    (f,) = findings(run, "OP001")
    assert "upsample_bilinear2d" in f.title and "nearest" in (f.fix or "")
    assert f.estimated_saving_ns == 150 * US


def test_op001_silent_on_small_or_collective_ops() -> None:
    run = synthetic_rows_run(
        kernels=[
            kernel_row("volta_h884gemm_128x128_nn", "mm", 1000, 700 * US),
            kernel_row("ncclKernel_AllReduce", "ar", 800 * US, 250 * US),
            kernel_row("k", "up", MS, 50 * US),
        ],
        ops=[
            op_row("mm", "conv2d", "float16", 700 * US),
            op_row("ar", "nccl:all_reduce", "float16", 250 * US),
            op_row("up", "upsample_nearest2d", "float16", 50 * US),
        ],
    )
    assert not findings(run, "OP001")


def test_pr002_fires_on_fp16_log_softmax() -> None:
    run = _gemm_run("float16", "volta_h884gemm_128x128_nn", ALIGNED)
    extra = synthetic_rows_run(
        kernels=[kernel_row("softmax_warp_forward", "sm", 2000 * US, 5 * US)],
        ops=[op_row("sm", "log_softmax", "float16", 5 * US)],
    )
    import pyarrow as pa

    assert run.ops is not None and run.kernels is not None
    assert extra.ops is not None and extra.kernels is not None
    both = run.replace(
        ops=pa.concat_tables([run.ops, extra.ops]).unify_dictionaries(),
        kernels=pa.concat_tables([run.kernels, extra.kernels]).unify_dictionaries(),
    )
    (f,) = findings(both, "PR002")
    assert "log_softmax" in f.detail and "autocast" in (f.fix or "")
    assert f.estimated_saving_ns is None


def test_pr002_silent_for_fp32_softmax_and_attention() -> None:
    run = synthetic_rows_run(
        ops=[
            op_row("sm", "softmax", "float32", 5 * US),
            {**op_row("at", "softmax", "float16", 5 * US), "name": "/attn/flash_attention/softmax"},
        ]
    )
    assert not findings(run, "PR002")


def _scaler_run(scale_ns: int) -> Run:
    return synthetic_rows_run(
        kernels=[
            kernel_row("volta_h884gemm_128x128_nn", None, 1000, 100 * US),
            kernel_row("amp_update_scale_cuda_kernel", None, 200 * US, scale_ns),
            kernel_row("_amp_foreach_non_finite_check_and_unscale_cuda_", None, 300 * US, scale_ns),
        ],
    )


def test_pr003_fires_when_loss_scaling_dominates() -> None:
    (f,) = findings(_scaler_run(50 * US), "PR003")
    assert f.estimated_saving_ns == 100 * US and f.severity == "high"
    assert {e.key for e in f.evidence} == {
        "amp_update_scale_cuda_kernel",
        "_amp_foreach_non_finite_check_and_unscale_cuda_",
    }


def test_pr003_silent_when_loss_scaling_is_cheap() -> None:
    assert not findings(_scaler_run(1 * US), "PR003")


def _wgrad_run(name: str) -> Run:
    return synthetic_rows_run(
        kernels=[
            kernel_row("volta_h884gemm_128x128_nn", "c", 1000, 100 * US),
            kernel_row(name, "cb", 200 * US, 400 * US),
        ],
        ops=[
            op_row("c", "conv2d", "float16", 100 * US),
            op_row("cb", "cudnn_convolution_backward_weight", "float16", 400 * US),
        ],
    )


def test_cv002_fires_on_cuda_core_fp16_wgrad() -> None:
    (f,) = findings(_wgrad_run("wgrad_alg0_engine"), "CV002")
    assert f.evidence[0].key == "wgrad_alg0_engine" and "channels_last" in (f.fix or "")


def test_cv002_silent_on_tensor_core_wgrad() -> None:
    assert not findings(
        _wgrad_run("sm70_xmma_wgrad_f16f16_f16f32_nhwckrsc_nhwc_hmma_k64r3s3c32"), "CV002"
    )


def _layout_run(conversion_us: int) -> Run:
    """A float16 NCHW convolution and cuDNN's transposes around it (names as cuDNN 9 writes them,
    from the H200 sample's float16 CNN)."""
    to_nhwc = "void cudnn::engines_precompiled::nchwToNhwcKernel<__half, __half, float, false, true, (cudnnKernelDataType_t)0>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>, __half const*, __half*)"  # noqa: E501
    return synthetic_rows_run(
        kernels=[
            kernel_row("sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_f32", "c", 1000, 400 * US),
            kernel_row(to_nhwc, "c", 500 * US, conversion_us * US),
        ],
        ops=[op_row("c", "aten::cudnn_convolution", "float16", (400 + conversion_us) * US)],
    )


def test_cv003_fires_on_layout_conversions_and_names_channels_last() -> None:
    (f,) = findings(_layout_run(100), "CV003")
    assert f.title == "cuDNN layout conversions (NCHW ↔ NHWC) take 20.0% of GPU time"
    assert f.severity is Severity.HIGH and f.estimated_saving_ns == 100 * US
    assert (f.fix or "").startswith("model = model.to(memory_format=torch.channels_last)")
    assert "nchwToNhwcKernel" in f.evidence[0].key


def test_cv003_fix_follows_the_framework() -> None:
    run = _layout_run(100)
    meta = dataclasses.replace(run.meta, framework=None)
    (f,) = findings(run.replace(meta=meta), "CV003")
    assert "PyTorch: model = model.to(memory_format=torch.channels_last)" in (f.fix or "")
    assert "TensorFlow/Keras: build Conv2D layers with data_format='channels_last'" in (f.fix or "")


def test_cv003_silent_below_its_share() -> None:
    assert not findings(_layout_run(10), "CV003")  # 2.4 %


def _with_settings(analysis: Analysis, settings: RunSettings) -> Analysis:
    """The analysis as if the profiler had recorded these settings."""
    meta = dataclasses.replace(analysis.meta, settings=settings)
    return dataclasses.replace(analysis, meta=meta)


def test_cv001_fires_only_on_a_recorded_setting() -> None:
    from tcreport.rules import cv001_cudnn_benchmark_off as cv001

    base = api.analyze(_wgrad_run("wgrad_alg0_engine")).analysis
    (f,) = cv001.check(_with_settings(base, RunSettings(cudnn_benchmark=False)))
    assert "cudnn.benchmark = True" in (f.fix or "")
    assert not cv001.check(_with_settings(base, RunSettings(cudnn_benchmark=True)))
    assert not cv001.check(base)  # not recorded: silent, whatever the kernels look like


# --- iterations ------------------------------------------------------------------------------------


def _steps_run(durations_ms: list[float], loader_ms: float = 0.0, kernel_us: int = 200) -> Run:
    starts, t = [], 0
    for d in durations_ms:
        starts.append(t)
        t += int(d * MS)
    ranges = [
        {
            "name": "train_step",
            "start_ns": s,
            "end_ns": s + int(d * MS) - 1,
            "depth": 0,
            "thread_id": 1,
        }
        for s, d in zip(starts, durations_ms, strict=True)
    ]
    if loader_ms:
        ranges += [
            {
                "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                "start_ns": s + 10,
                "end_ns": s + 10 + int(loader_ms * MS),
                "depth": 1,
                "thread_id": 1,
            }
            for s in starts
        ]
    kernels = [
        kernel_row("volta_h884gemm_128x128_nn", None, s + int(loader_ms * MS) + 100, kernel_us * US)
        for s in starts
    ]
    return synthetic_rows_run(kernels=kernels, ranges=ranges)


def test_it002_fires_on_warmup_first_iteration() -> None:
    (f,) = findings(_steps_run([5, 1, 1, 1, 1]), "IT002")
    assert f.evidence[0].key == "0" and "--iter-start 1" in (f.fix or "")
    assert not findings(_steps_run([5, 1, 1, 1, 1]), "IT003")  # the warm-up is IT002's alone


def test_it002_silent_on_steady_steps_and_after_iter_start() -> None:
    assert not findings(_steps_run([1, 1, 1, 1]), "IT002")
    assert not findings(_steps_run([5, 1, 1, 1, 1]), "IT002", key_node="train_step", iter_start=1)


def test_it003_fires_on_variable_steps() -> None:
    (f,) = findings(_steps_run([1, 1, 2, 1, 2, 1]), "IT003")
    assert f.estimated_saving_ns == pytest.approx(2 * MS, rel=0.01)
    assert {e.key for e in f.evidence} == {"2", "4"}


def test_it003_silent_on_steady_steps() -> None:
    assert not findings(_steps_run([1, 1.02, 0.99, 1, 1.01]), "IT003")


def _conv_kernels(names: list[str]) -> Run:
    return synthetic_rows_run(
        kernels=[kernel_row(n, "c", 1000 + i * 20 * US, 10 * US) for i, n in enumerate(names)],
        ops=[op_row("c", "conv2d", "float32", 10 * US * len(names))],
    )


def test_it004_fires_when_one_conv_runs_several_algorithms() -> None:
    (f,) = findings(
        _conv_kernels(
            [
                "implicit_convolve_sgemm",
                "fft2d_r2c_32x32",
                "winogradForwardData4x4",
                "implicit_convolve_sgemm",
            ]
        ),
        "IT004",
    )
    assert f.evidence[0].key == "/model/c/conv2d"


def test_it004_silent_with_one_algorithm() -> None:
    assert not findings(
        _conv_kernels(["implicit_convolve_sgemm", "implicit_convolve_sgemm"]), "IT004"
    )


# --- GPU utilisation --------------------------------------------------------------------------------


def test_gp001_names_the_data_loader() -> None:
    (f,) = findings(_steps_run([1, 1, 1, 1], loader_ms=0.6), "GP001")
    assert "DataLoader" in f.detail and "num_workers" in (f.fix or "")
    assert f.estimated_saving_ns == pytest.approx(4 * 0.6 * MS, rel=0.01)
    assert f.saving_share == pytest.approx(0.6, rel=0.02)


def test_gp001_silent_when_the_gpu_is_busy() -> None:
    assert not findings(_steps_run([1, 1, 1, 1], kernel_us=950), "GP001")


def _launch_run(kernel_us: float, gap_us: float, n: int = 200) -> Run:
    step = int((kernel_us + gap_us) * US)
    return synthetic_rows_run(
        kernels=[
            kernel_row("vectorized_elementwise_kernel", None, 1000 + i * step, int(kernel_us * US))
            for i in range(n)
        ]
    )


def test_gp002_fires_on_tiny_kernels_with_gaps() -> None:
    (f,) = findings(_launch_run(5, 20), "GP002")
    assert "CUDA graph" in (f.fix or "") and f.evidence[0].key == "vectorized_elementwise_kernel"
    assert f.estimated_saving_ns == pytest.approx(199 * 20 * US * 0.5, rel=0.01)


def test_gp002_silent_on_long_back_to_back_kernels() -> None:
    assert not findings(_launch_run(50, 1), "GP002")


def test_tc002_fires_on_unknown_kernels_only() -> None:
    assert findings(synthetic_rows_run(kernels=[kernel_row("test0", None, 0, 10 * US)]), "TC002")
    assert not findings(
        synthetic_rows_run(kernels=[kernel_row("volta_sgemm_128x64_nn", None, 0, 10 * US)]), "TC002"
    )


# --- registry invariants ------------------------------------------------------------------------------


def test_rules_are_silent_without_kernels_or_ops() -> None:
    for run in (
        synthetic_rows_run(),
        synthetic_rows_run(kernels=[], ops=[]),
        synthetic_rows_run(ops=[op_row("a", "linear", "float32", 0)]),
    ):
        found = api.analyze(run).findings
        assert {f.id for f in found} <= {"IT001", "TC002"}


def test_every_registered_id_is_documented() -> None:
    doc = (ROOT / "docs" / "findings.md").read_text(encoding="utf-8")
    for rule_id in rules.REGISTRY:
        assert re.search(rf"^##+ .*\b{re.escape(rule_id)}\b", doc, re.M), rule_id


def test_findings_carry_no_markup() -> None:
    view = api.analyze(_gemm_run("float32", "volta_sgemm_128x64_nn", "[[64, 100], [50257, 100]]"))
    for f in view.findings:
        for text in (f.title, f.detail, f.fix or "", f.assumptions or ""):
            assert not re.search(r"<[a-z/]|\*\*|`", text), text


_KERNEL_NAMES = [
    "volta_sgemm_128x64_nn", "volta_h884gemm_128x128_nn", "wgrad_alg0_engine", "amp_update_scale_cuda_kernel",
    "implicit_convolve_sgemm", "fft2d_r2c_32x32", "winogradForwardData4x4", "vectorized_elementwise_kernel", "x",
]  # fmt: skip
_OP_TYPES = ["linear", "conv2d", "softmax", "upsample_bilinear2d", "relu", "aten::mm", "DataLoader"]
_DTYPES = [None, "float32", "float16", "bfloat16", "float64", "int8"]
_SHAPES = [
    None,
    "[[64, 100], [50257, 100]]",
    ALIGNED,
    "<N:32, C:3, H:32, W:32>; <K:6, C:3, R:3, S:3>",
    "garbage[",
]

_kernel = st.fixed_dictionaries(
    {
        "name": st.sampled_from(_KERNEL_NAMES),
        "op_id": st.sampled_from([None, "a", "b", "c"]),
        "start_ns": st.one_of(st.none(), st.integers(0, 10 * MS)),
        "duration_ns": st.integers(0, MS),
        "device_id": st.sampled_from([0, 1]),
    }
)
_opd = st.fixed_dictionaries(
    {
        "op_id": st.sampled_from(["a", "b", "c", "d"]),
        "name": st.sampled_from(["/m/a", "/m/b", "aten::mm", "enumerate(DataLoader)"]),
        "type": st.sampled_from(_OP_TYPES),
        "dtype": st.sampled_from(_DTYPES),
        "gpu_ns": st.one_of(st.none(), st.integers(0, MS)),
        "start_ns": st.one_of(st.none(), st.integers(0, 10 * MS)),
        "cpu_ns": st.integers(0, MS),
        "input_shapes": st.sampled_from(_SHAPES),
    }
)
_range = st.builds(
    lambda name, s, d, depth: {"name": name, "start_ns": s, "end_ns": s + d, "depth": depth},
    st.sampled_from(["train_step", "ProfilerStep#3", "enumerate(DataLoader)", "x"]),
    st.integers(0, 10 * MS),
    st.integers(0, 2 * MS),
    st.sampled_from([0, 1]),
)


@settings(max_examples=budget(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kernels=st.one_of(st.none(), st.lists(_kernel, max_size=25)),
    ops=st.one_of(st.none(), st.lists(_opd, max_size=8)),
    ranges=st.one_of(st.none(), st.lists(_range, max_size=6)),
    framework=st.sampled_from([None, "PyTorch 2.3", "TensorFlow 2.15"]),
    cc=st.sampled_from([None, "7.0", "8.0", "x"]),
)
def test_evaluate_never_raises_and_savings_are_bounded(
    kernels: list[dict[str, Any]] | None,
    ops: list[dict[str, Any]] | None,
    ranges: list[dict[str, Any]] | None,
    framework: str | None,
    cc: str | None,
) -> None:
    run = synthetic_rows_run(kernels=kernels, ops=ops, ranges=ranges, framework=framework, cc=cc)
    with known_violations.lenient():  # drawn rows need not agree (op GPU time without kernels)
        view = api.analyze(run)
    a = view.analysis
    tl = a.time.timeline
    op_gpu = sum(o.gpu_ns or 0 for o in a.breakdown.ops) if a.breakdown.ops else None
    figures = (a.time.wall_ns, a.time.gpu_kernel_ns, tl.span_ns if tl else None, op_gpu)
    bound = max([v for v in figures if v is not None], default=None)
    ids = {f.id for f in view.findings}
    assert all(f.id in rules.REGISTRY or f.id.startswith("dlprof:") for f in view.findings), ids
    for f in view.findings:
        if f.estimated_saving_ns is not None:
            assert bound is not None and 0 <= f.estimated_saving_ns <= bound
        if f.saving_share is not None:
            assert 0.0 <= f.saving_share <= 1.0
    # ranked as rules.evaluate promises: high and medium first, each group by saving
    minor = [f.severity in (Severity.LOW, Severity.INFO) for f in view.findings]
    assert minor == sorted(minor)
    for group in (False, True):
        savings = [
            f.estimated_saving_ns or 0
            for f, m in zip(view.findings, minor, strict=True)
            if m == group
        ]
        assert savings == sorted(savings, reverse=True)


# --- real trace -------------------------------------------------------------------------------------


def test_dlprof_cnn_amp_finding_matches_dlprofs_expert_system(dlprof_cnn: Path) -> None:
    view = api.analyze(api.load(dlprof_cnn))
    (tc001,) = [f for f in view.findings if f.id == "TC001"]
    assert (
        len(tc001.evidence) == 5
    )  # DLProf: "5 ops were eligible to use tensor cores but none are using FP16"
    op_names = {o.name for o in view.analysis.breakdown.ops}
    assert all(e.key in op_names for e in tc001.evidence)
    assert (
        sorted(e.key.rsplit("/", 1)[-1] for e in tc001.evidence) == ["conv2d"] * 2 + ["linear"] * 3
    )
    assert "torch.autocast" in (tc001.fix or "")
    assert "no TF32" in (tc001.fix or "")  # RTX 2070 SUPER: Turing, known from its name
    assert view.findings[0].id == "TC001"  # the largest saving ranks first
    dlprof_ids = {f.id for f in view.findings if f.id.startswith("dlprof:")}
    assert "dlprof:amp_detector" in dlprof_ids
    assert [
        f for f in view.findings if f.id == "IT004"
    ]  # cuDNN tried fft/winograd/gemm in the one step
    assert not [f for f in view.findings if f.id in ("TC004", "CV001")]


def test_gp001_whole_profile_fix_reads_as_one_sentence_on_the_a100_sample() -> None:
    """The A100 sample has no iteration split: GP001's fix starts with the split, then goes on
    in lower case ("then: find what the GPU waits for")."""
    view = api.analyze(api.load(ROOT / "sample_traces" / "kineto-a100-tf32-alexnet"))
    (gp,) = [f for f in view.findings if f.id == "GP001"]
    assert gp.fix is not None
    assert "; then: find what the GPU waits for" in gp.fix
    assert "then: Find" not in gp.fix


def test_rules_infer_the_gpu_generation_from_kernels_like_the_diff_guard(nsys_h100: Path) -> None:
    """The real 2x H100 Nsight Systems export has no TARGET_INFO_GPU table: no GPU name and no
    compute capability. Its sm90_/nvjet_ kernels say Hopper, which the diff guard already used to
    identify it; the rules now read the same fallback (cc 9.0: bfloat16 and TF32 advice)."""
    from tcreport.analysis import gpu_arch
    from tcreport.compare import diff
    from tcreport.rules import _common

    a = api.analyze(api.load(nsys_h100)).analysis
    assert len(a.meta.gpus) == 2
    assert all(g.name is None and g.compute_capability is None for g in a.meta.gpus)
    assert diff.inferred_gpu(a) == "Hopper"
    cc = _common.compute_capability(a)
    assert cc == 9.0
    assert "TF32 Tensor Cores, cc 9.0" in _common.amp_fix(a)
    # a GPU known not to be NVIDIA's has no compute capability, whatever the kernels say
    amd = Gpu(0, "AMD Instinct MI250X", vendor="amd")
    assert gpu_arch.run_compute_capability([amd], ["sm90_xmma_gemm_bf16"]) is None
