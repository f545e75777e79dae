"""TC001: ops that could run on Tensor Cores but do not.

The saving assumes the op's GPU time shrinks by ``TC_SPEEDUP`` on Tensor Cores; eligible GPU time is
the op's compute-kernel time in the aggregated iterations.
"""

from __future__ import annotations

from tcreport.analysis.result import Analysis
from tcreport.rules import thresholds
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity


def check(analysis: Analysis) -> list[Finding]:
    missing = [o for o in analysis.ops if o.tc_eligible and not o.uses_tc]
    tc = analysis.tc
    if not missing and not tc.eligible_not_using_op_count:
        return []
    count = len(missing) if missing else tc.eligible_not_using_op_count or 0
    gpu_ns = sum(o.gpu_ns or 0 for o in missing) if missing else tc.eligible_not_using_gpu_ns
    dtypes = sorted({o.dtype for o in missing if o.dtype})
    fp32 = any(d in ("float32", "float", "fp32", "Float") for d in dtypes)
    total = analysis.time.gpu_kernel_ns
    share = (gpu_ns / total) if gpu_ns is not None and total else None
    saving = int(gpu_ns * (1 - 1 / thresholds.TC_SPEEDUP)) if gpu_ns else None
    severity = (
        Severity.HIGH
        if share is None or share >= thresholds.HIGH_SEVERITY_SHARE
        else Severity.MEDIUM
    )
    what = f"{count} Tensor Core eligible op{'s' if count != 1 else ''} did not use Tensor Cores"
    detail = what
    if share is not None:
        detail += f"; they take {share:.1%} of GPU kernel time"
    if dtypes:
        detail += f" (data type: {', '.join(dtypes)})"
    fix = (
        "Enable mixed precision: torch.autocast / AMP in PyTorch, the mixed_float16 or mixed_bfloat16 "
        "policy in Keras; on Ampere or newer, TF32 also uses Tensor Cores for fp32 math."
        if fp32 or not dtypes
        else "Check the 'why not' column: dimensions that are not multiples of 8, or ops outside autocast."
    )
    return [
        Finding(
            id="TC001",
            severity=severity,
            title=what,
            detail=detail + ".",
            fix=fix,
            estimated_saving_ns=saving,
            assumptions=f"Tensor Core kernels {thresholds.TC_SPEEDUP:g}x faster than the current ones for these ops",
            evidence=tuple(Evidence(EvidenceKind.OP, o.name) for o in missing),
        )
    ]
