"""ST001: the host synchronises with the GPU inside the step, and the GPU waits for it after.

``.item()``, ``.cpu()``, ``print(loss)``, ``torch.cuda.synchronize()``, a synchronous
``cudaMemcpy``, ``aten::nonzero`` (whose output size the host must read) all make the host wait
until the GPU's queue drains; the GPU then idles until the host has launched the next work. The
idle is measured per step (:mod:`tcreport.analysis.stalls`: the gaps that open while the host is
inside such a call, or right after a device-to-host copy) and named by the op that waited.
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.analysis.stalls import StallKind
from tcreport.rules import _common as c
from tcreport.rules import _stalls, thresholds
from tcreport.rules.base import Finding, Severity

ID = "ST001"


def check(analysis: Analysis) -> list[Finding]:
    s = _stalls.summary(analysis, StallKind.SYNC)
    if s is None or not s.idle_ns or s.share < thresholds.STALL_MIN_SHARE:
        return []
    top = s.ops[0][0] or "a call the trace does not name"
    fix = {
        c.Flavour.TORCH: "Keep values on the GPU inside the step: accumulate losses/metrics in a "
        "tensor and call .item()/.cpu() once every N steps (or log asynchronously), avoid "
        "torch.cuda.synchronize() and data-dependent shapes (nonzero, masked_select, boolean "
        "indexing) in the step, and copy to the host with non_blocking=True into pinned memory.",
        c.Flavour.TF: "Keep values on the device inside tf.function: read metrics back every N "
        "steps, not every step, and avoid .numpy() on tensors inside the training loop.",
        c.Flavour.ANY: "Read GPU values back to the host every N steps, not every step, and avoid "
        "explicit synchronisation inside the step.",
    }[c.flavour(analysis)]
    if c.is_jax(analysis):
        fix = (
            "Let JAX run ahead: its dispatch is asynchronous until the host reads a value, so "
            "read the loss and metrics (float(), .item(), jax.device_get, print) every N steps, "
            "not every step, and keep them as device arrays in between."
        )
    ops = ", ".join(f"{op or 'unnamed'} {fmt.ns(ns)}" for op, ns in s.ops[:3])
    return [
        Finding(
            id=ID,
            severity=Severity.MEDIUM if s.share >= 5 * thresholds.STALL_MIN_SHARE else Severity.LOW,
            title=f"Host synchronisation in the step idles the GPU {fmt.ns(s.idle_per_step_ns)} "
            f"per step ({fmt.pct_text(s.share)}), mostly at {top}",
            detail=f"{fmt.plural(s.gaps, 'time')} in {fmt.plural(s.steps, 'aggregated step')} the GPU "
            "ran out of work while "
            "the host waited for it (a sync, .item(), a device-to-host copy) and stayed idle "
            f"until the host launched again: {fmt.ns(s.idle_ns)} in all ({ops}).",
            fix=fix,
            estimated_saving_ns=s.saving_ns,
            assumptions=f"{thresholds.STALL_RECOVERABLE:.0%} of the idle after each sync is "
            "recovered once the host queues ahead instead of waiting (per GPU)",
            evidence=s.evidence(),
        )
    ]
