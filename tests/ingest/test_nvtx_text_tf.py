"""TensorFlow NVTX range texts (NVIDIA builds, ``TF_ENABLE_NVTX_RANGES[_DETAILED]=1``).

Every TensorFlow text here is synthetic: built by hand from the format strings in TensorFlow's
(NVIDIA fork's) source, ``StrCat(op, ": ", name)`` and the detailed ``{"op":..,"name":..,"args":
[..],"attrs":{..}}`` record, not copied from a real Nsight Systems export.
"""

from __future__ import annotations

import pyarrow as pa

from tcreport.analysis.shapes import normalise_dtype, parse_shapes
from tcreport.ingest.nsys import nvtx_text as K
from tcreport.ingest.nsys.nvtx_text import parse


def _rows(texts: list[str], tf: bool) -> list[tuple[int, str | None, str | None, str | None]]:
    p = parse(pa.array(texts), tf_domain=tf)
    return list(
        zip(
            p.kind.tolist(),
            p.label.to_pylist(),
            p.dtype.to_pylist(),
            p.shapes.to_pylist(),
            strict=True,
        )
    )


def test_synthetic_short_form_underscore_types_are_ops_in_tf_mode() -> None:
    texts = [
        "_FusedMatMul: dense/BiasAdd",
        "_FusedConv2D: conv/Conv2D",
        "MatMul: cluster_0_1/xla_run/dense/MatMul",
        "Cast: model>head/Cast.1",
    ]
    assert _rows(texts, tf=True) == [
        (K.TF_OP, "_FusedMatMul", None, None),
        (K.TF_OP, "_FusedConv2D", None, None),
        (K.TF_OP, "MatMul", None, None),
        (K.TF_OP, "Cast", None, None),
    ]
    # outside TensorFlow mode the same texts are plain ranges, labelled with their text
    assert _rows(texts, tf=False) == [(K.OTHER, t, None, None) for t in texts]


def test_synthetic_short_form_containers_stay_plain_ranges() -> None:
    texts = [
        "_XlaRun: cluster_0_1/xla_run",
        "XlaLaunch: StatefulPartitionedCall/XlaLaunch",
        "StatefulPartitionedCall: StatefulPartitionedCall",
        "PartitionedCall: PartitionedCall",
        "_XlaCompile: cluster_0_1/xla_compile",
    ]
    p = parse(pa.array(texts), tf_domain=True)
    assert p.kind.tolist() == [K.OTHER, K.OTHER, K.OTHER, K.OTHER, K.TF_OP]
    assert p.label.to_pylist() == [*texts[:4], "_XlaCompile"]
    assert p.tf_label.to_pylist() == [None, None, None, None, "_XlaCompile"]
    assert K.is_op(p.kind).tolist() == [False, False, False, False, True]
    assert {"_XlaRun", "XlaLaunch", "StatefulPartitionedCall", "PartitionedCall"} <= K.TF_CONTAINERS
    assert "_XlaCompile" not in K.TF_CONTAINERS


def test_synthetic_short_form_lookalikes() -> None:
    texts = ["Epoch: 3", "Note: see above", "epoch: 3", "Step:3", ": dense/MatMul", "__init__: x"]
    # "Epoch: 3" has TensorFlow's form; it is read as an op only once the run is TensorFlow
    assert _rows(texts, tf=False) == [(K.OTHER, t, None, None) for t in texts]
    tf = parse(pa.array(texts), tf_domain=True)
    assert tf.kind.tolist() == [K.TF_OP, K.OTHER, K.OTHER, K.OTHER, K.OTHER, K.OTHER]
    assert tf.label.to_pylist() == ["Epoch", *texts[1:]]


def test_synthetic_detailed_record_shapes_and_dtype() -> None:
    texts = [
        '{"op":"MatMul","name":"dense/MatMul","args":[{"name":"x","shape":[32,784]},'
        '{"name":"w","shape":[784,10]}],"attrs":{"transpose_a":false,"T":"float","transpose_b":false}}',
        '{"op":"_FusedMatMul","name":"dense_1/BiasAdd","args":[{"name":"a","shape":[8,64]},'
        '{"name":"b","shape":[64,16]},{"name":"bias","shape":[16]}],"attrs":{"T":"bfloat32"}}',
        '{"op":"Conv2D","name":"conv/Conv2D","args":[{"name":"x","shape":[2,28,28,1]},'
        '{"name":"f","shape":[3,3,1,32]}],"attrs":{"data_format":"NHWC","T":"float16&"}}',
        '{"op":"AddV2","name":"add","args":[{"name":"x","shape":[]},{"name":"y","shape":[]}],'
        '"attrs":{"T":"half"}}',
        '{"op":"Fill","name":"zeros","args":[{"name":"d","shape":[2]},{"name":"v","shape":[]}],'
        '"attrs":{"index_type":"int32","dtype":"double"}}',
    ]
    assert _rows(texts, tf=False) == [
        (K.TF_OP, "MatMul", "float32", "[[32, 784], [784, 10]]"),
        (K.TF_OP, "_FusedMatMul", "bfloat16", "[[8, 64], [64, 16], [16]]"),
        (K.TF_OP, "Conv2D", "float16", "[[2, 28, 28, 1], [3, 3, 1, 32]]"),
        (K.TF_OP, "AddV2", "float16", "[[], []]"),
        (K.TF_OP, "Fill", "float64", "[[2], []]"),
    ]
    # the strings are what the analysis reads: DLProf's shape format and numpy dtype names
    dims = [s.dims for s in parse_shapes("[[32, 784], [784, 10]]")]
    assert dims == [(32, 784), (784, 10)]
    assert [normalise_dtype(d) for d in ("float32", "bfloat16", "float16")] == [
        "fp32",
        "bf16",
        "fp16",
    ]


