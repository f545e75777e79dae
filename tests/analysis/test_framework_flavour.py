"""Whose words a fix takes is decided once (analysis.framework.flavour, kept in Verdict.flavour):
the why-not rows and every rule read it, so a trace whose metadata names no framework cannot get
PyTorch advice from the rules and generic advice from its why-not rows."""

from __future__ import annotations

import pytest
from synthetic import US, kernel_row, op_row, synthetic_rows_run

from tcreport import api
from tcreport.analysis import framework
from tcreport.model import Gpu
from tcreport.rules import _common


@pytest.mark.parametrize(
    ("fw", "names", "expected"),
    [
        ("PyTorch 2.3.0", (), "torch"),
        ("TensorFlow 2.15", (), "tf"),
        ("Keras 3", (), "tf"),
        ("JAX 0.4.30", (), "jax"),
        (None, ("aten::mm", "aten::add"), "torch"),
        (None, ("autograd::engine::evaluate_function: MmBackward0",), "torch"),
        (None, ("Model/dense/MatMul",), "tf"),
        (None, ("mm", "gemm"), "any"),
        ("", (), "any"),
        ("torch", (), "torch"),  # a flavour word is its own flavour
        ("jax", ("aten::mm",), "jax"),
    ],
)
def test_flavour_words(fw: str | None, names: tuple[str, ...], expected: str) -> None:
    assert framework.flavour(fw, names) == expected


def _aten_run_without_framework() -> api.Report:
    op = op_row("mm", "mm", "float32", 100 * US) | {"name": "aten::mm"}
    return api.analyze(
        synthetic_rows_run(
            kernels=[kernel_row("ampere_sgemm_128x64_tn", "mm", 1000, 100 * US)],
            ops=[op],
            framework=None,
            gpus=(Gpu(0, "NVIDIA A100-SXM4-80GB", "8.0"),),
        )
    )


def test_synthetic_aten_ops_without_framework_get_torch_words_everywhere() -> None:
    a = _aten_run_without_framework().analysis
    assert a.meta.framework is None
    assert a.verdict.flavour == "torch"
    assert _common.flavour(a) is _common.Flavour.TORCH
    (w,) = a.verdict.why_not
    assert "torch." in w.fix and "tf." not in w.fix, w.fix
