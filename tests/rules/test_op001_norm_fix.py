"""OP001's fix for a normalisation op follows its kind: channels_last is batch norm's (a convnet's
layout) in PyTorch, never a transformer's LayerNorm or RMSNorm (a hostile tester saw it advised
on a transformer)."""

from __future__ import annotations

import pytest

from tcreport.analysis.sections.verdict import words_for
from tcreport.analysis.vendor import Vendor
from tcreport.rules import _common as c
from tcreport.rules.op001_heavy_non_tc_op import _fix

W = words_for(Vendor.NVIDIA)


@pytest.mark.parametrize("op_type", ["native_layer_norm", "layer_norm", "rms_norm", "LayerNorm"])
def test_a_layer_norm_fix_names_fused_kernels_not_channels_last(op_type: str) -> None:
    fix = _fix(op_type, c.Flavour.TORCH, W, nvidia=True)
    assert "fused" in fix and "channels_last" not in fix


def test_a_pytorch_batch_norm_fix_names_channels_last() -> None:
    fix = _fix("cudnn_batch_norm", c.Flavour.TORCH, W, nvidia=True)
    assert "memory_format=torch.channels_last" in fix


@pytest.mark.parametrize("flavour", [c.Flavour.TF, c.Flavour.ANY])
def test_a_batch_norm_fix_outside_pytorch_names_no_pytorch_layout(flavour: c.Flavour) -> None:
    fix = _fix("FusedBatchNormV3", flavour, W, nvidia=True)
    assert "channels_last" not in fix and "torch." not in fix.replace("torch.compile", "")
