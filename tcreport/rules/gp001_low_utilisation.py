"""GP001: the GPU is idle for much of the aggregated range, often waiting for input data.

Tensor Cores only help while the GPU computes. The busy share is the analysis' own
(:func:`tcreport.analysis.derived.gpu_busy`), the one the report's card shows. When host ranges or ops name a data loader
(``enumerate(DataLoader)``, ``IteratorGetNext``) and cover a real share of the range, the finding
says so and estimates the saving from overlapping loading with compute. A range that is the whole
profile (no iteration split) includes start-up, so there the finding is informational only.
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis.result import Analysis
from tcreport.rules import _common as c
from tcreport.rules import thresholds
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity

ID = "GP001"


def _feed(fl: c.Flavour, nvidia: bool) -> str:
    """How to load data in parallel, in the framework's words (DALI only on NVIDIA's GPUs)."""
    dali = ", or NVIDIA DALI" if nvidia else ""
    return {
        c.Flavour.TORCH: "DataLoader(num_workers=4 or more, pin_memory=True, persistent_workers=True, "
        f"prefetch_factor=2), .to(device, non_blocking=True){dali}"
        + (" for decoding/augmentation on the GPU" if nvidia else ""),
        c.Flavour.TF: "tf.data with .map(num_parallel_calls=tf.data.AUTOTUNE), .cache() and "
        f".prefetch(tf.data.AUTOTUNE){dali}",
        c.Flavour.ANY: "parallel, prefetching data loading (PyTorch DataLoader workers with pinned "
        f"memory; tf.data prefetch/AUTOTUNE{'; NVIDIA DALI' if nvidia else ''})",
    }[fl]


def check(analysis: Analysis) -> list[Finding]:
    b = analysis.time.busy  # one definition of "busy" for the card, this finding and the JSON
    if b is None or b.share is None or not b.range_ns:
        return []
    wall, util, idle_wall = b.range_ns, b.share, b.idle_wall_ns or 0
    loader_ns = analysis.signals.data_loader_ns
    loader_share = c.share(loader_ns, wall) if loader_ns else None
    loader = loader_share is not None and loader_share >= thresholds.DATA_LOADER_SHARE and idle_wall
    if util >= thresholds.LOW_UTILISATION and not loader:
        return []
    its = analysis.iterations
    # one step marker (a single ProfilerStep#N) is a split; a run of one iteration found no marker
    whole = its.whole_run or (not its.marked and (its.info.aggregated or 1) < 2)
    nvidia = c.is_nvidia(analysis)  # NVIDIA's tools (Nsight Systems, DALI): not for another GPU
    feed = _feed(c.flavour(analysis), nvidia)
    detail = f"The GPU computes {fmt.pct_text(util)} of the {fmt.ns(wall)} aggregated range."
    saving: int | None = None
    assumption = "no saving claimed: the profile does not show what the GPU waited for"
    evidence: list[Evidence] = []
    if loader and loader_ns:
        names = ", ".join(analysis.signals.data_loader_names[:3])
        detail += f" Data loading ({names}) covers {fmt.ns(loader_ns)}, {fmt.pct_text(loader_share)} of it."
        workers = analysis.meta.settings.num_workers
        if workers == 0:
            detail += " The profiler recorded num_workers=0: loading runs on the training thread."
        fix = f"Overlap data loading with compute: {feed}."
        saving = min(loader_ns, idle_wall)
        assumption = "loading in background workers overlaps compute, hiding the data-loader time up to the GPU's idle time"
        ops = {o.name for o in analysis.breakdown.ops}
        evidence = [
            Evidence(EvidenceKind.OP, n) for n in analysis.signals.data_loader_names if n in ops
        ]
    else:
        fix = (
            f"Find what the GPU waits for in the timeline ({'nsys/' if nvidia else ''}torch.profiler): host work between "
            f"steps, synchronisation (.item(), .cpu(), print of tensors), or input data: {feed}."
        )
    if whole:
        detail += " The range is the whole profile (no iteration split), so start-up is included."
        saving, assumption = None, "no saving claimed: the range includes process start-up"
        fix = "Split the profile into iterations first (--key-node, --iter-start); then: " + (
            fix[:1].lower() + fix[1:]
        )
    low_iters = sorted(
        (r for r in analysis.iterations.rows if r.aggregated and r.duration_ns > 0),
        key=lambda r: (r.tc_ns + r.non_tc_ns) / r.duration_ns,
    )[:3]
    evidence += [Evidence(EvidenceKind.ITERATION, str(r.iteration)) for r in low_iters]
    sev = (
        Severity.LOW
        if whole
        else (Severity.HIGH if util < thresholds.LOW_UTILISATION / 2 else Severity.MEDIUM)
    )
    title = (
        f"Data loading covers {fmt.pct_text(loader_share)} of the range; the GPU is busy {fmt.pct_text(util)}"
        if loader
        else f"Low GPU utilisation: the GPU computes {fmt.pct_text(util)} of the aggregated range"
    )
    return [
        Finding(
            id=ID,
            severity=sev,
            title=title,
            detail=detail,
            fix=fix,
            estimated_saving_ns=saving,
            assumptions=assumption,
            evidence=tuple(evidence),
        )
    ]
