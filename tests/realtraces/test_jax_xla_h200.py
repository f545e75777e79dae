"""A JAX training step on an H200 (sample_traces/h200-jax-xla-ncu): the trace's own verdict against
Nsight Compute's counters of the same program.

The oracle is the counters (tensor-path operations > 0, ``GROUND_TRUTH.md``), matched to the trace's
kernels by tcreport's ncu merge (checked on the PyTorch sample, tests/analysis/test_counters_real.py).
Before the HLO was read, these traces gave 39.9 %, 36.4 % and 0.0 % of kernel time on Tensor Cores
(XLA's GEMM fusions took xprof's "no"), one op called ``XlaModule`` holding all GPU time with the
finding "XlaModule takes 100.0% of GPU time and cannot use Tensor Cores", and one iteration.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow.compute as pc
import pytest
from trace_paths import SAMPLES

pytest.importorskip("xprof")
pytest.importorskip("google.protobuf")

from tcreport import api  # noqa: E402
from tcreport.analysis import counters  # noqa: E402
from tcreport.analysis.result import classified_run  # noqa: E402
from tcreport.model import IterationMethod, Run  # noqa: E402

JAX = SAMPLES / "h200-jax-xla-ncu"
#: precision -> (Tensor Core share of kernel time in %, one decimal, as the counters give it)
SHARE = {"bf16": 62.4, "fp32": 44.6, "fp32-highest": 0.0}
#: precision -> the dtype XLA compiled gemm_fusion_dot.4 / .5 (forward dense layers) to
FUSION_DTYPE = {"bf16": "bf16", "fp32": "tf32", "fp32-highest": "fp32"}


def _run(precision: str, with_counters: bool = False) -> Run:
    run = api.load(JAX / precision)
    if with_counters:
        run = counters.merge(run, api.load(JAX / "ncu" / f"ncu_jax_{precision}.csv"))
    return run


@pytest.mark.parametrize("precision", sorted(SHARE))
def test_every_measured_kernel_has_the_counters_verdict_without_them(precision: str) -> None:
    """Names and the HLO alone decide each kernel as the counters do, kernel for kernel."""
    k = classified_run(_run(precision, with_counters=True)).kernels
    assert k is not None
    measured = k.filter(pc.is_valid(k.column("counter_uses_tc")))
    assert measured.num_rows > 0.8 * k.num_rows
    bare = classified_run(_run(precision)).kernels
    assert bare is not None
    verdicts: dict[str, set[bool | None]] = {}
    for n, v in zip(
        bare.column("name").to_pylist(), bare.column("uses_tc").to_pylist(), strict=True
    ):
        verdicts.setdefault(n, set()).add(v)
    assert all(len(v) == 1 for v in verdicts.values())  # one verdict per name in these programs
    ours = {n: next(iter(v)) for n, v in verdicts.items()}
    wrong = {
        n: (ours.get(n), c)
        for n, c in zip(
            measured.column("name").to_pylist(),
            measured.column("counter_uses_tc").to_pylist(),
            strict=True,
        )
        if ours.get(n) is not c
    }
    assert wrong == {}


@pytest.mark.parametrize("precision", sorted(SHARE))
def test_the_report_lists_no_disagreement_with_the_counters(precision: str) -> None:
    """The report's 'name says X, counters say Y' list holds the trace's own verdicts (names and
    the HLO) against the counters: it listed the seven GEMM fusions as 'profiler-label: no'."""
    verdict = api.analyze(_run(precision, with_counters=True)).analysis.verdict
    assert verdict.counter_disagreements == ()


@pytest.mark.parametrize("precision", sorted(SHARE))
def test_tensor_core_share_equals_the_counters(precision: str) -> None:
    for with_counters in (False, True):
        time = api.analyze(_run(precision, with_counters)).analysis.time
        assert time.tc_kernel_ns is not None and time.gpu_kernel_ns
        share = 100 * time.tc_kernel_ns / time.gpu_kernel_ns
        assert round(share, 1) == SHARE[precision], (with_counters, share)


@pytest.mark.parametrize("precision", sorted(SHARE))
def test_gemm_fusions_are_decided_by_their_hlo_precision(precision: str) -> None:
    run = _run(precision)
    assert run.ops is not None
    ops = {r["op_id"]: r for r in run.ops.to_pylist()}
    for name in ("gemm_fusion_dot.4", "gemm_fusion_dot.5"):
        if name in ops:  # XLA's autotuner picked cuBLAS for some layers in some runs
            assert ops[name]["type"] == "dot"
            assert ops[name]["dtype"] == FUSION_DTYPE[precision]
            assert ops[name]["scope"] == "jit(train_step)/jvp()/dot_general"
    k = classified_run(run).kernels
    assert k is not None
    fusions = k.filter(pc.starts_with(k.column("name").cast("string"), "gemm_fusion_dot"))
    assert fusions.num_rows >= 6
    assert set(fusions.column("tc_rule").cast("string").to_pylist()) == {"xla-hlo-precision"}
    assert set(fusions.column("uses_tc").to_pylist()) == {precision != "fp32-highest"}


@pytest.mark.parametrize("precision", sorted(SHARE))
def test_ops_are_hlo_instructions_and_hold_the_kernel_time_once(precision: str) -> None:
    run = classified_run(_run(precision))
    ops, k = run.ops, run.kernels
    assert ops is not None and k is not None
    names = set(ops.column("name").cast("string").to_pylist())
    assert "XlaModule" not in names
    assert {"cudnn-conv.1", "cudnn-conv-bw-filter.1"} <= names
    # each ran once a step, whatever number of kernels it launched (cuDNN pads, splits K)
    calls = {r["calls"] for r in ops.to_pylist() if r["type"] in ("dot", "cudnn-conv")}
    assert calls == {6}, calls
    attributed = pc.sum(k.filter(pc.is_valid(k.column("op_id"))).column("duration_ns")).as_py()
    assert pc.sum(ops.column("gpu_ns")).as_py() == attributed
    # the kernels without an op (library kernels XLA ran inside a command buffer, named for no
    # fusion) are all decided by their names
    loose = k.filter(pc.is_null(k.column("op_id")))
    assert loose.num_rows and loose.column("uses_tc").null_count == 0
    assert "profiler-label" not in loose.column("tc_rule").cast("string").to_pylist()
    # memsets are memory activity, not kernels (JAX writes "Memset 3" with "Memset_details")
    assert not [n for n in k.column("name").cast("string").to_pylist() if n.startswith("Memset")]
    report = api.analyze(_run(precision))
    assert not [f for f in report.findings if "XlaModule" in f.title]
    assert report.analysis.breakdown.ops[0].name != "XlaModule"


def test_the_step_annotations_mark_six_iterations() -> None:
    report = api.analyze(_run("bf16"))
    info = report.analysis.meta.iterations
    assert (info.total, info.aggregated) == (6, 6)
    assert info.method is IterationMethod.REPEATING_RANGE and info.key_node == "train_step"


def test_full_float32_names_the_jax_switch() -> None:
    """HIGHEST float32: cuBLAS, cuDNN and the fusions on CUDA cores; TC001 says which JAX switch."""
    report = api.analyze(_run("fp32-highest"))
    tc001 = next(f for f in report.findings if f.id == "TC001")
    assert "jax_default_matmul_precision" in (tc001.fix or "")
    assert report.analysis.time.tc_kernel_ns == 0


def test_hlo_precision_is_read_from_cublas_backend_config() -> None:
    """cuBLAS calls keep their precision in the backend config: float32 DEFAULT is TF32 there too
    (their kernels are sm90_xmma_gemm_f32f32_tf32f32), HIGHEST is float32."""
    for precision, dtype in (("fp32", "tf32"), ("fp32-highest", "fp32")):
        run = _run(precision)
        assert run.ops is not None
        gemms = [r for r in run.ops.to_pylist() if r["type"] == "cublaslt-matmul"]
        assert gemms and {r["dtype"] for r in gemms} == {dtype}, precision


def _readme_figures(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_readme_states_the_figures_the_tests_hold() -> None:
    text = _readme_figures(JAX / "README.md")
    assert "62.4 %, 44.6 % and 0.0 %" in text


def test_low_utilisation_names_the_sync_that_idles_the_gpu() -> None:
    """bf16: the loop reads the loss every step (float(loss)); GP001 (fix first) said only 'find
    what the GPU waits for in the timeline' while ST001 measured the idle after those syncs."""
    report = api.analyze(_run("bf16"))
    gp001 = next(f for f in report.findings if f.id == "GP001")
    assert gp001.fix is not None and gp001.fix.startswith("Remove the synchronisation")
    assert "ST001" in gp001.fix


