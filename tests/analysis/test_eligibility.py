"""Op eligibility and op-level Tensor Core use, against DLProf's own labels."""

from __future__ import annotations

import csv

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import budget
from trace_paths import DLPROF_CNN, ROOT

from tcreport import schema
from tcreport.analysis import eligibility as el
from tcreport.analysis import tc_kernels as tk

OPS, K = schema.TableKind.OPS, schema.TableKind.KERNELS


def ops(types: list[str | None], **cols: list[object]) -> pa.Table:
    n = len(types)
    data: dict[str, object] = {
        "op_id": cols.pop("op_id", [f"op{i}" for i in range(n)]),
        "name": cols.pop("name", [t or f"op{i}" for i, t in enumerate(types)]),
        "type": pa.array(types, pa.string()),
        "calls": [1] * n,
    }
    data.update(cols)
    return schema.conform(data, OPS)


@pytest.mark.parametrize(
    "op_type",
    ["aten::mm", "addmm", "aten::bmm", "baddbmm", "aten::matmul", "aten::linear", "aten::conv2d",
     "conv1d", "conv3d", "aten::conv_transpose2d", "aten::convolution", "aten::_convolution",
     "aten::cudnn_convolution", "aten::einsum", "aten::scaled_dot_product_attention",
     "aten::_scaled_dot_product_flash_attention", "aten::_efficient_attention_forward", "aten::lstm",
     "aten::gru_cell", "MmBackward0", "AddmmBackward0", "ConvolutionBackward0", "BmmBackward0",
     "autograd::engine::evaluate_function: MmBackward0", "ScaledDotProductFlashAttentionBackward0",
     "MatMul", "BatchMatMulV2", "BatchMatMulV3", "Conv2D", "Conv2DBackpropFilter", "Conv3D",
     "DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput", "Einsum", "CudnnRNN", "CudnnRNNV3",
     "_FusedMatMul", "_FusedConv2D", "model/dense/MatMul", "dot.12", "convolution.3",
     "custom-call.__cublas$gemm", "conv2d", "linear", "matmul"],
)  # fmt: skip
def test_eligible_types(op_type: str) -> None:
    assert el.is_eligible_type(op_type)


@pytest.mark.parametrize(
    "op_type",
    ["aten::relu", "aten::mv", "aten::addmv", "aten::add", "aten::layer_norm", "Relu", "BiasAdd",
     "cuda", "flatten", "max_pool2d", "uniform_", "custom-call.7", "", "ReluBackward0", "aten::copy_"],
)  # fmt: skip
def test_not_eligible_types(op_type: str) -> None:
    assert not el.is_eligible_type(op_type)


def test_kernel_evidence_makes_ops_eligible_and_using() -> None:
    o = ops(["aten::mm", "my_fused_thing", "aten::mm", "aten::relu", "aten::linear"],
            gpu_ns=[10, 10, 10, 0, None], profiler_uses_tc=[None, None, None, None, True])  # fmt: skip
    k = tk.classify_kernels(
        schema.conform(
            {"name": ["volta_sgemm_x", "nvjet_tst_x", "sm90_xmma_gemm_bf16", "mystery", "elementwise_kernel"],
             "op_id": ["op0", "op1", "op2", "op2", "op2"], "duration_ns": [1] * 5, "calls": [1] * 5},
            K,
        )
    )  # fmt: skip
    out = el.classify_ops(o, k)
    schema.validate(out, OPS)
    assert out.column("tc_eligible").to_pylist() == [True, True, True, False, True]
    # op2: one TC kernel suffices; op3: no GPU work; op4: no kernels -> the profiler's label
    assert out.column("uses_tc").to_pylist() == [False, True, True, False, True]
    assert out.column("profiler_uses_tc").to_pylist() == [None, None, None, None, True]


