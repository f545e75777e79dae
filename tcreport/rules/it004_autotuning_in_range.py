"""IT004: cuDNN autotuning ran inside the aggregated range.

With ``cudnn.benchmark`` on, cuDNN times every candidate algorithm of a convolution the first time
it sees a shape: the op then launches implicit-GEMM, FFT and Winograd kernels one after the other.
Seeing several algorithm families under one op is therefore direct evidence that the profile
includes autotuning, which a steady step never repeats. Figures for those ops (and Tensor Core
verdicts on their kernels) describe the tuner, not the training step.
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.rules import _common as c
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity

ID = "IT004"


def check(analysis: Analysis) -> list[Finding]:
    if not analysis.signals.autotuned_ops:
        return []
    names = set(analysis.signals.autotuned_ops)
    ops = [o for o in analysis.breakdown.ops if o.name in names]
    ns = c.gpu_ns(ops)
    sh = c.share(ns, analysis.time.gpu_kernel_ns)
    return [
        Finding(
            id=ID,
            severity=Severity.HIGH if sh is not None and sh >= 0.25 else Severity.MEDIUM,
            title=f"cuDNN autotuning is inside the aggregated range ({fmt.plural(len(ops), 'convolution')})",
            detail=f"{fmt.plural(len(ops), 'op')} launched kernels of several cuDNN algorithm families "
            f"(implicit GEMM, FFT, Winograd, ...): cuDNN was timing candidates. They take "
            f"{fmt.ns(ns)}"
            + (f" ({fmt.pct_text(sh)} of GPU kernel time)" if sh is not None else "")
            + ", so the figures and savings for these ops are inflated by one-off tuning work.",
            fix="Profile a later iteration: --iter-start past the first step (DLProf --iter_start, "
            "torch.profiler schedule with warmup), or run one step before profiling starts.",
            estimated_saving_ns=None,
            assumptions="measurement finding: autotuning is one-off, not a per-step saving",
            evidence=tuple(Evidence(EvidenceKind.OP, o.name) for o in ops),
        )
    ]