@pytest.mark.parametrize("precision", ["bf16", "fp32"])
def test_gemm_fusion_flops_are_the_counters_tensor_math_before_tile_padding(precision: str) -> None:
    """The reader writes each XLA dot as the GEMM it computes ([B,]M,K x [B,]K,N, from the HLO's
    dot dimension numbers), and its FLOPs are 2·B·M·N·K. Nsight Compute counted, per launch of each
    GEMM fusion, that many tensor-path operations where M, N and K are multiples of 64, and more by
    the kernel's tile padding elsewhere (N 1000 -> 1024: x1.024; 10 -> 16: x1.6; split-K's
    K 252 -> 256: x1.016): the shapes are the work the Tensor Cores did."""
    lines = (JAX / "ncu" / f"ncu_jax_{precision}.csv").read_text(encoding="utf-8").splitlines()
    table = list(
        csv.reader(lines[next(i for i, ln in enumerate(lines) if ln.startswith('"ID"')) :])
    )
    head = table[0]
    measured: dict[str, float] = {}
    for row in table[2:]:
        r = dict(zip(head, row, strict=False))
        name = r.get("Kernel Name", "")
        if name.startswith("gemm_fusion"):
            ops = sum(
                float(v.replace(",", "") or 0)
                for k, v in r.items()
                if k.startswith("sm__ops_path_tensor_") and k.endswith(".sum")
            )
            measured.setdefault(name, ops)
    throughput = api.analyze(_run(precision)).analysis.throughput
    assert throughput is not None
    checked = 0
    for g in throughput.ops:
        kernel = g.name.replace(".", "_")
        if kernel not in measured or not g.flops or not g.calls:
            continue
        dims = json.loads(g.input_shapes or "[]")
        *batch, m, k = dims[0]
        n = dims[1][-1]
        b = batch[0] if batch else 1
        per_call = 2 * b * m * n * k
        assert g.flops / g.calls == per_call
        assert per_call <= measured[kernel] <= 1.6 * per_call, g.name
        if m % 64 == n % 64 == k % 64 == 0:
            assert measured[kernel] == per_call, g.name
        checked += 1
    assert checked >= 6


