"""GP002: launch-bound: most kernels are tiny and the GPU idles between them.

When kernels finish in a few microseconds, the CPU cannot issue them fast enough (a launch costs
microseconds, an eager framework op tens), so the GPU waits in short gaps between kernels however
fast its Tensor Cores are. The remedy is fewer, larger launches: CUDA graphs, a compiler that fuses
(torch.compile, XLA), or more work per launch (batch size). Needs per-launch timestamps.

The idle figure is the step breakdown's launch-bound idle (``StepRow.idle_launch_ns``: gaps under
``LAUNCH_GAP_NS`` inside each iteration's GPU span, copies counted as GPU work) summed over the
aggregated iterations (:func:`tcreport.analysis.derived.aggregated_idle`), so the finding and the
"Where the step time goes" bars show one number. The timeline's own short-gap sum
(``TimelineFigures.short_gap_idle_ns``) measured the same thing differently (kernels only, across
iteration boundaries) and disagreed with the bars by a few per cent; only its kernel-length
statistics (short launches, median kernel and gap, the short kernels' names) are used here.
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis import derived
from tcreport.analysis.result import Analysis
from tcreport.rules import _common as c
from tcreport.rules import thresholds
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity

ID = "GP002"


def check(analysis: Analysis) -> list[Finding]:
    tl = analysis.time.timeline
    idle = derived.aggregated_idle(analysis.steps.rows, analysis.iterations.info)
    if tl is None or tl.launches < thresholds.LAUNCH_BOUND_MIN_LAUNCHES or idle is None:
        return []
    short = tl.short_launch_share or 0.0
    gap_share = idle.launch_share
    if gap_share is None:
        return []
    if (
        short < thresholds.LAUNCH_BOUND_SHORT_SHARE
        or gap_share < thresholds.LAUNCH_BOUND_IDLE_SHARE
    ):
        return []
    fl = c.flavour(analysis)
    fix = {
        c.Flavour.TORCH: "Capture the step in a CUDA graph (torch.compile(model, mode='reduce-overhead') "
        "or torch.cuda.graphs.make_graphed_callables), let torch.compile fuse the small elementwise "
        "kernels, "
        + ("" if c.trains(analysis) is False else "use fused/foreach optimizers, ")
        + "and raise the batch size if memory allows.",
        c.Flavour.TF: "Compile the step with XLA (tf.function(jit_compile=True)) so small ops fuse, "
        "run several steps per call (Keras steps_per_execution), and raise the batch size.",
        c.Flavour.ANY: "Use CUDA graphs or a fusing compiler (torch.compile, XLA) and a larger batch "
        "so each launch does more work.",
    }[fl]
    saving = int(idle.launch_ns / max(1, idle.devices) * thresholds.LAUNCH_GAP_RECOVERABLE)
    names = {k.name for k in analysis.breakdown.kernels}
    return [
        Finding(
            id=ID,
            severity=Severity.HIGH
            if gap_share >= 2 * thresholds.LAUNCH_BOUND_IDLE_SHARE
            else Severity.MEDIUM,
            title=f"Launch-bound: {fmt.pct_text(short)} of kernels run under "
            f"{fmt.ns(thresholds.SHORT_KERNEL_NS)} and the GPU idles {fmt.pct_text(gap_share)} between them",
            detail=f"{tl.short_launches} of {tl.launches} kernel launches take less than "
            f"{fmt.ns(thresholds.SHORT_KERNEL_NS)} (median kernel {fmt.ns(tl.median_kernel_ns)}, "
            f"median gap {fmt.ns(tl.median_gap_ns)}); gaps under {fmt.ns(thresholds.LAUNCH_GAP_NS)} "
            f"leave the GPU idle for {fmt.ns(idle.launch_ns)} of the {fmt.ns(idle.span_ns)} GPU span "
            "(the step breakdown's launch-bound idle).",
            fix=fix,
            estimated_saving_ns=saving,
            assumptions=f"CUDA graphs / fusion recover {thresholds.LAUNCH_GAP_RECOVERABLE:.0%} of the "
            f"idle time in gaps under {fmt.ns(thresholds.LAUNCH_GAP_NS)} (per device)",
            evidence=tuple(
                Evidence(EvidenceKind.KERNEL, n) for n in tl.short_kernel_names if n in names
            ),
        )
    ]
