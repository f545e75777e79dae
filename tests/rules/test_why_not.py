"""Why an eligible op missed Tensor Cores: reasons, fixes and padding from the row alone."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import budget
from trace_paths import ROOT

from tcreport import schema
from tcreport.analysis import shapes
from tcreport.analysis import why_not as wn
from tcreport.analysis.why_not import Reason
from tcreport.model import Gpu

OPS = schema.TableKind.OPS
RTX2070S, A100, H100 = (
    (Gpu(0, "RTX 2070 SUPER", "7.5"),),
    (Gpu(0, "A100", "8.0"),),
    (Gpu(0, "H100", "9.0"),),
)


def ops(rows: list[tuple[str, str | None, str | None]], uses: bool | None = False) -> pa.Table:
    """(type, dtype, input_shapes) rows, all eligible-by-type and missing TC unless ``uses``."""
    n = len(rows)
    return schema.conform(
        {"op_id": [f"op{i}" for i in range(n)], "name": [f"layer{i}/{r[0]}" for i, r in enumerate(rows)],
         "type": [r[0] for r in rows], "dtype": pa.array([r[1] for r in rows], pa.string()),
         "input_shapes": pa.array([r[2] for r in rows], pa.string()), "calls": [1] * n,
         "tc_eligible": [True] * n, "uses_tc": pa.array([uses] * n, pa.bool_())},
        OPS,
    )  # fmt: skip


def one(
    row: tuple[str, str | None, str | None],
    framework: str | None = "PyTorch 2.6",
    gpus: tuple[Gpu, ...] = H100,
) -> wn.WhyNot:
    (w,) = wn.explain(ops([row]), framework, gpus)
    return w


@pytest.mark.parametrize(
    ("text", "dims"),
    [
        ("<N:32, C:3, H:32, W:32>; <K:6, C:3, R:3, S:3>", [(32, 3, 32, 32), (6, 3, 3, 3)]),
        ("[[32, 128], [128, 50257]]", [(32, 128), (128, 50257)]),
        ("sizes = [[32, 128], [128, 50257], []]", [(32, 128), (128, 50257), ()]),
        ("[[32,3,32,32],[6,3,3,3],[6]]\n", [(32, 3, 32, 32), (6, 3, 3, 3), (6,)]),
        ("[4, 8]", [(4, 8)]),
        ("garbage [[1, 2", []),
        (None, []),
    ],
)
def test_parse_shapes(text: str | None, dims: list[tuple[int, ...]]) -> None:
    assert [s.dims for s in shapes.parse_shapes(text)] == dims


def test_dlprof_labels_are_kept() -> None:
    x, w = shapes.parse_shapes("<N:32, C:3, H:32, W:32>; <K:6, C:3, R:3, S:3>")
    assert (x.get("C"), w.get("K"), w.get("Q")) == (3, 6, None)


def test_unaligned_vocab_gets_concrete_padding() -> None:
    w = one(("aten::mm", "bfloat16", "[[32, 128], [128, 50257]]"))
    assert w.reason is Reason.UNALIGNED
    assert w.padding == "pad N 50257 → 50264"
    assert "50264" in w.fix


@pytest.mark.parametrize(
    ("dtype", "align", "expect"),
    [
        ("float16", 8, "pad K 100 → 104"),
        ("int8", 16, "pad K 100 → 112"),
        ("float8_e4m3fn", 16, "pad K 100 → 112"),
    ],
)
def test_alignment_per_precision(dtype: str, align: int, expect: str) -> None:
    w = one(("linear", dtype, "[[64, 100], [256, 100]]"))
    assert (w.reason, w.padding) == (Reason.UNALIGNED, expect)
    assert str(align) in w.message


def test_conv_channels_and_channels_last() -> None:
    w = one(("aten::conv2d", "float16", "[[32, 3, 224, 224], [64, 3, 7, 7]]"))
    assert w.padding == "pad C 3 → 8" and "channels_last" in w.fix
    tf = one(
        ("Conv2D", "float16", "[[32, 224, 224, 3], [7, 7, 3, 60]]"), framework="TensorFlow 2.15"
    )
    assert tf.padding == "pad C 3 → 8, K 60 → 64" and "channels_last" not in tf.fix


def test_fp32_on_turing_needs_amp() -> None:
    w = one(("conv2d", "float32", "<N:32, C:3, H:32, W:32>; <K:6, C:3, R:3, S:3>"), gpus=RTX2070S)
    assert w.reason is Reason.FP32_NO_TF32
    assert "torch.autocast" in w.fix and "float16" in w.fix and "GradScaler" in w.fix
    assert w.padding == "pad C 3 → 8, K 6 → 8"  # what fp16 will need
    keras = one(("MatMul", "DT_FLOAT", None), framework="TensorFlow 2.4", gpus=RTX2070S)
    assert keras.reason is Reason.FP32_NO_TF32 and "mixed_float16" in keras.fix


def test_fp32_on_ampere_names_tf32_switch() -> None:
    w = one(("aten::addmm", "float32", "[[512], [64, 1024], [1024, 512]]"), gpus=A100)
    assert w.reason is Reason.FP32_TF32_OFF
    assert "allow_tf32" in w.fix and w.padding is None
    assert one(("MatMul", "float32", None), framework="TensorFlow", gpus=A100).fix.startswith(
        "tf.config"
    )
    assert one(("linear", "float32", None), framework=None, gpus=()).reason is Reason.FP32_TF32_OFF


def _fp32_cnn(framework: str) -> list[wn.WhyNot]:
    """A float32 run whose convolution used Tensor Cores (TF32) and whose matmul did not, with a
    TF32-misaligned matmul: the example CNN's case on an H200 (PyTorch's cuDNN TF32 switch is on
    by default, its matmul switch off)."""
    t = ops(
        [
            (
                "aten::cudnn_convolution",
                "float32",
                "<N:256, C:32, H:64, W:64>; <K:32, C:32, R:3, S:3>",
            ),
            ("aten::mm", "float32", "[[256, 30], [30, 333]]"),
        ]
    )
    t = t.set_column(t.schema.get_field_index("uses_tc"), "uses_tc", pa.array([True, False]))
    return wn.explain(t, framework, H100)


def test_tf32_convolutions_do_not_mean_tf32_matmuls_in_pytorch() -> None:
    (w,) = _fp32_cnn("PyTorch 2.11")
    assert (w.op_id, w.reason) == ("op1", Reason.FP32_TF32_OFF)
    assert "allow_tf32" in w.fix and "pad N 333 → 336" in w.fix


def test_tensorflow_has_one_tf32_switch() -> None:
    (w,) = _fp32_cnn("TensorFlow 2.15")
    assert (w.op_id, w.reason) == ("op1", Reason.UNALIGNED)
    assert w.precision == "tf32" and "not multiples of 4 for tf32" in w.message


def test_fp32_op_in_half_run_is_outside_autocast() -> None:
    t = ops([("linear", "float32", None), ("aten::mm", "bfloat16", "[[64, 64], [64, 64]]")])
    t = t.set_column(t.schema.get_field_index("uses_tc"), "uses_tc", pa.array([False, True]))
    (w,) = wn.explain(t, "PyTorch", H100)
    assert (w.op_id, w.reason) == ("op0", Reason.FLOAT32_AMONG_HALF)
    assert "autocast" in w.fix


def test_other_reasons() -> None:
    assert one(("bmm", "float64", None)).reason is Reason.FP64
    assert (
        one(("mm", "float8_e4m3fn", "[[64, 64], [64, 64]]"), gpus=A100).reason
        is Reason.DTYPE_UNSUPPORTED
    )
    assert one(("mm", "int64", None)).reason is Reason.DTYPE_UNSUPPORTED
    tiny = one(("mm", "float16", "[[8, 16], [16, 8]]"))
    assert tiny.reason is Reason.TINY and tiny.padding is None
    assert one(("mm", "float16", None)).reason is Reason.UNKNOWN
    assert one(("mm", None, None)).reason is Reason.UNKNOWN


def test_only_eligible_misses_are_explained() -> None:
    assert wn.explain(ops([("mm", "float32", None)], uses=True), "PyTorch", H100) == []
    assert wn.explain(ops([("mm", "float32", None)], uses=None), "PyTorch", H100) == []
    assert wn.explain(schema.empty(OPS), None, ()) == []


def test_unclassified_ops_are_classified_first() -> None:
    t = schema.conform({"op_id": ["a", "b"], "name": ["x", "y"], "type": ["linear", "relu"],
                        "dtype": ["float32", "float32"], "calls": [1, 1], "gpu_ns": [5, 5],
                        "profiler_uses_tc": [False, False]}, OPS)  # fmt: skip
    assert [w.op_id for w in wn.explain(t, "PyTorch", RTX2070S)] == ["a"]


@settings(max_examples=budget(60), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(
                ["mm", "linear", "conv2d", "Conv2D", "bmm", "addmm", "einsum", "MatMul"]
            ),
            st.one_of(
                st.none(),
                st.sampled_from(["float32", "float16", "bfloat16", "double", "int8"]),
                st.text(max_size=8),
            ),
            st.one_of(
                st.none(),
                st.text(max_size=30),
                st.lists(st.lists(st.integers(0, 70000), max_size=4), max_size=4).map(str),
            ),
        ),
        max_size=10,
    ),
    st.sampled_from([(), RTX2070S, A100, (Gpu(0, None, "x.y"),)]),
)
def test_explain_never_raises(
    rows: list[tuple[str, str | None, str | None]], gpus: tuple[Gpu, ...]
) -> None:
    out = wn.explain(ops(rows), "PyTorch", gpus)
    assert len(out) == len(rows)
    assert all(w.message and w.fix for w in out)


def test_doc_lists_reason_codes() -> None:
    doc = (ROOT / "docs" / "tensor-core-rules.md").read_text(encoding="utf-8")
    for r in Reason:
        assert f"`{r.value}`" in doc
