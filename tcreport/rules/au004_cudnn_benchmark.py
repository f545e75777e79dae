"""AU004: ``torch.backends.cudnn.benchmark`` off in a model with convolutions.

Without it cuDNN picks each convolution's algorithm by heuristic instead of timing the candidates,
and often misses the fastest (Tensor Core) one. It is off by default. The audit reads the setting
in the process, so unlike CV001 (which needs DLProf's record of it) this works for any capture by
the torch backend, on a CPU too, where the effect is only expected.
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.model import AuditKey
from tcreport.rules import _audit
from tcreport.rules.base import Finding, Severity

ID = "AU004"


def check(analysis: Analysis) -> list[Finding]:
    a = _audit.audit(analysis, "pytorch")
    if a is None:
        return []
    bench = a.setting(AuditKey.TORCH_CUDNN_BENCHMARK)
    convs = [x for x in a.layers if x.kind.startswith(("Conv", "ConvTranspose"))]
    if bench is None or bench.value != "False" or not convs:
        return []
    how = f"set to False at {bench.at}" if bench.at else "never set, so PyTorch's default, False"
    return [
        Finding(
            id=ID,
            severity=Severity.MEDIUM,
            title="cuDNN autotuning (cudnn.benchmark) is off",
            detail=f"torch.backends.cudnn.benchmark is {how}; the "
            f"{fmt.plural(len(convs), 'convolution')} ({_audit.names(convs)}) get heuristic "
            f"algorithm choices, which often miss the fastest Tensor Core kernel"
            f"{_audit.expected(a)}.",
            fix="torch.backends.cudnn.benchmark = True before the training loop (input shapes "
            "must stay fixed, or each new shape is timed again).",
            assumptions="no saving claimed: the gain depends on which algorithm autotuning finds",
            evidence=_audit.layer_evidence(convs),
        )
    ]
