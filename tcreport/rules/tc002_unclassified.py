"""TC002: too much kernel time has no Tensor Core verdict, so the share is a lower bound."""

from __future__ import annotations

from tcreport.analysis.result import Analysis
from tcreport.rules import _common as c
from tcreport.rules import thresholds
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity


def check(analysis: Analysis) -> list[Finding]:
    share = analysis.verdict.classified_share
    if share is None or share >= thresholds.MIN_CLASSIFIED_SHARE:
        return []
    unknown = [k for k in analysis.breakdown.kernels if k.uses_tc is None][:10]
    w = analysis.verdict.words
    counters = (  # Nsight Compute measures NVIDIA GPUs only
        "Profile the unknown kernels with Nsight Compute's tensor-pipe counters "
        "(sm__inst_executed_pipe_tensor) and give tcreport the ncu CSV."
    )
    return [
        Finding(
            id="TC002",
            severity=Severity.INFO,
            title=f"Only {share:.1%} of kernel time has a known {w.unit_one} verdict",
            detail="Kernels whose names no rule recognises (Triton, custom CUDA) count as unknown; "
            f"the {w.unit_one} share is a lower bound.",
            fix=counters if c.is_nvidia(analysis) else None,
            evidence=tuple(Evidence(EvidenceKind.KERNEL, k.name) for k in unknown),
        )
    ]
