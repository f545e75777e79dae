"""What the audit rules (AU001-AU007) share: reading the model audit and saying where.

The audit (``RunMeta.audit``) is what ``tcreport profile`` read from the model object and the
framework's settings in the running process; it exists only for runs captured by the in-process
backends (``torch``, ``tf``). Its findings name the layer and the line of the script that built it
and give the fix in the framework's own words. Where only a GPU run could show the effect (this
one ran on a CPU), the finding says "expected on a GPU" and claims no saving: savings are claimed
only where they are measured.
"""

from __future__ import annotations

from collections.abc import Iterable

from tcreport.analysis.result import Analysis
from tcreport.model import AuditKey, AuditLayer, ModelAudit
from tcreport.rules.base import Evidence, EvidenceKind

HALF = ("float16", "bfloat16")


def audit(analysis: Analysis, framework: str | None = None) -> ModelAudit | None:
    """The run's audit, or ``None`` (not captured in process, or another framework's)."""
    a = analysis.meta.audit
    if a is None or (framework is not None and a.framework != framework):
        return None
    return a


def value(a: ModelAudit, key: AuditKey) -> str | None:
    s = a.setting(key)
    return s.value if s is not None else None


def on_gpu(a: ModelAudit) -> bool:
    return (value(a, AuditKey.DEVICE) or "cpu") != "cpu"


def cc(a: ModelAudit) -> float | None:
    text = value(a, AuditKey.GPU_CC)
    try:
        return float(text) if text else None
    except ValueError:
        return None


def expected(a: ModelAudit) -> str:
    """How sure the finding can be: measured on this GPU, or only expected on one."""
    return "" if on_gpu(a) else " (expected on a GPU: this run had none to measure it on)"


def half_precision(a: ModelAudit) -> str | None:
    """The 16-bit type the model computes in ("float16", "bfloat16"), or ``None`` (float32):
    a Keras mixed policy, an autocast the script entered, or half-precision weights."""
    policy = value(a, AuditKey.KERAS_POLICY) or ""
    for dtype in HALF:
        if policy == f"mixed_{dtype}" or policy == dtype:
            return dtype
    for use in a.all(AuditKey.TORCH_AUTOCAST):
        for dtype in HALF:
            if use.value.startswith(dtype):
                return dtype
    dtypes = {layer.compute_dtype for layer in a.layers}
    return next((d for d in HALF if d in dtypes), None)


def where(item: AuditLayer) -> str:
    return f"{item.name} ({item.defined_at})" if item.defined_at else item.name


def layer_evidence(layers: Iterable[AuditLayer]) -> tuple[Evidence, ...]:
    return tuple(Evidence(EvidenceKind.LAYER, where(layer)) for layer in layers)


def names(layers: Iterable[AuditLayer], limit: int = 6) -> str:
    items = [where(layer) for layer in layers]
    more = len(items) - limit
    return "; ".join(items[:limit]) + (f"; and {more} more" if more > 0 else "")