def test_unknown_kernels_leave_op_unknown() -> None:
    o = ops(["aten::mm"], gpu_ns=[5])
    k = tk.classify_kernels(
        schema.conform(
            {
                "name": ["triton_tem_fused_mm_0", "reduce_kernel"],
                "op_id": ["op0", "op0"],
                "duration_ns": [1, 1],
                "calls": [1, 1],
            },
            K,
        )  # fmt: skip
    )
    assert el.classify_ops(o, k).column("uses_tc").to_pylist() == [None]


def test_without_kernels_and_empty() -> None:
    out = el.classify_ops(ops(["linear", "relu"], profiler_uses_tc=[True, None]), None)
    assert out.column("tc_eligible").to_pylist() == [True, False]
    assert out.column("uses_tc").to_pylist() == [True, None]
    empty = el.classify_ops(schema.empty(OPS), schema.empty(K))
    assert empty.num_rows == 0
    assert el.eligibility_agreement(empty).compared == 0


@settings(max_examples=budget(40), deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.text(max_size=30), st.sampled_from(["mm", "Conv2D", "relu"])),
                          st.one_of(st.none(), st.booleans())), max_size=20))  # fmt: skip
def test_classify_ops_never_raises(rows: list[tuple[str | None, bool | None]]) -> None:
    o = ops([r[0] for r in rows], profiler_uses_tc=pa.array([r[1] for r in rows], pa.bool_()))
    out = el.classify_ops(o, None)
    assert out.column("tc_eligible").null_count == 0
    assert out.num_rows == len(rows)


def dlprof_ops() -> pa.Table:
    if not DLPROF_CNN.exists():
        pytest.skip("real trace not available")
    with (DLPROF_CNN / "dlprof_detailed.csv").open(newline="") as f:
        rows = list(csv.reader(f))[1:]
    recs = [dict(zip(rows[0], r, strict=True)) for r in rows[1:]]

    def yn(v: str) -> bool | None:
        return None if v == "" else v == "yes"

    return ops([r["Op Type"] for r in recs], op_id=[r["Op ID"] for r in recs], name=[r["Op Name"] for r in recs],
               dtype=[r["Data Type"] or None for r in recs], gpu_ns=[int(r["Total GPU Time (ns)"]) for r in recs],
               profiler_tc_eligible=[yn(r["TC Eligible"]) for r in recs],
               profiler_uses_tc=[yn(r["Using TC"]) for r in recs])  # fmt: skip


def dlprof_kernels() -> pa.Table:
    with (DLPROF_CNN / "dlprof_kernel.csv").open(newline="") as f:
        rows = list(csv.reader(f))[1:]
    recs = [dict(zip(rows[0], r, strict=True)) for r in rows[1:]]
    return schema.conform({"name": [r["Kernel Name"] for r in recs], "op_id": [r["Op ID"] for r in recs],
                           "duration_ns": [int(r["Total GPU Time (ns)"]) for r in recs], "calls": [1] * len(recs),
                           "profiler_uses_tc": [r["Uses TC"] == "yes" for r in recs]}, K)  # fmt: skip


@pytest.mark.realtraces
@pytest.mark.parametrize("with_kernels", [True, False])
def test_dlprof_eligibility_agrees_100_percent(with_kernels: bool) -> None:
    o = dlprof_ops()
    out = el.classify_ops(o, tk.classify_kernels(dlprof_kernels()) if with_kernels else None)
    eligible = out.filter(out.column("tc_eligible"))
    assert sorted(eligible.column("type").to_pylist()) == [
        "conv2d",
        "conv2d",
        "linear",
        "linear",
        "linear",
    ]
    assert out.column("uses_tc").to_pylist().count(True) == 0
    a = el.eligibility_agreement(out)
    assert a.compared == out.num_rows and a.rate == 1.0
    u = el.op_tc_agreement(out)
    assert u.compared == out.num_rows and u.rate == 1.0


def test_doc_lists_eligible_types() -> None:
    doc = (ROOT / "docs" / "tensor-core-rules.md").read_text(encoding="utf-8")
    for t in sorted(el.ELIGIBLE):
        assert f"`{t}`" in doc, t
