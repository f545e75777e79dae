"""The fast path for autograd-nvtx texts gives exactly what the full expression gives.

Texts are generated from the pieces of the form (``aten::mm, seq = 5, op_id = 871, sizes =
[[4, 256]], input_op_ids = [...]``) and from characters that break it (commas, newlines, brackets,
empty parts), so both the fast path and the fallback are exercised.
"""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import budget

from tcreport.ingest.nsys import nvtx_text as _nvtx_text

_NAMES = st.sampled_from(
    ["aten::mm", "aten::add_", "MmBackward0", "c10d::allreduce_", "ProfilerStep#3", "", "a, b",
     "FSDP::pre_forward (x, y)", "line\nbreak", "x::y\n", "[1, 2]", " ", ",", "aten::empty"]
)  # fmt: skip
_PARTS = st.sampled_from(
    [", seq = 5", ", seq = 48294", ", op_id = 1001749", ", sizes = [[4, 256], [256, 512]]",
     ", sizes = []", ", input_op_ids = [(867,0)]", ", seq = x", ", op_id = ", ", extra", ",",
     ", sizes = [[1]], input_op_ids = [(1,0)]", "\n", ", seq = 1\n"]
)  # fmt: skip


@st.composite
def _texts(draw: st.DrawFn) -> str:
    return draw(_NAMES) + "".join(draw(st.lists(_PARTS, max_size=4)))


@settings(max_examples=budget(300), deadline=None)
@given(st.lists(st.one_of(_texts(), st.none(), st.text(max_size=12)), min_size=1, max_size=40))
def test_fast_path_equals_the_full_expression(texts: list[str | None]) -> None:
    arr = pa.array(texts, pa.string())
    fast = [c.to_pylist() for c in _nvtx_text._torch(arr)]
    full = [c.to_pylist() for c in _nvtx_text._torch_regex(arr)]
    assert fast == full


def test_common_forms_take_the_fast_path_with_concrete_fields() -> None:
    texts = pa.array(
        [
            "aten::add, seq = 47659, op_id = 00179999291",
            "aten::empty, op_id = 00179999840",
            "MmBackward0, seq = 12",
            "aten::mm, seq = 5, op_id = 871, sizes = [[4, 256], [256, 512]], input_op_ids = [(1,0)]",
            "epoch 0",
            "",
        ]
    )
    name, has_seq, shapes = _nvtx_text._torch(texts)
    assert name.to_pylist() == [
        "aten::add",
        "aten::empty",
        "MmBackward0",
        "aten::mm",
        "epoch 0",
        None,
    ]
    assert has_seq.to_pylist() == [True, False, True, True, False, False]
    assert shapes.to_pylist() == [None, None, None, "[[4, 256], [256, 512]]", None, None]
