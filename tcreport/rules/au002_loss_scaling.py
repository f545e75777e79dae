"""AU002: float16 training without loss scaling.

float16 keeps values down to about 6e-8; small gradients underflow to zero and the model stops
learning, silently. Keras' ``fit`` wraps the optimizer in a ``LossScaleOptimizer`` under
``mixed_float16`` by itself, but a custom training loop must do it; PyTorch's autocast never
scales, so float16 autocast needs a ``GradScaler``. bfloat16 has float32's range and needs neither.
Numerical, not a speed finding: it holds on any device, so it is never "expected on a GPU".
"""

from __future__ import annotations

from tcreport.analysis.result import Analysis
from tcreport.model import AuditKey, ModelAudit
from tcreport.rules import _audit
from tcreport.rules.base import Finding, Severity

ID = "AU002"
_ASSUME = "numerical-stability finding: no time saving is claimed"


def _keras(a: ModelAudit) -> Finding | None:
    if _audit.value(a, AuditKey.KERAS_POLICY) != "mixed_float16":
        return None
    if a.setting(AuditKey.KERAS_FIT) is not None or a.setting(AuditKey.KERAS_LOSS_SCALE):
        return None
    opt = a.setting(AuditKey.KERAS_OPTIMIZER)
    policy = a.setting(AuditKey.KERAS_POLICY)
    at = (opt.at if opt else None) or (policy.at if policy else None)
    where = f" (optimizer {opt.value} built at {at})" if opt and at else (f" ({at})" if at else "")
    return Finding(
        id=ID,
        severity=Severity.HIGH,
        title="mixed_float16 custom training loop without loss scaling",
        detail="The Keras policy is mixed_float16 and the script trains in its own loop (no "
        f"Model.fit, which would scale the loss itself) with no LossScaleOptimizer{where}: "
        "small float16 gradients underflow to zero and training stalls or diverges.",
        fix="Wrap the optimizer: optimizer = keras.mixed_precision.LossScaleOptimizer(optimizer), "
        "take gradients of optimizer.scale_loss(loss) and let optimizer.apply_gradients unscale "
        "them (tf.keras 2: get_scaled_loss / get_unscaled_gradients); or use mixed_bfloat16, "
        "which needs no loss scaling, on GPUs that have it (Ampere or newer).",
        assumptions=_ASSUME,
    )


def _torch(a: ModelAudit) -> Finding | None:
    fp16 = [u for u in a.all(AuditKey.TORCH_AUTOCAST) if u.value.startswith("float16")]
    scaler = a.setting(AuditKey.TORCH_GRAD_SCALER)
    if not fp16 or (scaler is not None and scaler.value == "created"):
        return None
    at = ", ".join(sorted({u.at for u in fp16 if u.at})) or "the script"
    state = " (a GradScaler was created with enabled=False)" if scaler is not None else ""
    return Finding(
        id=ID,
        severity=Severity.HIGH,
        title="float16 autocast without a GradScaler",
        detail=f"torch.autocast(dtype=torch.float16) is entered at {at} and no GradScaler "
        f"scales the loss{state}: small float16 gradients underflow to zero and training "
        "stalls or diverges.",
        fix="scaler = torch.amp.GradScaler('cuda'); then scaler.scale(loss).backward(), "
        "scaler.step(optimizer), scaler.update(); or autocast to torch.bfloat16, which needs no "
        "scaler, on GPUs that have it (Ampere or newer).",
        assumptions=_ASSUME,
    )


def check(analysis: Analysis) -> list[Finding]:
    a = _audit.audit(analysis)
    if a is None:
        return []
    found = _keras(a) if a.framework == "keras" else _torch(a)
    return [found] if found is not None else []
