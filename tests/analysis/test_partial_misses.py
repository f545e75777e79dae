"""Ops that used Tensor Cores in some calls and missed them in others.

Ops are grouped by name, and a name that used Tensor Cores once used to count as "using them":
the first convolution of a CNN (3 input channels, no Tensor Core kernel) hides behind the other
convolutions with the same name, and its time never reached the headline or a finding. The
synthetic tables here are built for the case; the Kineto test is the bundled A100 sample, where it
happens for real.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from synthetic import run_meta
from trace_paths import ROOT

from tcreport import api, schema
from tcreport.analysis import tc_kernels
from tcreport.analysis.figures import OpRow, in_some_calls_only
from tcreport.analysis.why_not import Reason
from tcreport.model import Gpu, Granularity, IterationInfo, Run, SourceFormat
from tcreport.report import Report
from tcreport.rules import thresholds

A100 = (Gpu(0, "A100", "8.0"),)
CONV = "[[64, 3, 224, 224], [64, 3, 11, 11]]"  # C = 3: no TF32 Tensor Core kernel
CONV_OK = "[[64, 64, 55, 55], [192, 64, 5, 5]]"


def _conv_ops(
    uses: list[bool | None], shapes: list[str], gpu: list[int], dtype: str = "float32"
) -> pa.Table:
    n = len(uses)
    return schema.conform(
        {
            "op_id": [f"op{i}" for i in range(n)],
            "name": ["aten::cudnn_convolution"] * n,
            "type": ["cudnn_convolution"] * n,
            "dtype": [dtype] * n,
            "input_shapes": shapes,
            "calls": [1] * n,
            "gpu_ns": gpu,
            "kernel_calls": [1] * n,
            "tc_eligible": [True] * n,
            "profiler_uses_tc": uses,  # the only evidence: no kernel rows in these tables
            "device_id": pa.array([0] * n, pa.int32()),
        },
        schema.TableKind.OPS,
    )


def _view(ops: pa.Table) -> Report:
    meta = run_meta(
        format=SourceFormat.KINETO_JSON,
        framework="PyTorch 2.1",
        gpus=A100,
        iterations=IterationInfo(),
        kernel_granularity=Granularity.NONE,
        op_granularity=Granularity.NONE,
    )
    return api.analyze(Run(meta=meta, ops=ops), source_path="synthetic")


def test_synthetic_partly_missed_op_counts_its_missed_calls() -> None:
    view = _view(_conv_ops([True, True, False], [CONV_OK, CONV_OK, CONV], [5_000, 5_000, 3_000]))
    (op,) = view.analysis.breakdown.ops
    assert (op.uses_tc, op.missed_tc, op.partly_missed, op.missed_ns) == (True, False, True, 3_000)
    tc = view.analysis.verdict
    # named fix (fix11b): the op used Tensor Cores in some calls, so it counts as using, not in
    # both lists: using + not using == eligible; its missed calls' time stays in the missed time
    assert (tc.eligible_op_count, tc.using_op_count, tc.eligible_not_using_op_count) == (1, 1, 0)
    assert (tc.partly_using_op_count, tc.missed_op_count) == (1, 1)
    assert (tc.eligible_gpu_ns, tc.eligible_not_using_gpu_ns) == (13_000, 3_000)


def test_synthetic_missed_and_unknown_calls_count_only_the_missed_time() -> None:
    """An op missed Tensor Cores in one call and has no verdict for another: only the missed
    call's time is missed; the unknown call's is unknown, in the op row and in the headline."""
    view = _view(_conv_ops([False, None], [CONV_OK, CONV_OK], [5_000, 3_000]))
    (op,) = view.analysis.breakdown.ops
    assert (op.uses_tc, op.tc_known, op.missed_tc, op.partly_missed) == (False, True, True, False)
    assert (op.gpu_ns, op.missed_ns, op.tc_ns, op.other_ns) == (8_000, 5_000, 0, 3_000)
    tc = view.analysis.verdict
    assert (tc.eligible_gpu_ns, tc.eligible_not_using_gpu_ns) == (8_000, 5_000)
    (f,) = [f for f in view.findings if f.id in {"TC001", "TC004"}]
    assert f.estimated_saving_ns == int(5_000 * (1 - 1 / thresholds.TC_SPEEDUP))


def test_synthetic_partly_missed_conv_gets_the_padding_not_tf32_off() -> None:
    """TF32 is evidently on (other float32 calls used Tensor Cores), so the C = 3 call missed for
    its shape: the why-not says pad C, and TC003 reports the missed calls' time only."""
    view = _view(_conv_ops([True, False], [CONV_OK, CONV], [5_000, 3_000]))
    (w,) = view.analysis.verdict.why_not
    assert w.reason == Reason.UNALIGNED
    assert w.padding is not None and "3 → 4" in w.padding
    (f,) = [f for f in view.findings if f.id == "TC003"]
    assert "The calls that missed take 3.0 µs" in f.detail and "of them" not in f.detail
    assert f.estimated_saving_ns == int(3_000 * (1 - 1 / thresholds.TC_SPEEDUP))  # missed time only


