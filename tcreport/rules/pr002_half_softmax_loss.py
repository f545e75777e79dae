"""PR002: softmax, log-softmax or the loss runs in float16.

float16 tops out at 65504 and keeps 10 mantissa bits: exponentials and log-probabilities overflow or
lose the small differences the loss is made of. Both AMP designs keep these in float32 (PyTorch's
autocast runs softmax/log_softmax/cross-entropy in float32; the Keras/TensorFlow mixed-precision
guide asks for a float32 output layer), so a float16 one means a manual ``.half()`` or a Keras
layer left in the policy's compute dtype. No time saving: this is about accuracy and NaNs.
"""

from __future__ import annotations

import re

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.analysis.shapes import normalise_dtype
from tcreport.rules import _common as c
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity

ID = "PR002"
_SENSITIVE = re.compile(
    r"softmax|cross_?entropy|nll_?loss|log_?loss|binary_?cross|bce|sigmoid_?cross|"
    r"softmaxcrossentropy|mse_?loss|ctc_?loss|kl_?div",
    re.I,
)
_ATTENTION = re.compile(r"attention|flash|sdpa|attn", re.I)


def check(analysis: Analysis) -> list[Finding]:
    ops = [
        o
        for o in analysis.breakdown.ops
        if normalise_dtype(o.dtype) == "fp16"
        and _SENSITIVE.search(o.type or o.name)
        and not _ATTENTION.search(o.name)  # fused attention keeps its softmax in fp32 internally
    ]
    if not ops:
        return []
    fl = c.flavour(analysis)
    fix = {
        c.Flavour.TORCH: "Run the model under torch.autocast instead of model.half() (autocast "
        "keeps softmax and losses in float32), or compute the loss on logits.float().",
        c.Flavour.TF: "Give the output layer dtype='float32', e.g. "
        "tf.keras.layers.Activation('softmax', dtype='float32'), and compute the loss in float32.",
        c.Flavour.ANY: "Keep the last layer and the loss in float32 (Keras: dtype='float32' on the "
        "output Activation; PyTorch: autocast rather than .half(), or logits.float()).",
    }[fl]
    names = ", ".join(sorted({o.type or fmt.tail(o.name, 40) for o in ops}))
    return [
        Finding(
            id=ID,
            severity=Severity.MEDIUM,
            title=f"{fmt.plural(len(ops), 'softmax/loss op')} run in float16",
            detail=f"{names} ran in float16, where large logits overflow and small "
            "log-probability differences round away; training may diverge or produce NaN losses.",
            fix=fix,
            estimated_saving_ns=None,
            assumptions="numerical-stability finding: no time saving is claimed",
            evidence=tuple(Evidence(EvidenceKind.OP, o.name) for o in ops),
        )
    ]
