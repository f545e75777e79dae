"""CV002: fp16/bf16 backward convolutions (wgrad/dgrad) run on CUDA cores and take a large share.

cuDNN's backward-filter ("wgrad") and backward-data ("dgrad") algorithms have fewer Tensor Core
variants than forward; with misaligned channels, NCHW layout, deterministic mode or without
autotuning, fp16 weight gradients fall back to slow CUDA-core kernels such as ``wgrad_alg0_engine``
and can cost more than the whole forward pass. The kernels' names say wgrad/dgrad; that they are
half precision comes from the name or, failing that, from the run using fp16/bf16 ops.
"""

from __future__ import annotations

import re

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.rules import _common as c
from tcreport.rules import thresholds
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity

ID = "CV002"
_BACKWARD = re.compile(r"wgrad|dgrad|backward_?filter|backward_?data|bwd_?filter|bwd_?data", re.I)
_HALF = re.compile(r"half|f16|fp16|bf16|h884|h1688|h16816|hmma", re.I)


def check(analysis: Analysis) -> list[Finding]:
    total = analysis.time.gpu_kernel_ns
    if not total:
        return []
    half_run = c.run_uses_half(analysis)
    slow = [
        k
        for k in analysis.breakdown.kernels
        if _BACKWARD.search(k.name) and k.uses_tc is False and (half_run or _HALF.search(k.name))
    ]
    ns = sum(k.gpu_ns for k in slow)
    sh = c.share(ns, total)
    if sh is None or sh < thresholds.SLOW_WGRAD_SHARE:
        return []
    fl = c.flavour(analysis)
    fix = (
        "Set torch.backends.cudnn.benchmark = True, use channels_last (model and input "
        ".to(memory_format=torch.channels_last)), pad channels to multiples of 8, avoid "
        "torch.backends.cudnn.deterministic = True, and update cuDNN."
        if fl is not c.Flavour.TF
        else "Pad channels to multiples of 8, use NHWC, keep cuDNN autotuning on "
        "(TF_CUDNN_USE_AUTOTUNE=1), avoid TF_DETERMINISTIC_OPS, and update cuDNN."
    )
    return [
        Finding(
            id=ID,
            severity=Severity.HIGH if sh >= 2 * thresholds.SLOW_WGRAD_SHARE else Severity.MEDIUM,
            title=f"Half-precision backward convolutions on CUDA cores take {fmt.pct_text(sh)} of GPU time",
            detail=f"{fmt.plural(len(slow), 'wgrad/dgrad kernel')} without Tensor Cores take "
            f"{fmt.ns(ns)}: cuDNN fell back to a slow algorithm for the convolution backward pass.",
            fix=fix,
            estimated_saving_ns=int(ns * (1 - 1 / thresholds.TC_SPEEDUP)),
            assumptions=f"a Tensor Core wgrad/dgrad algorithm runs {thresholds.TC_SPEEDUP:g}x faster",
            evidence=tuple(Evidence(EvidenceKind.KERNEL, k.name) for k in slow[:10]),
        )
    ]
