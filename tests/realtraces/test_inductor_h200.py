"""A torch.compile'd MLP on an H200 (sample_traces/h200-torch-compile-tf32): TorchInductor's
Triton GEMM templates are the trace's ops, and they are Tensor Core eligible.

Before, their launches (``triton_tem_fused_mm_t_7``...) were ops with no Tensor Core path, and the
fix-first finding said "OP001: triton_tem_fused_mm_t_7 takes 22.8% of GPU time and cannot use
Tensor Cores", while Nsight Compute counted TF32 tensor-path math in them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.compute as pc
from trace_paths import SAMPLES

from tcreport import api
from tcreport.analysis import counters
from tcreport.analysis.result import classified_run

FOLDER = SAMPLES / "h200-torch-compile-tf32"
TRACE = FOLDER / "inductor_mlp.pt.trace.json.gz"
TEMPLATES = 8  # distinct triton_tem_* GEMM template kernels (ops) in the four steps


def test_gemm_templates_are_eligible_and_no_finding_says_otherwise() -> None:
    report = api.analyze(api.load(TRACE))
    ops = {o.name: o for o in report.analysis.breakdown.ops}
    templates = [o for n, o in ops.items() if n.startswith("triton_tem_fused_")]
    assert len(templates) == TEMPLATES
    assert all(o.tc_eligible for o in templates)
    assert not any(
        o.tc_eligible for n, o in ops.items() if n.startswith(("triton_poi", "triton_per"))
    )
    assert report.analysis.verdict.eligible_op_count == TEMPLATES
    assert not [f for f in report.findings if f.id == "OP001" and "triton_tem" in f.title]
    # float32 whose TF32 the trace does not record: unknown, and said to be (TC002), not "no"
    assert report.analysis.time.tc_kernel_ns == 0
    assert any(f.id == "TC002" for f in report.findings)
    # and the headline does not call 91.5 % of unjudged time "No Tensor Core use"
    lead, rest = report.analysis.verdict.sentence
    assert lead.startswith("Tensor Core use unknown") and "No Tensor Core use" not in lead + rest


def test_the_counters_say_tf32_tensor_cores_for_the_templates_they_reached() -> None:
    run = counters.merge(api.load(TRACE), api.load(FOLDER / "ncu" / "ncu_ind_fp32-tf32.csv"))
    assert run.kernels is not None
    measured = {
        n: v
        for n, v in zip(
            run.kernels.column("name").to_pylist(),
            run.kernels.column("counter_uses_tc").to_pylist(),
            strict=True,
        )
        if v is not None and n.startswith("triton_tem")
    }
    assert measured == {"triton_tem_fused_addmm_t_0": True, "triton_tem_fused_addmm_t_2": True}


def _with_capture_synthetic(tmp_path: Path, matmul_tf32: str) -> Path:
    """The real trace beside a ``tcreport-capture.json`` whose audit recorded PyTorch's matmul TF32
    switch as given (the sitting ran torch.profiler directly, so it wrote none: synthetic)."""
    tmp_path.mkdir()
    trace = tmp_path / TRACE.name
    shutil.copyfile(TRACE, trace)
    settings = [{"key": "torch.backends.cuda.matmul.allow_tf32", "value": matmul_tf32, "at": None}]
    side = {"trace": trace.name, "audit": {"framework": "pytorch", "settings": settings}}
    (tmp_path / "tcreport-capture.json").write_text(json.dumps(side), encoding="utf-8")
    return trace


def test_the_audits_tf32_switch_decides_the_float32_templates(tmp_path: Path) -> None:
    """Inductor compiles PyTorch's matmul TF32 switch into its templates (ALLOW_TF32): on, the
    float32 templates ran TF32 on Tensor Cores (what ncu measured in this run); off, IEEE float32."""
    on = classified_run(api.load(_with_capture_synthetic(tmp_path / "on", "True"))).kernels
    assert on is not None
    tem = on.filter(pc.starts_with(on.column("name").cast("string"), "triton_tem_"))
    assert tem.num_rows >= TEMPLATES
    assert set(tem.column("uses_tc").to_pylist()) == {True}
    assert set(tem.column("tc_rule").cast("string").to_pylist()) == {"triton-op-dtype"}
    off = classified_run(api.load(_with_capture_synthetic(tmp_path / "off", "False"))).kernels
    assert off is not None
    tem = off.filter(pc.starts_with(off.column("name").cast("string"), "triton_tem_"))
    assert set(tem.column("uses_tc").to_pylist()) == {False}
    # pointwise and reduction kernels keep their own rules either way
    poi = off.filter(pc.starts_with(off.column("name").cast("string"), "triton_poi_"))
    assert set(poi.column("tc_rule").cast("string").to_pylist()) == {"triton-pointwise"}
