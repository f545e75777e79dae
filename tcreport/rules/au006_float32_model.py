"""AU006: the model computes in float32 everywhere (no mixed precision).

float32 GEMMs and convolutions reach Tensor Cores only through TF32 (Ampere and newer); float16 or
bfloat16 reach them on every Tensor Core GPU, at 2-8x the float32 rate. On a CPU-only capture the
trace cannot show that, so the audit says it from the model: no mixed policy, no autocast, float32
weights. On a GPU run the trace-based TC001 measures it instead, so this rule stands down there.
"""

from __future__ import annotations

from tcreport.analysis.result import Analysis
from tcreport.rules import _audit
from tcreport.rules import _common as c
from tcreport.rules.base import Finding, Severity

ID = "AU006"
_GEMM = ("Linear", "Bilinear", "Conv", "Dense", "LSTM", "GRU", "Embedding", "MultiHead")


def check(analysis: Analysis) -> list[Finding]:
    a = _audit.audit(analysis)
    if a is None or not analysis.host.cpu_only or _audit.half_precision(a) is not None:
        return []
    gemm = [x for x in a.layers if x.compute_dtype == "float32" and x.kind.startswith(_GEMM)]
    if not gemm:
        return []
    fl = c.Flavour.TF if a.framework == "keras" else c.Flavour.TORCH
    return [
        Finding(
            id=ID,
            severity=Severity.MEDIUM,
            title="the model trains in float32 (no mixed precision)",
            detail=f"Every layer computes in float32 ({_audit.names(gemm)}); on a GPU, float16 "
            "or bfloat16 put these GEMMs and convolutions on the Tensor Cores at several times "
            f"the float32 rate{_audit.expected(a)}.",
            fix=_sentence(c.amp_text(fl, _audit.cc(a), c.is_nvidia(analysis)))
            + (
                " Keep the output layer in float32 (dtype='float32')." if fl is c.Flavour.TF else ""
            ),
            assumptions="read from the model object; no saving is claimed on a CPU-only run",
            evidence=_audit.layer_evidence(gemm),
        )
    ]


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]
