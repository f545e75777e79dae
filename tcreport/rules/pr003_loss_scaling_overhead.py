"""PR003: dynamic loss scaling costs a large share of the step.

A dynamic loss scaler checks every gradient for inf/NaN, unscales it and updates the scale every
step (PyTorch: ``_amp_foreach_non_finite_check_and_unscale_`` and ``_amp_update_scale_``; TensorFlow:
``LossScaleOptimizer`` with ``IsFinite``/``AllFinite``). Its cost is per tensor, not per FLOP, so in a
tiny model it can dominate: one step has been seen to run 5x slower with it. bf16 has float32's
exponent range and needs no loss scaling at all.
"""

from __future__ import annotations

import re

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.rules import _common as c
from tcreport.rules import thresholds
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity

ID = "PR003"
PATTERN = re.compile(
    r"amp_update_scale|non_finite_check_and_unscale|amp_foreach|LossScaleOptimizer|"
    r"loss_?scale|AllFinite|IsFinite|is_finite|check_numerics|unscale_",
    re.I,
)


def check(analysis: Analysis) -> list[Finding]:
    total = analysis.time.gpu_kernel_ns
    if not total:
        return []
    kernels = [k for k in analysis.breakdown.kernels if PATTERN.search(k.name)]
    ops = [
        o for o in analysis.breakdown.ops if PATTERN.search(o.name) or PATTERN.search(o.type or "")
    ]
    k_ns = sum(k.gpu_ns for k in kernels)
    o_ns = c.gpu_ns(ops)
    ns = max(k_ns, o_ns)  # op time includes its kernels: take the larger view, never the sum
    sh = c.share(ns, total)
    if sh is None or sh < thresholds.LOSS_SCALE_SHARE:
        return []
    cc = c.compute_capability(analysis)
    fl = c.flavour(analysis)
    bf16 = "switch to bfloat16 (autocast(dtype=torch.bfloat16) / 'mixed_bfloat16'), which needs no loss scaling"
    no_bf16 = "use a static loss scale"
    fix = {
        c.Flavour.TORCH: "Drop the GradScaler and "
        + (bf16 if cc is None or cc >= 8.0 else "train longer steps per scaler update")
        + "; otherwise use a fused optimizer (torch.optim.AdamW(fused=True)) and a larger batch so the per-step scaler cost amortises.",
        c.Flavour.TF: "Use LossScaleOptimizer(opt, dynamic=False, initial_scale=2**15) or "
        + ("the mixed_bfloat16 policy" if cc is None or cc >= 8.0 else "a larger batch")
        + " so the inf/NaN check does not run on every step.",
        c.Flavour.ANY: f"On Ampere or newer, {bf16}; otherwise {no_bf16} or a larger batch.",
    }[fl]
    ev = [Evidence(EvidenceKind.KERNEL, k.name) for k in kernels[:10]]
    ev += [Evidence(EvidenceKind.OP, o.name) for o in ops[:10]]
    return [
        Finding(
            id=ID,
            severity=Severity.HIGH if sh >= 2 * thresholds.LOSS_SCALE_SHARE else Severity.MEDIUM,
            title=f"Dynamic loss scaling takes {fmt.pct_text(sh)} of GPU time",
            detail=f"Loss-scaling kernels and ops (inf/NaN check, unscale, scale update) take "
            f"{fmt.ns(ns)} of {fmt.ns(total)} GPU kernel time: the model is small enough that the "
            "scaler's fixed per-step cost dominates.",
            fix=fix,
            estimated_saving_ns=ns,
            assumptions="bf16 or a static scale removes the scaler's kernels entirely",
            evidence=tuple(ev),
        )
    ]
