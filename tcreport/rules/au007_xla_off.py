"""AU007: a Keras model trained without XLA (``jit_compile``).

XLA fuses the element-wise ops between GEMMs (bias, activation, the optimizer update) into fewer
kernels, which on a GPU often takes a tenth or more off the step. Keras resolves ``jit_compile``
when the model is compiled; a custom loop's ``tf.function`` compiles with XLA only when asked. A
low-severity suggestion: some models compile slowly or use ops XLA lacks.
"""

from __future__ import annotations

from tcreport.analysis.result import Analysis
from tcreport.model import AuditKey
from tcreport.rules import _audit
from tcreport.rules.base import Finding, Severity

ID = "AU007"


def check(analysis: Analysis) -> list[Finding]:
    a = _audit.audit(analysis, "keras")
    if a is None or not a.layers:
        return []
    jit = a.all(AuditKey.KERAS_JIT)
    if any(s.value == "True" for s in jit):
        return []
    off = [s.at for s in jit if s.at]
    how = f"jit_compile is False ({', '.join(off)})" if off else "no jit_compile was asked for"
    fit = a.setting(AuditKey.KERAS_FIT) is not None
    return [
        Finding(
            id=ID,
            severity=Severity.LOW,
            title="XLA compilation (jit_compile) is off",
            detail=f"{how}, so every op runs as its own kernel; XLA would fuse the element-wise "
            f"ops around the GEMMs{_audit.expected(a)}.",
            fix="model.compile(..., jit_compile=True)"
            if fit
            else "decorate the training step with @tf.function(jit_compile=True)",
            assumptions="no saving claimed: XLA's gain depends on the model",
        )
    ]
