"""CV003: cuDNN converts tensors between NCHW and NHWC around the convolutions.

Tensor Core convolution kernels read NHWC; a PyTorch model in its default NCHW (channels-first)
memory format makes cuDNN transpose every input, weight and gradient to NHWC and back, in
``nchwToNhwcKernel`` / ``nhwcToNchwKernel`` launches of their own. On a real H200 run of the
example CNN in float16 (NCHW) those conversions took over a quarter of GPU kernel time; the same
model in ``channels_last`` launched none (sample_traces/h200-torch-cnn-ncu). TensorFlow's layout
optimiser makes the same transposes when a Conv2D is given NCHW on a GPU.

The kernel names are cuDNN's own, so the rule needs no framework; the fix is said per framework.
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.rules import _common as c
from tcreport.rules import thresholds
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity

ID = "CV003"


def check(analysis: Analysis) -> list[Finding]:
    total = analysis.time.gpu_kernel_ns
    if not total:
        return []
    hits = c.layout_conversions(analysis)
    ns = sum(k.gpu_ns for k in hits)
    sh = c.share(ns, total)
    if sh is None or sh < thresholds.LAYOUT_CONVERSION_SHARE:
        return []
    tf = (
        "build Conv2D layers with data_format='channels_last' (Keras' default) and feed NHWC "
        "batches, so the layout optimiser has nothing to transpose"
    )
    torch = (
        "model = model.to(memory_format=torch.channels_last) after building it, and "
        "x = x.to(memory_format=torch.channels_last) for each input batch (or in the DataLoader's "
        "collate function), so cuDNN gets NHWC tensors and converts nothing"
    )
    fix = {
        c.Flavour.TF: f"Keep the convolutions in NHWC: {tf}.",
        c.Flavour.TORCH: f"{torch}.",
        c.Flavour.ANY: f"Keep the convolutions' tensors channels-last. PyTorch: {torch}. "
        f"TensorFlow/Keras: {tf}.",
    }[c.flavour(analysis)]
    calls = sum(k.calls for k in hits)
    return [
        Finding(
            id=ID,
            severity=Severity.HIGH
            if sh >= 2 * thresholds.LAYOUT_CONVERSION_SHARE
            else Severity.MEDIUM,
            title=f"cuDNN layout conversions (NCHW ↔ NHWC) take {fmt.pct_text(sh)} of GPU time",
            detail=f"{calls} launch{'' if calls == 1 else 'es'} of cuDNN's layout transposes "
            f"({fmt.plural(len(hits), 'kernel')}) take {fmt.ns(ns)}: the convolutions' tensors "
            "are channels-first, and cuDNN's Tensor Core kernels want channels-last, so every "
            "input, weight and gradient is transposed before and after them.",
            fix=fix,
            estimated_saving_ns=ns,
            assumptions="channels-last tensors remove these launches (the channels_last run of "
            "the H200 sample has none); converting each input batch once is not counted",
            evidence=tuple(Evidence(EvidenceKind.KERNEL, k.name) for k in hits[:10]),
        )
    ]
