"""PR001: float16 with loss scaling on a GPU that has bfloat16.

float16's narrow exponent is why mixed precision needs a dynamic loss scaler (inf/NaN checks,
unscaling, skipped steps). bfloat16 has float32's exponent range, runs on the same Tensor Cores from
Ampere on, and needs no scaler. When PR003 already reports the scaler's cost as large, it owns the
advice; this rule names the cheaper cause in the smaller cases.
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.analysis.shapes import normalise_dtype
from tcreport.rules import _common as c
from tcreport.rules import pr003_loss_scaling_overhead, thresholds
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity

ID = "PR001"


def check(analysis: Analysis) -> list[Finding]:
    cc = c.compute_capability(analysis)
    if cc is None or cc < 8.0 or analysis.verdict.vendor.value not in ("nvidia", "unknown"):
        return []
    fp16 = [o for o in analysis.breakdown.ops if normalise_dtype(o.dtype) == "fp16"]
    if not fp16 or any(normalise_dtype(o.dtype) == "bf16" for o in analysis.breakdown.ops):
        return []
    pattern = pr003_loss_scaling_overhead.PATTERN
    kernels = [k for k in analysis.breakdown.kernels if pattern.search(k.name)]
    ops = [
        o for o in analysis.breakdown.ops if pattern.search(o.name) or pattern.search(o.type or "")
    ]
    ns = max(sum(k.gpu_ns for k in kernels), c.gpu_ns(ops))
    sh = c.share(ns, analysis.time.gpu_kernel_ns)
    if not ns or (sh is not None and sh >= thresholds.LOSS_SCALE_SHARE):
        return []  # no scaler seen, or PR003 reports it
    fix = {
        c.Flavour.TORCH: "Use torch.autocast(device_type='cuda', dtype=torch.bfloat16) and drop "
        "the torch.amp.GradScaler('cuda') (scaler.scale/step/update).",
        c.Flavour.TF: "Use tf.keras.mixed_precision.set_global_policy('mixed_bfloat16'); Keras "
        "then applies no LossScaleOptimizer.",
        c.Flavour.ANY: "Train in bfloat16 instead of float16 and remove the loss scaler.",
    }[c.flavour(analysis)]
    if c.is_jax(analysis):  # XLA's flavour, but none of Keras's switches
        fix = (
            "Compute in bfloat16 instead of float16 (cast the parameters and inputs to "
            "jnp.bfloat16, keeping float32 parameters for the update) and drop the loss scaling."
        )
    return [
        Finding(
            id=ID,
            severity=Severity.LOW,
            title="float16 with dynamic loss scaling on a GPU that has bfloat16",
            detail=f"{fmt.plural(len(fp16), 'op')} run in float16 on cc {cc:.1f}, and the loss "
            f"scaler's inf/NaN checks and scale updates take {fmt.ns(ns)}"
            + (f" ({fmt.pct_text(sh)} of GPU kernel time)" if sh is not None else "")
            + ". bfloat16 runs on the same Tensor Cores with float32's range and needs no scaler.",
            fix=fix,
            estimated_saving_ns=ns,
            assumptions="bfloat16 removes the scaler's kernels; Tensor Core speed is the same",
            evidence=tuple(Evidence(EvidenceKind.KERNEL, k.name) for k in kernels[:10]),
        )
    ]