def test_convolutions_read_as_their_forward_problem_with_flops_and_the_channel_reason() -> None:
    """cuDNN's calls keep the forward convolution's dimension numbers, the backward-filter call's
    filter being its result: both read <N:256, C:3, H:32, W:32>; <K:64, C:3, R:3, S:3>, so their
    FLOPs are 2·N·K·P·Q·C·R·S and the float32 run's miss gets its reason: TC003 'pad C 3 → 4'
    where TC004 said 'why: unknown'. Nsight Compute counted the bf16 forward kernel's tensor math
    as that product with the 3 input channels padded to 32."""
    fp32 = api.analyze(_run("fp32"))
    tc003 = next(f for f in fp32.findings if f.id == "TC003")
    assert "cudnn-conv-bw-filter.1: pad C 3 → 4" in tc003.detail
    bf16 = api.analyze(_run("bf16")).analysis.throughput
    assert bf16 is not None
    convs = {g.name: g for g in bf16.ops if g.name.startswith("cudnn-conv")}
    assert set(convs) == {"cudnn-conv.1", "cudnn-conv-bw-filter.1"}
    per_call = 2 * 256 * 64 * 32 * 32 * 3 * 3 * 3
    for g in convs.values():
        assert g.input_shapes == "<N:256, C:3, H:32, W:32>; <K:64, C:3, R:3, S:3>"
        assert g.flops is not None and g.calls and g.flops / g.calls == per_call
    lines = (JAX / "ncu" / "ncu_jax_bf16.csv").read_text(encoding="utf-8").splitlines()
    table = list(
        csv.reader(lines[next(i for i, ln in enumerate(lines) if ln.startswith('"ID"')) :])
    )
    fprop = [
        dict(zip(table[0], row, strict=False))
        for row in table[2:]
        if "s16816fprop_optimized_bf16" in row[table[0].index("Kernel Name")]
    ]
    assert fprop
    for r in fprop:
        ops = float(r["sm__ops_path_tensor_src_bf16_dst_fp32.sum"].replace(",", ""))
        assert ops == per_call * 32 // 3


@pytest.mark.parametrize("precision", sorted(SHARE))
def test_kernel_time_and_launches_equal_xprofs_own_kernel_table(precision: str) -> None:
    """The profiler's own figure: xprof's kernel_stats (what TensorBoard's profile plugin shows)
    sums to tcreport's GPU kernel time to the microsecond and counts the same launches, memsets
    left out of both (JAX's 'Memset 3' events, which the reader once counted as kernels)."""
    from tcreport.ingest.xplane.tools import convert

    files = sorted((JAX / precision).glob("plugins/profile/*/*.xplane.pb"))
    stats = convert(files).kernel_stats
    assert stats
    report = api.analyze(_run(precision))
    total_us = sum(float(k.get("total_duration_us") or 0) for k in stats)
    assert round(total_us * 1000) == report.analysis.time.gpu_kernel_ns
    launches = sum(int(k.get("occurrences") or 0) for k in stats)
    assert launches == sum(k.calls for k in report.analysis.breakdown.kernels)