def test_synthetic_detailed_record_not_json() -> None:
    bad = (
        '{"op":"_FusedConv2D","name":"conv/Conv2D","args":[{"name":"x","shape":[?,28,28,1]},'
        '{"name":"f","shape":[3,3,1,32]}],"attrs":{"value":"<Tensor<type: string shape: [] '
        'values: "a":"b">>","padding":"SAME","T":"float32","shape":[?,784],"eps":nan}}'
    )
    cut = (  # 11 inputs: 10 listed, then a bare null; the 3rd has unknown rank
        '{"op":"ConcatV2","name":"concat","args":[{"name":"a","shape":[4,2]},{"name":"b",'
        '"shape":[4,3]},{"name":"c","shape":null}' + ',{"name":"d","shape":[4,1]}' * 7 + ",null],"
        '"attrs":{"N":10,"T":"float32"}}'
    )
    assert _rows([bad, cut], tf=False) == [
        (K.TF_OP, "_FusedConv2D", "float32", "[[?, 28, 28, 1], [3, 3, 1, 32]]"),
        (K.TF_OP, "ConcatV2", "float32", "[[4, 2], [4, 3]]"),
    ]
    # "?" stays visible in the text and the analysis drops such shapes rather than misread them
    assert parse_shapes("[[?, 28, 28, 1], [3, 3, 1, 32]]") == []


def test_synthetic_detailed_containers_and_records_without_op() -> None:
    texts = [
        '{"op":"StatefulPartitionedCall","name":"StatefulPartitionedCall","args":'
        '[{"name":"x","shape":[32,784]}],"attrs":{"Tin":["float32"]}}',
        '{"op":"_XlaRun","name":"cluster_0_1/xla_run","args":[],"attrs":{}}',
        '{"op":"","name":"nothing","args":[],"attrs":{}}',
        '{"name":"dense/MatMul","op":"MatMul"}',
        '{"op": "MatMul", "name": "dense/MatMul", "args": {}}',  # the older fixture's spacing
    ]
    for tf in (False, True):
        assert _rows(texts, tf=tf) == [
            (K.OTHER, "StatefulPartitionedCall: StatefulPartitionedCall", None, None),
            (K.OTHER, "_XlaRun: cluster_0_1/xla_run", None, None),
            (K.OTHER, texts[2], None, None),
            (K.OTHER, texts[3], None, None),
            (K.TF_OP, "MatMul", None, None),
        ]


def test_dlprof_and_autograd_texts_parse_as_before() -> None:
    texts = [
        "aten::mm, seq = 5, op_id = 871, sizes = [[4, 256], [256, 512]], input_op_ids = [(867,0)]",
        "aten::empty",
        "FSDP::pre_forward (blocks.9), op_id = 3",
        "AddmmBackward0, seq = 12, op_id = 40",
        "ProfilerStep#3",
        "{'mod': 'torch.nn.functional', 'op': 'linear', 'args': [{'name': '', 'type': 'tensor', "
        "'shape': (32, 84), 'dtype': 'float16'}]}",
        "{'traceMarker': ['a.py:1'], 'funcStack': '/<module>/Net::forward/Linear::_call_impl(3)/linear'}",
        "{'mod': 'broken",
    ]
    for tf in (False, True):
        p = parse(pa.array(texts), tf_domain=tf)
        assert p.kind.tolist() == [
            K.TORCH_OP, K.TORCH_OP, K.OTHER, K.TORCH_OP, K.OTHER,
            K.DLPROF_OP, K.DLPROF_MARKER, K.OTHER,
        ]  # fmt: skip
        assert p.label.to_pylist() == [
            "aten::mm", "aten::empty", "FSDP::pre_forward (blocks.9)", "AddmmBackward0",
            "ProfilerStep#3", "linear", texts[6], "{'mod': 'broken",
        ]  # fmt: skip
        assert p.dtype.to_pylist() == [None] * 5 + ["float16", None, None]
        shapes = p.shapes.to_pylist()
        assert shapes == [
            "[[4, 256], [256, 512]]",
            None,
            None,
            None,
            None,
            "[[32, 84]]",
            None,
            None,
        ]
        assert p.func_stack.to_pylist()[6] == "/module/Net::forward/Linear::_call_impl[3]/linear"
        assert p.tf_label.to_pylist() == [None] * 8


def test_synthetic_detailed_record_with_spaces_is_read() -> None:
    """JSON as a JSON library would print it (spaces after separators, args as an object)."""
    p = parse(pa.array(['{"op": "MatMul", "name": "dense/MatMul", "args": {}}']), tf_domain=False)
    assert p.kind.tolist() == [K.TF_OP]
    assert p.label.to_pylist() == ["MatMul"]


def test_synthetic_node_names_are_kept_for_tf_ops_only() -> None:
    texts = [
        "MatMul: dense_1/MatMul",
        '{"op":"Conv2D","name":"conv/Conv2D","args":[],"attrs":{"T":"half"}}',
        "Epoch: 3",
        "aten::mm, seq = 5",
    ]
    plain = parse(pa.array(texts), tf_domain=False)
    tf = parse(pa.array(texts), tf_domain=True)
    assert tf.node.to_pylist() == ["dense_1/MatMul", "conv/Conv2D", "3", None]
    assert tf.kind.tolist() == [K.TF_OP, K.TF_OP, K.TF_OP, K.TORCH_OP]
    # outside TF mode the short form stays a plain range; its node is never read for one
    assert plain.kind.tolist() == [K.OTHER, K.TF_OP, K.OTHER, K.TORCH_OP]
