"""A torch.compile'd MLP on an H200 (sample_traces/h200-torch-compile-tf32): TorchInductor's
Triton GEMM templates are the trace's ops, and they are Tensor Core eligible.

Before, their launches (``triton_tem_fused_mm_t_7``...) were ops with no Tensor Core path, and the
fix-first finding said "OP001: triton_tem_fused_mm_t_7 takes 22.8% of GPU time and cannot use
Tensor Cores", while Nsight Compute counted TF32 tensor-path math in them.
"""

from __future__ import annotations

from trace_paths import SAMPLES

from tcreport import api
from tcreport.analysis import counters

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