def test_synthetic_float32_run_without_any_tensor_core_call_is_still_tf32_off() -> None:
    (w,) = _view(_conv_ops([False], [CONV_OK], [3_000])).analysis.verdict.why_not
    assert w.reason == Reason.FP32_TF32_OFF


def test_never_partly_missed_without_eligibility_or_time() -> None:
    o = OpRow("x", "mm", 1, 0, None, True, True, "float32", missed_gpu_ns=0)
    assert not o.partly_missed and not o.has_misses and o.missed_ns == 0
    o = OpRow("x", "add", 1, 10, None, False, False, "float32", missed_gpu_ns=10)
    assert not o.has_misses and o.missed_ns == 0


SAMPLE = (
    ROOT
    / "sample_traces"
    / "kineto-a100-tf32-alexnet"
    / ("benchmark_result_2869224_1695835535_trace.json.gz")
)


def test_alexnet_first_convolution_calls_count_as_missed() -> None:
    """The bundled A100 TF32 AlexNet trace: 4 cudnn_convolution calls launched no Tensor Core
    kernel while the others did. Their kernel time, summed here straight from the kernel table,
    is now in the headline beside addmm's (which never used Tensor Cores)."""
    run = api.load(SAMPLE)
    assert run.ops is not None and run.kernels is not None
    k = tc_kernels.classify_kernels(run.kernels)
    conv_ids = run.ops.filter(
        pc.equal(run.ops["name"].cast(pa.string()), "aten::cudnn_convolution")
    )["op_id"].cast(pa.string())
    per_call = (
        pa.table(
            {
                "op": k["op_id"].cast(pa.string()),
                "tc": pc.fill_null(k["uses_tc"], False),
                "d": k["duration_ns"],
            }
        )
        .filter(pc.is_in(k["op_id"].cast(pa.string()), value_set=conv_ids))
        .group_by("op")
        .aggregate([("tc", "any"), ("d", "sum")])
    )
    no_tc = per_call.filter(pc.invert(per_call["tc_any"]))
    assert no_tc.num_rows == 4 and per_call.num_rows > 4
    missed = pc.sum(no_tc["d_sum"]).as_py()
    assert missed == 3_280_000

    a = api.analyze(run).analysis
    by_name = {o.name: o for o in a.breakdown.ops}
    conv, addmm = by_name["aten::cudnn_convolution"], by_name["aten::addmm"]
    assert conv.partly_missed and conv.missed_ns == missed
    assert addmm.missed_tc and addmm.missed_ns == addmm.gpu_ns
    assert a.verdict.eligible_not_using_gpu_ns == missed + (addmm.gpu_ns or 0)
    # named fix (fix11b): addmm used them in no call; the convolution is partly using
    assert (a.verdict.eligible_not_using_op_count, a.verdict.missed_op_count) == (1, 2)


def test_alexnet_verdict_line_says_some_calls_only() -> None:
    html = api.render_html(api.analyze(api.load(SAMPLE)))
    assert "2 eligible ops did not (1 of them only in some of its calls)." in html


@pytest.mark.parametrize(
    ("partly", "total", "text"),
    [
        (0, 3, ""),
        (1, 1, " (only in some of its calls)"),
        (2, 2, " (each only in some of its calls)"),
        (1, 3, " (1 of them only in some of its calls)"),
        (2, 3, " (2 of them only in some of their calls)"),
    ],
)
def test_some_calls_only_reads_for_one_op_and_for_several(
    partly: int, total: int, text: str
) -> None:
    """The remark after "N eligible ops did not" (the verdict line and TC001/TC004): one wording
    in the analysis, grammatical for one op and for several (it read "(1 of them ...)" for one)."""
    assert in_some_calls_only(partly, total) == text
