"""The advice on the real H200 runs of examples/torch_cnn.py (sample_traces/h200-torch-cnn-ncu).

What the hardware said on those runs (the sample's Nsight Compute counters and its README) is the
ground truth the findings are held to:

* float32: cuDNN ran the convolutions as TF32 (PyTorch's cuDNN switch is on by default) and cuBLAS
  ran ``aten::mm``/``aten::addmm`` on CUDA cores (its matmul switch is off by default): the matmuls
  are "TF32 is off" (TC001, as the model audit's AU003 says), not "pad for TF32" (TC003).
* float16 in NCHW: cuDNN's layout transposes take 27 % of GPU kernel time (CV003); no false
  "backward convolutions on CUDA cores" (CV002): the cuDNN CUTLASS wgrad kernel the trace leaves
  mangled used the Tensor Cores.
* bfloat16 with every fix (channels_last): no layout transposes, so no CV003.
"""

from __future__ import annotations

import pytest
from trace_paths import H200_NCU

from tcreport import api
from tcreport.rules import Finding


def _findings(variant: str) -> dict[str, Finding]:
    path = H200_NCU / f"cnn_{variant}"
    if not path.exists():
        pytest.skip(f"{path} is not in this checkout")
    view = api.analyze(api.load(path), api.Slice())
    return {f.id: f for f in view.findings}


def test_float32_matmuls_are_tf32_off_not_misaligned() -> None:
    found = _findings("fp32")
    assert {"TC001", "AU003"} <= set(found)
    keys = {e.key for e in found["TC001"].evidence}
    assert any("aten::mm" in k for k in keys) and any("aten::addmm" in k for k in keys)
    assert not any("aten::mm" in e.key for e in found["TC003"].evidence)


def test_float16_nchw_pays_for_layout_conversions() -> None:
    found = _findings("fp16")
    assert found["CV003"].title == "cuDNN layout conversions (NCHW ↔ NHWC) take 27.2% of GPU time"
    assert "CV002" not in found


def test_channels_last_run_converts_nothing() -> None:
    assert "CV003" not in _findings("bf16fixed")
