"""``tcreport diff`` of two JAX (XLA) runs pairs ops by framework op, not by HLO name.

On the H200 recordings of one JAX training step in three precisions
(sample_traces/h200-jax-xla-ncu): XLA named the same work differently in each compilation
(the float32 run's cuBLAS call ``custom-call.4`` is the bf16 run's Triton fusion
``gemm_fusion_dot``; ``input_reduce_fusion.1`` reduces [256, 1000] in one run and [256, 1024] in
the other), and the ops' verdicts weigh their Tensor Core move beside their time.
"""

from __future__ import annotations

from functools import cache

import pytest
from trace_paths import SAMPLES

pytest.importorskip("xprof")
pytest.importorskip("google.protobuf")

from tcreport import api  # noqa: E402
from tcreport.analysis.figures import OpRow  # noqa: E402
from tcreport.compare import diff as compare  # noqa: E402
from tcreport.compare import op_keys  # noqa: E402
from tcreport.compare.model import TYPE_ROW, Change, Diff, Presence, RowDiff, TcMove  # noqa: E402
from tcreport.render import diff_json, diff_markdown  # noqa: E402
from tcreport.report import Report  # noqa: E402

JAX = SAMPLES / "h200-jax-xla-ncu"


@cache
def _report(precision: str) -> Report:
    return api.analyze(api.load(JAX / precision), source_path=precision)


@cache
def _diff(base: str, head: str) -> Diff:
    return compare.diff(_report(base), _report(head))


def _op(precision: str, name: str) -> OpRow:
    return next(o for o in _report(precision).analysis.breakdown.ops if o.name == name)


def _row(d: Diff, key: str) -> RowDiff:
    return next(r for r in d.ops if r.key == key)


def _per_iter(o: OpRow) -> float:
    return (o.gpu_ns or 0) / 6  # six steps aggregated in each recording


def test_the_same_gemm_compiled_two_ways_is_one_row() -> None:
    d = _diff("fp32", "bf16")
    cublas, triton = _op("fp32", "custom-call.4"), _op("bf16", "gemm_fusion_dot")
    assert (cublas.type, triton.type) == ("cublaslt-matmul", "dot")
    row = _row(d, f"{cublas.scope} {cublas.input_shapes}")
    assert row.presence is Presence.BOTH and row.matched_by == op_keys.BY_OP_AND_SHAPES
    assert row.base_ns == _per_iter(cublas) and row.head_ns == _per_iter(triton)
    assert (row.base_ops, row.head_ops) == (("custom-call.4",), ("gemm_fusion_dot",))
    # no op of either run is left to a type pool because its HLO name is new
    assert not any(
        r.key.startswith("ops of type") and r.type in ("dot", "cublaslt-matmul") for r in d.ops
    )


def test_a_reused_hlo_name_is_not_taken_for_the_same_op() -> None:
    # input_reduce_fusion.1 is the [256, 1000] reduce in fp32 and the [256, 1024] one in bf16
    d = _diff("fp32", "bf16")
    b, h = _op("fp32", "input_reduce_fusion.1"), _op("bf16", "input_reduce_fusion.2")
    assert b.input_shapes == h.input_shapes == "[[256, 1000]]"
    assert _op("bf16", "input_reduce_fusion.1").input_shapes != b.input_shapes
    row = _row(d, f"{b.scope} {b.input_shapes}")
    assert (row.base_ns, row.head_ns) == (_per_iter(b), _per_iter(h))
    assert not any(r.key == "input_reduce_fusion.1" for r in d.ops)


def test_one_framework_op_whose_shapes_differ_is_paired_alone() -> None:
    # the forward 1000 -> 1024 dense: XLA padded its split K to 252 for TF32 and 256 for bf16
    d = _diff("fp32", "bf16")
    b, h = _op("fp32", "gemm_fusion_dot.4"), _op("bf16", "gemm_fusion_dot.4")
    assert b.scope == h.scope and b.input_shapes != h.input_shapes
    assert b.scope is not None
    row = _row(d, b.scope)
    assert row.matched_by == op_keys.BY_OP and (row.base_ns, row.head_ns) == (
        _per_iter(b),
        _per_iter(h),
    )


def test_ops_with_no_framework_op_pair_by_name_type_and_shapes_else_pool_by_type() -> None:
    d = _diff("fp32", "bf16")
    pad = _row(d, "loop_pad_fusion")  # XLA's own pad: no JAX name stack, same in both runs
    assert pad.matched_by == "name" and pad.presence is Presence.BOTH
    # bf16's own convert fusion has no framework op and no twin: its type's pool, said so
    pool = _row(d, TYPE_ROW.format(type="fusion"))
    assert pool.presence is Presence.NEW
    assert "the other ops with no framework op grouped by op type (1 type)" in d.matching
    assert d.matching.startswith("XLA ops matched by the framework op")


def test_a_self_diff_pairs_every_op_with_itself() -> None:
    d = _diff("bf16", "bf16")
    assert d.ops and all(r.presence is Presence.BOTH for r in d.ops)
    assert not any(r.changed for r in d.ops)  # "no change" (or "unknown": no time recorded)
    assert {r.matched_by for r in d.ops} <= {op_keys.BY_OP_AND_SHAPES, "name"}


def test_tensor_core_gain_with_longer_time_is_changed_not_regressed() -> None:
    # fp32 HIGHEST -> fp32 DEFAULT: every dot moved onto the Tensor Cores (TF32); the "dot" type
    # grew in time because the fp32 run has one more dot op (the other ran as an unlinked cuBLAS
    # kernel in the HIGHEST run), so time alone would call it a regression
    d = _diff("fp32-highest", "fp32")
    dot = next(r for r in d.op_types if r.key == "dot")
    assert (dot.base_tc_share, dot.head_tc_share) == (0.0, 1.0)
    assert dot.delta_ns is not None and dot.delta_ns > dot.threshold_ns  # type: ignore[operator]
    assert dot.tc_move is TcMove.GAINED and dot.verdict is Change.CHANGED
    assert dot.tc_note(d.words) == "now on TC, slower"
    gained = [r for r in (*d.ops, *d.op_types) if r.tc_move is TcMove.GAINED]
    assert len(gained) >= 8 and not any(r.verdict is Change.REGRESSED for r in gained)
    md = diff_markdown.render(d, "0")
    assert "| changed (now on TC, slower) |" in md
    assert "| **improved** (now on TC) |" in md
    data = diff_json.diff_dict(d, "0")
    rows = data["op_types"]
    assert isinstance(rows, list)
    assert next(r for r in rows if r["key"] == "dot")["verdict"] == "changed"


def test_other_formats_keep_their_op_names() -> None:
    # only an XSpace whose ops carry XLA's framework op takes the XLA path
    assert op_keys.compiled(_report("bf16").analysis)
    kineto = api.analyze(api.load(SAMPLES / "kineto-a100-tf32-alexnet"))
    assert not op_keys.compiled(kineto.analysis)
