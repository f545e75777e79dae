"""AU005: a convolutional network in mixed precision without the channels_last memory format.

Tensor Core convolutions in cuDNN work in NHWC; a model kept in PyTorch's default NCHW layout
pays a transpose around every convolution. ``model.to(memory_format=torch.channels_last)`` (and the
same for the inputs) removes them. The audit reads the layout of each Conv2d's weights; under
float32 the mixed-precision finding comes first, so this rule waits for half precision.
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.rules import _audit
from tcreport.rules.base import Finding, Severity

ID = "AU005"


def check(analysis: Analysis) -> list[Finding]:
    a = _audit.audit(analysis, "pytorch")
    if a is None or _audit.half_precision(a) is None:
        return []
    nchw = [x for x in a.layers if x.channels_last is False]
    if not nchw:
        return []
    return [
        Finding(
            id=ID,
            severity=Severity.MEDIUM,
            title=f"{fmt.plural(len(nchw), 'Conv2d layer')} in NCHW, not channels_last",
            detail=f"{_audit.names(nchw)} keep PyTorch's default NCHW layout; cuDNN's Tensor "
            "Core convolutions work in NHWC, so each one is wrapped in layout transposes"
            f"{_audit.expected(a)}.",
            fix="model = model.to(memory_format=torch.channels_last) after building it, and "
            "x = x.to(memory_format=torch.channels_last) for each input batch.",
            assumptions="no saving claimed: read from the weights' layout",
            evidence=_audit.layer_evidence(nchw),
        )
    ]
