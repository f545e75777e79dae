"""PR002: softmax, log-softmax or the loss runs in float16.

float16 tops out at 65504 and keeps 10 mantissa bits: exponentials and log-probabilities overflow or
lose the small differences the loss is made of. Both AMP designs keep these in float32 (PyTorch's
autocast runs softmax/log_softmax/cross-entropy in float32; the Keras/TensorFlow mixed-precision
guide asks for a float32 output layer), so a float16 one means a manual ``.half()`` or a Keras
layer left in the policy's compute dtype. No time saving: this is about accuracy and NaNs.

It needs no GPU: a CPU trace records the ops' dtypes too, and ``tcreport profile``'s model audit
records the output layer's compute dtype and the line that built it, so an output softmax left in
float16 by a ``mixed_float16`` policy is found on a laptop, before any GPU run. Under PyTorch's
autocast a loss op is recorded twice, the outer call with the float16 input it was given and the
float32 call autocast makes of it; where the audit shows autocast and float32 weights, the outer
records are not taken for a float16 loss.
"""

from __future__ import annotations

import re

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.analysis.shapes import normalise_dtype
from tcreport.model import AuditKey, AuditLayer
from tcreport.rules import _audit
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
    if _autocast_casts(analysis):
        ops = []
    layers = _audit_layers(analysis)
    if not ops and not layers:
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
    if c.is_jax(analysis):  # XLA's flavour, but none of Keras's layers
        fix = (
            "Compute the softmax and the loss in float32: logits.astype(jnp.float32) before "
            "jax.nn.log_softmax or the loss function."
        )
    names = ", ".join(sorted({o.type or fmt.tail(o.name, 40) for o in ops}))
    said = [f"{names} ran in float16"] if ops else []
    audit = analysis.meta.audit
    if layers and audit is not None:
        policy = _audit.value(audit, AuditKey.KERAS_POLICY) or "mixed"
        said.append(
            f"the output layer {_audit.names(layers)} computes its "
            f"{layers[0].activation or 'output'} in float16 under the {policy} policy"
        )
    count = len(ops) or len(layers)
    return [
        Finding(
            id=ID,
            severity=Severity.MEDIUM,
            title=f"{fmt.plural(count, 'softmax/loss op' if ops else 'output softmax')} in float16",
            detail=f"{'; '.join(said)}: large logits overflow and small log-probability "
            "differences round away in float16; training may diverge or produce NaN losses.",
            fix=fix,
            estimated_saving_ns=None,
            assumptions="numerical-stability finding: no time saving is claimed",
            evidence=tuple(Evidence(EvidenceKind.OP, o.name) for o in ops)
            + _audit.layer_evidence(layers),
        )
    ]


def _audit_layers(analysis: Analysis) -> list[AuditLayer]:
    """Output layers the model audit saw computing a softmax (or any output activation of a
    Softmax/Activation layer) in float16."""
    a = _audit.audit(analysis)
    if a is None:
        return []
    return [
        x
        for x in a.layers
        if x.output
        and x.compute_dtype == "float16"
        and (x.activation in ("softmax", "log_softmax") or x.kind == "Softmax")
    ]


def _autocast_casts(analysis: Analysis) -> bool:
    """The audit saw autocast and no half-precision weights: the trace's float16 loss records
    are autocast's outer dispatch, which casts to float32 and records the op again inside (both
    CPU and CUDA autocast run softmax and losses in float32), not a float16 computation."""
    a = _audit.audit(analysis, "pytorch")
    return (
        a is not None
        and bool(a.all(AuditKey.TORCH_AUTOCAST))
        and not any(x.compute_dtype in _audit.HALF for x in a.layers)
    )
