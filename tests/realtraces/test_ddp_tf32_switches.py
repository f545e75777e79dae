"""The A100 DDP trace: the two PyTorch TF32 switches named apart, one explanation for mm and addmm.

Its convolutions ran cuDNN TF32 Tensor Core kernels (``torch.backends.cudnn.allow_tf32``, on by
default) while its ``aten::addmm`` and ``aten::mm`` ran ``ampere_sgemm_*`` on CUDA cores
(``torch.backends.cuda.matmul.allow_tf32``, off by default since PyTorch 1.12). TC001 said "TF32 is
off for matmuls" beside TC004's "so TF32 is on", and ``aten::mm``, whose first call launched a
CUTLASS SIMT kernel, got "why: unknown" while ``aten::addmm`` got "TF32 off".
"""

from __future__ import annotations

import pytest
from trace_paths import REALTRACES, need

from tcreport import api

DDP = REALTRACES / "kineto" / "a100-ddp-nccl-3step" / "nccl_data.json.gz"
MATMUL = "torch.backends.cuda.matmul.allow_tf32"
CUDNN = "torch.backends.cudnn.allow_tf32"


@pytest.mark.realtraces
def test_real_ddp_mm_and_addmm_get_the_same_why_from_the_same_evidence() -> None:
    view = api.analyze(api.load(need(DDP)))
    why = {w.op_name: w for w in view.analysis.verdict.why_not}
    assert why["aten::mm"].reason == why["aten::addmm"].reason == "fp32-tf32-off"
    assert "ampere_sgemm_" in why["aten::mm"].message
    tc001 = next(f for f in view.findings if f.id == "TC001")
    assert {e.key for e in tc001.evidence} == {"aten::mm", "aten::addmm"}


@pytest.mark.realtraces
def test_real_ddp_tf32_words_name_the_switch_each_is_about() -> None:
    view = api.analyze(api.load(need(DDP)))
    by_id = {f.id: f for f in view.findings}
    title = by_id["TC001"].title
    assert title.startswith(f"Matmul TF32 ({MATMUL}) is off") and CUDNN not in title
    detail = by_id["TC004"].detail
    assert f"cuDNN TF32 ({CUDNN}) is on" in detail
    assert "so TF32 is on" not in detail  # no bare "TF32 is on" beside "matmul TF32 is off"
    md = api.render_markdown(view)
    assert "so TF32 is on" not in md and "TF32 is off for matmuls" not in md
