"""Ops that nest count their GPU time once, at the op the kernel links to (eligibility.count_once):
in every total over ops and in eligibility, so eligible GPU time never exceeds kernel time."""

from __future__ import annotations

from typing import Any

import pytest
from synthetic import MS, kernel_row, synthetic_rows_run

from tcreport import api
from tcreport.analysis import eligibility, result
from tcreport.model import SourceFormat

GEMM = "ampere_sgemm_128x64_nn"


def _op(op_id: str, name: str, type_: str, gpu_ns: int, **more: Any) -> dict[str, Any]:
    return {"op_id": op_id, "name": name, "type": type_, "gpu_ns": gpu_ns, "dtype": "float32",
            "cpu_ns": MS, "start_ns": 0, **more}  # fmt: skip


CASES = {
    # an XLA module op and the op inside it both claim the matmul (the converter's per-op table)
    "xla module": (
        [_op("cluster_0", "cluster_0/_XlaRun", "_XlaRun", 40 * MS, profiler_tc_eligible=True),
         _op("dense", "cluster_0/dense/MatMul", "MatMul", 30 * MS),
         _op("relu", "cluster_0/Relu", "Relu", 10 * MS)],
        [kernel_row(GEMM, "dense", 0, 30 * MS), kernel_row("relu_kernel", "relu", 31 * MS, 10 * MS)],
        SourceFormat.TF_XPLANE,
        {"cluster_0/_XlaRun": 0, "cluster_0/dense/MatMul": 30 * MS, "cluster_0/Relu": 10 * MS},
    ),
    # a reader that gave aten::linear its child aten::addmm's kernel too
    "aten wrapper": (
        [_op("lin", "aten::linear", "linear", 5 * MS), _op("mm", "aten::addmm", "addmm", 5 * MS)],
        [kernel_row(GEMM, "mm", 0, 5 * MS)],
        SourceFormat.KINETO_JSON,
        {"aten::linear": 0, "aten::addmm": 5 * MS},
    ),
    # NVTX op ranges: DLProf's convention gives the kernel to the outer op record (conv2d)
    "nvtx op ranges": (
        [_op("conv2d_1", "conv2d", "conv2d", 8 * MS),
         _op("cudnn_1", "aten::cudnn_convolution", "cudnn_convolution", 8 * MS)],
        [kernel_row("implicit_convolve_sgemm", "conv2d_1", 0, 8 * MS)],
        SourceFormat.NSYS_SQLITE,
        {"conv2d": 8 * MS, "aten::cudnn_convolution": 0},
    ),
    # a damaged report that repeats an op's row: the op id's kernels are counted once, by the
    # first row (what the fuzzer's repeated DLProf JSON row gave)
    "repeated op id": (
        [_op("relu_4", "relu", "relu", 2 * MS), _op("relu_4", "relu", "relu", 2 * MS),
         _op("mm", "aten::mm", "mm", 5 * MS)],
        [kernel_row("relu_kernel", "relu_4", 0, 2 * MS), kernel_row(GEMM, "mm", 3 * MS, 5 * MS)],
        SourceFormat.DLPROF_JSON,
        {"relu": 2 * MS, "aten::mm": 5 * MS},
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_synthetic_nested_ops_count_once(case: str) -> None:
    ops, kernels, fmt, expected = CASES[case]
    run = synthetic_rows_run(kernels=kernels, ops=ops, fmt=fmt, cc="8.0")
    a = result.compute(run)
    assert {o.name: o.gpu_ns for o in a.breakdown.ops} == expected
    kernel_ns = a.time.gpu_kernel_ns
    assert kernel_ns is not None and kernel_ns == sum(k["duration_ns"] for k in kernels)
    assert a.verdict.eligible_gpu_ns is not None and a.verdict.eligible_gpu_ns <= kernel_ns
    assert sum(o.gpu_ns or 0 for o in a.breakdown.ops) <= kernel_ns


def test_op_times_that_add_up_are_left_as_read() -> None:
    """Only an input that double counts is changed: the ops table itself comes back."""
    run = synthetic_rows_run(
        kernels=[kernel_row(GEMM, "mm", 0, 5 * MS)],
        ops=[_op("lin", "aten::linear", "linear", 0), _op("mm", "aten::addmm", "addmm", 5 * MS)],
    )
    assert run.ops is not None
    assert eligibility.count_once(run.ops, run.kernels) is run.ops


def test_bundled_samples_eligible_time_within_kernel_time() -> None:
    from trace_paths import SAMPLES

    for path in sorted(SAMPLES.glob("*/*.json.gz")) + sorted(SAMPLES.glob("*/*.sqlite")):
        a = api.analyze(api.load(path)).analysis
        assert a.verdict.eligible_gpu_ns is not None and a.time.gpu_kernel_ns is not None
        assert a.verdict.eligible_gpu_ns <= a.time.gpu_kernel_ns, path.name


def test_synthetic_op_keeps_no_time_of_a_kernel_its_iteration_left_out() -> None:
    """A kernel with no launch record is in no iteration (queued before profiling, as HTA has
    it), while its op is in the iteration its host start is in: the op keeps none of that
    kernel's time, so op time stays within kernel time (the Kineto edge-case fixture's
    no_runtime_kernel_synthetic, linked to aten::mul by External id only)."""
    from trace_paths import ROOT

    run = api.load(ROOT / "tests" / "fixtures" / "kineto_edge_cases_synthetic.json")
    a = api.analyze(run).analysis  # strict, as every analysis in the suite
    ops = {o.name: o.gpu_ns for o in a.breakdown.ops}
    assert ops["aten::mul"] == 0 and ops["aten::addmm"] == 1_005
    assert a.time.gpu_kernel_ns is not None
    assert sum(o.gpu_ns or 0 for o in a.breakdown.ops) <= a.time.gpu_kernel_ns
    assert any("have no launch record" in n for n in a.meta.notes)
