"""CV001: cuDNN autotuning (``torch.backends.cudnn.benchmark``) is off in a run with convolutions.

Without it cuDNN picks a convolution algorithm by heuristic instead of timing the candidates, and
the heuristic often misses the fastest (Tensor Core) one. Kernel names cannot prove the flag was
off: a run that autotuned in a warm-up outside the profile looks the same as one that never did.
So this rule fires only on the profiler's own record of the setting (DLProf's model config,
``cudnn_benchmark_disabled``), read from ``RunMeta.settings.cudnn_benchmark`` when a reader fills
it; without that record it stays silent.
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.rules import _common as c
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity

ID = "CV001"
_CONV = ("conv", "Conv")


def recorded_setting(analysis: Analysis, name: str) -> bool | None:
    """A framework setting the profiler recorded, or ``None`` (absent field, unknown value)."""
    value = getattr(analysis.meta.settings, name)
    return value if isinstance(value, bool) else None


def check(analysis: Analysis) -> list[Finding]:
    if recorded_setting(analysis, "cudnn_benchmark") is not False:
        return []
    convs = [o for o in analysis.breakdown.ops if any(k in (o.type or o.name) for k in _CONV)]
    if not convs:
        return []
    fl = c.flavour(analysis)
    fix = (
        "Set torch.backends.cudnn.benchmark = True before training (input shapes must stay fixed, "
        "or each new shape is autotuned again)."
        if fl is not c.Flavour.TF
        else "Leave TF_CUDNN_USE_AUTOTUNE at its default (1) so cuDNN times the algorithms."
    )
    return [
        Finding(
            id=ID,
            severity=Severity.MEDIUM,
            title="cuDNN autotuning (cudnn.benchmark) is off",
            detail=f"The profiler recorded cudnn.benchmark disabled; {fmt.plural(len(convs), 'convolution op')} "
            "use heuristic algorithm choices, which often miss the fastest (Tensor Core) kernel.",
            fix=fix,
            estimated_saving_ns=None,
            assumptions="no saving claimed: the gain depends on which algorithm autotuning finds",
            evidence=tuple(Evidence(EvidenceKind.OP, o.name) for o in convs[:10]),
        )
    ]
