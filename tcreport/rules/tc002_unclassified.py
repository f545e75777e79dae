"""TC002: too much kernel time has no matrix-unit verdict, so the share is a lower bound.

What to do about unknown kernels depends on whose device ran them: on NVIDIA, Nsight Compute's
tensor-pipe counters measure them; on AMD, the names need a rule (tcreport reads no ROCm
counters); on an accelerator tcreport has no rules for (Intel, an MTIA-class device) no verdict
exists at all, and the finding says that instead of sending the user to an NVIDIA tool.
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.analysis.vendor import Vendor
from tcreport.rules import _common as c
from tcreport.rules import thresholds
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity

_NVIDIA_FIX = (
    "Profile the unknown kernels with Nsight Compute's tensor-pipe counters "
    "(sm__inst_executed_pipe_tensor) and give tcreport the ncu CSV."
)
_AMD_FIX = (
    "Add a rule for the unknown kernels' names to the AMD rule pack "
    "(tcreport/analysis/rulepacks/amd-kernels.toml); tcreport reads no ROCm counters yet."
)


def check(analysis: Analysis) -> list[Finding]:
    share = analysis.verdict.classified_share
    # a GPU without matrix units: the device answers for every kernel (TC005), nothing to measure
    if (
        share is None
        or share >= thresholds.MIN_CLASSIFIED_SHARE
        or analysis.verdict.no_matrix_units
    ):
        return []
    w = analysis.verdict.words
    gpu_vendor = analysis.verdict.vendor
    unknown = [k for k in analysis.breakdown.kernels if k.uses_tc is None][:10]
    evidence = tuple(Evidence(EvidenceKind.KERNEL, k.name) for k in unknown)
    if gpu_vendor not in (Vendor.NVIDIA, Vendor.AMD, Vendor.UNKNOWN):
        device = fmt.gpus(analysis.meta.gpus)
        return [
            Finding(
                id="TC002",
                severity=Severity.INFO,
                title=f"No matrix-unit verdict for {device}",
                detail=f"tcreport has no kernel rules for this accelerator ({gpu_vendor.value}), "
                "so no kernel's use of its matrix units can be judged; kernel time is reported "
                "as measured.",
                evidence=evidence,
            )
        ]
    return [
        Finding(
            id="TC002",
            severity=Severity.INFO,
            title=f"Only {share:.1%} of kernel time has a known {w.unit_one} verdict",
            detail="Kernels whose names no rule recognises (Triton, custom "
            f"{'HIP' if gpu_vendor is Vendor.AMD else 'CUDA'}) count as unknown; the "
            f"{w.unit_one} share is a lower bound.",
            fix=_NVIDIA_FIX if c.is_nvidia(analysis) else _AMD_FIX,
            evidence=evidence,
        )
    ]
