"""AU003: TF32 switched off for a model that computes in float32.

On Ampere and newer GPUs, TF32 runs float32 GEMMs and convolutions on Tensor Cores with float32's
range. PyTorch leaves it off for matmuls by default (``torch.get_float32_matmul_precision()`` is
"highest") and on for cuDNN convolutions; TensorFlow turns it on unless the script calls
``enable_tensor_float_32_execution(False)``. A model that computes in float16/bfloat16 (a mixed
policy, autocast) gets a mixed-precision answer instead, so this rule stays silent for it, and for
a GPU older than Ampere, which has no TF32.
"""

from __future__ import annotations

from tcreport.analysis.result import Analysis
from tcreport.model import AuditKey, ModelAudit
from tcreport.rules import _audit
from tcreport.rules.base import Finding, Severity

ID = "AU003"
_GEMM = ("Linear", "Bilinear", "Conv", "Dense", "LSTM", "GRU", "RNN", "Embedding", "MultiHead")


def _torch(a: ModelAudit) -> tuple[str, str, str] | None:
    matmul = a.setting(AuditKey.TORCH_MATMUL_TF32)
    precision = a.setting(AuditKey.TORCH_MATMUL_PRECISION)
    conv = a.setting(AuditKey.TORCH_CUDNN_TF32)
    gemm = [x for x in a.layers if x.compute_dtype == "float32" and x.kind.startswith(_GEMM)]
    convs = [x for x in gemm if x.kind.startswith("Conv")]
    matmuls = [x for x in gemm if not x.kind.startswith("Conv")]
    parts, fixes, layers, off = [], [], [], []
    if matmul is not None and matmul.value == "False" and matmuls:
        at = next((x.at for x in (matmul, precision) if x is not None and x.at), None)
        shown = precision.value if precision is not None else "?"
        parts.append(
            "float32 matmuls run without TF32 (torch.backends.cuda.matmul.allow_tf32 False, "
            f"torch.get_float32_matmul_precision() '{shown}'; "
            + (f"set at {at})" if at else "PyTorch's default)")
        )
        fixes.append("call torch.set_float32_matmul_precision('high')")
        layers += matmuls
        off.append("Matmul")
    if conv is not None and conv.value == "False" and convs:
        how = f"set at {conv.at}" if conv.at else "set outside the script"
        parts.append(f"cuDNN convolutions run without TF32 ({how})")
        fixes.append("set torch.backends.cudnn.allow_tf32 = True")
        layers += convs
        off.append("cuDNN")
    if not parts:
        return None
    # PyTorch's two switches are separate (cuDNN's on by default): the title names the one off,
    # so it does not read against TF32 convolutions that ran (tf32_words.tf32_switch)
    title = f"{' and '.join(off)} TF32 {'is' if len(off) == 1 else 'are'} off for a float32 model"
    return (
        "; ".join(parts) + f", for float32 layers {_audit.names(layers)}",
        " and ".join(fixes) + " before the model is built",
        title,
    )


def _keras(a: ModelAudit) -> tuple[str, str, str] | None:
    tf32 = a.setting(AuditKey.TF_TF32)
    if tf32 is None or tf32.value != "False":
        return None
    where = f" (at {tf32.at})" if tf32.at else ""
    return (
        f"tf.config.experimental.enable_tensor_float_32_execution(False){where} keeps float32 "
        "matmuls and convolutions off the Tensor Cores",
        "remove that call, or pass True",
        "TF32 is off for a float32 model",
    )


def check(analysis: Analysis) -> list[Finding]:
    a = _audit.audit(analysis)
    if a is None or _audit.half_precision(a) is not None:
        return []
    cc = _audit.cc(a)
    if cc is not None and cc < 8.0:
        return []  # no TF32 before Ampere
    said = _keras(a) if a.framework == "keras" else _torch(a)
    if said is None:
        return []
    detail, fix, title = said
    return [
        Finding(
            id=ID,
            severity=Severity.MEDIUM,
            title=title,
            detail=f"{detail}; on Ampere or newer GPUs TF32 runs them on Tensor Cores"
            f"{_audit.expected(a)}.",
            fix=f"{fix[0].upper()}{fix[1:]}; or train in mixed precision, which gains more.",
            assumptions="read from the framework's settings; no saving is claimed",
        )
    ]
