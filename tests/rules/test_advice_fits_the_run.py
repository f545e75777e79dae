"""Advice that does not fit the run is noise a reader learns to skip (a newcomer's list, session
10): channels_last for a model that already uses it, torch.compile fusion for an extension's
already-fused kernel, fused optimizers for an inference trace. Real traces only."""

from __future__ import annotations

from pathlib import Path

from trace_paths import H200_NCU, REALTRACES, need

from tcreport import api
from tcreport.rules import _common
from tcreport.rules.base import Finding

KINETO = REALTRACES / "kineto"


def _fix(f: Finding) -> str:
    assert f.fix is not None, f.id
    return f.fix


def _findings(path: Path) -> dict[str, list[Finding]]:
    view = api.analyze(api.load(need(path)))
    out: dict[str, list[Finding]] = {}
    for f in view.findings:
        out.setdefault(f.id, []).append(f)
    return out


def test_tc003_says_channels_last_only_where_the_trace_shows_nchw() -> None:
    """cnn_bf16fixed runs channels_last (no cuDNN transpose at all); cnn_fp16 runs NCHW, and
    CV003 gives the layout fix there with its own figures: TC003 repeats it in neither."""
    fixed = _findings(H200_NCU / "cnn_bf16fixed")
    assert "TC003" in fixed and "CV003" not in fixed
    assert "channels_last" not in _fix(fixed["TC003"][0])
    nchw = _findings(H200_NCU / "cnn_fp16")
    assert "channels_last" in _fix(nchw["CV003"][0])
    assert "channels_last" not in _fix(nchw["TC003"][0])


def test_op001_does_not_offer_torch_compile_fusion_for_an_extension_kernel() -> None:
    """FBGEMM's SplitLookupFunction is one fused kernel of an extension; torch.compile does not
    fuse into it. ATen ops keep the fusion advice."""
    found = _findings(KINETO / "two-rank-sampled" / "sampled_rank-0.json.gz")
    lookup = [f for f in found["OP001"] if "SplitLookupFunction" in f.title]
    assert lookup, [f.title for f in found["OP001"]]
    assert "not an ATen op" in _fix(lookup[0]) and "so it fuses" not in _fix(lookup[0])
    cnn = _findings(H200_NCU / "cnn_bf16fixed")
    assert all("so it fuses" in _fix(f) for f in cnn["OP001"])


def test_an_inference_trace_is_not_told_to_fuse_its_optimizer() -> None:
    """The H100 BERT trace is inference (no backward, no optimizer): GP002's fix keeps the CUDA
    graph and batch-size advice and drops fused optimizers; a training run is seen as one."""
    bert = KINETO / "h100-bf16-bert-small"
    found = _findings(bert)
    assert "optimizer" not in _fix(found["GP002"][0])
    assert _common.trains(api.analyze(api.load(need(bert))).analysis) is False
    resnet = api.analyze(api.load(need(KINETO / "v100-legacy-resnet50"))).analysis
    assert _common.trains(resnet) is True
