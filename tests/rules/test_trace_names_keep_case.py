"""A name read from a trace keeps its spelling where a sentence starts with it.

XLA's op types (``cublaslt-matmul``, ``cudnn-conv``) and PyTorch's (``aten::mm``) are names, not
words: a finding that opens a sentence with one must not capitalise it (``Cublaslt-matmul``).
Real case: TC001 on the H200 JAX run at full float32 (sample_traces/h200-jax-xla-ncu), whose
detail quotes the why-not message of its cuBLAS and cuDNN calls.
"""

from __future__ import annotations

import re

import pytest
from trace_paths import SAMPLES

pytest.importorskip("xprof")
pytest.importorskip("google.protobuf")

from tcreport import api  # noqa: E402

HIGHEST = SAMPLES / "h200-jax-xla-ncu" / "fp32-highest"


def test_xla_op_types_are_not_capitalised_in_findings() -> None:
    view = api.analyze(api.load(HIGHEST))
    tc001 = next(f for f in view.findings if f.id == "TC001")
    assert "cublaslt-matmul runs in float32" in tc001.detail
    types = {o.type for o in view.analysis.breakdown.ops if o.type}
    assert {"cublaslt-matmul", "cudnn-conv"} <= types
    text = api.render_json(view) + api.render_markdown(view) + api.render_html(view)
    for name in (t for t in types if re.search(r"[-:_]", t)):  # "dot" is also an English word
        recased = name[:1].upper() + name[1:]
        if recased != name:
            assert not re.search(rf"(?<![\w-]){re.escape(recased)}(?![\w])", text), recased
