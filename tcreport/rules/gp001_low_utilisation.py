"""GP001: the GPU is idle for much of the aggregated range, often waiting for input data.

Tensor Cores only help while the GPU computes. The busy share is the analysis' own
(:func:`tcreport.analysis.derived.gpu_busy`), the one the report's card shows. When host ranges or ops name a data loader
(``enumerate(DataLoader)``, ``IteratorGetNext``) and cover a real share of the range, the finding
says so and estimates the saving from overlapping loading with compute. Otherwise, when the step
breakdown's named host ranges/ops explain most of the steps' idle
(:mod:`tcreport.analysis.host_wait`: a batch drawn with ``torch.randn`` on the CPU each step), it
names them with their idle per step and share of the step, claims that measured idle as the
saving (less any the stall and launch-bound findings own: :attr:`HostWait.claim_ns`) and points
the fix at that host work. A range that is the whole profile (no iteration
split) includes start-up, so there the finding is informational only.
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis.host_wait import HostWait
from tcreport.analysis.result import Analysis
from tcreport.analysis.stalls import StallKind
from tcreport.rules import _common as c
from tcreport.rules import _stalls, thresholds
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity

ID = "GP001"


def _feed(fl: c.Flavour, nvidia: bool, jax: bool = False) -> str:
    """How to load data in parallel, in the framework's words (DALI only on NVIDIA's GPUs)."""
    dali = ", or NVIDIA DALI" if nvidia else ""
    if jax:
        return (
            "a prefetching input pipeline (Grain, or tf.data with .prefetch(tf.data.AUTOTUNE)) "
            f"and jax.device_put of the next batch before the step{dali}"
        )
    return {
        c.Flavour.TORCH: "DataLoader(num_workers=4 or more, pin_memory=True, persistent_workers=True, "
        f"prefetch_factor=2), .to(device, non_blocking=True){dali}"
        + (" for decoding/augmentation on the GPU" if nvidia else ""),
        c.Flavour.TF: "tf.data with .map(num_parallel_calls=tf.data.AUTOTUNE), .cache() and "
        f".prefetch(tf.data.AUTOTUNE){dali}",
        c.Flavour.ANY: "parallel, prefetching data loading (PyTorch DataLoader workers with pinned "
        f"memory; tf.data prefetch/AUTOTUNE{'; NVIDIA DALI' if nvidia else ''})",
    }[fl]


def _off_path(fl: c.Flavour, work: str, feed: str) -> str:
    """How to take the named host work (a :attr:`WaitCause.work`) off the step's critical path,
    in the framework's words."""
    if work == "data loading":
        return f"Overlap data loading with compute: {feed}."
    if work == "synchronisation":
        return {
            c.Flavour.TORCH: "Remove the synchronisation from the step: no .item(), .cpu(), "
            "print of tensors or torch.cuda.synchronize() each step; keep values on the GPU and "
            "read them every N steps.",
            c.Flavour.TF: "Remove the synchronisation from the step: no .numpy(), float() or "
            "print of tensors inside it; keep values on the GPU and read them every N steps.",
            c.Flavour.ANY: "Remove the synchronisation from the step: read GPU values on the "
            "host every N steps, not each step.",
        }[fl]
    if work == "random data":
        return {
            c.Flavour.TORCH: "Make the data on the GPU (torch.randn(..., device='cuda')), or in "
            "DataLoader workers (num_workers>0, pin_memory=True) so the next batch is ready "
            "before the step, copied with .to(device, non_blocking=True) (on a side "
            "torch.cuda.Stream to overlap compute).",
            c.Flavour.TF: "Make the data on the GPU (tf.random.normal under "
            "tf.device('/GPU:0')), or in a tf.data pipeline with .prefetch(tf.data.AUTOTUNE) so "
            "the next batch is ready before the step.",
            c.Flavour.ANY: "Make the data on the GPU, or prefetch it in background workers "
            "(PyTorch DataLoader workers, tf.data prefetch) so the next batch is ready before "
            "the step.",
        }[fl]
    return {
        c.Flavour.TORCH: "Move that host work to the GPU, into DataLoader workers or a thread "
        "that prepares the next step while this one computes, or do it every N steps.",
        c.Flavour.TF: "Move that host work to the GPU, into a tf.data pipeline with "
        ".prefetch(tf.data.AUTOTUNE), or do it every N steps.",
        c.Flavour.ANY: "Move that host work to the GPU, into background workers that prepare "
        "the next step while this one computes, or do it every N steps.",
    }[fl]


def _find_the_wait(fl: c.Flavour, nvidia: bool, feed: str, jax: bool = False) -> str:
    """Where to look when the profile does not show what the GPU waited for."""
    nsys = "nsys/" if nvidia else ""
    if fl is c.Flavour.TF:  # TensorFlow and JAX: the same profiler, the same viewer
        sync = "float(), jax.device_get, print of arrays" if jax else ".numpy(), print of tensors"
        return (
            f"Find what the GPU waits for in the timeline ({nsys}the profile's trace viewer in "
            f"TensorBoard or Perfetto): host work between steps, synchronisation ({sync}), or "
            f"input data: {feed}."
        )
    return (
        f"Find what the GPU waits for in the timeline ({nsys}torch.profiler): host work between "
        f"steps, synchronisation (.item(), .cpu(), print of tensors), or input data: {feed}."
    )


def _sync_first(analysis: Analysis, idle_wall: int, feed: str, fix: str) -> str:
    """``fix``, led by taking the syncs out of the step where a third or more of the idle
    follows host syncs (ST001 measures it from the same stall summary)."""
    sync = _stalls.summary(analysis, StallKind.SYNC)
    if sync is None or not idle_wall or sync.idle_ns * 3 < idle_wall:
        return fix
    top = sync.ops[0][0] if sync.ops else None
    where = f" (ST001: {fmt.ns(sync.idle_ns)} of idle after syncs, mostly at {top})" if top else ""
    first = _off_path(c.flavour(analysis), "synchronisation", feed).rstrip(".")
    return f"{first}{where}. Then: {fix[:1].lower()}{fix[1:]}"


def _host_wait(
    analysis: Analysis, hw: HostWait, util: float, idle_wall: int, feed: str
) -> tuple[str, str, int, str, str]:
    """Title, detail, saving, assumption and fix when named host work explains the steps' idle."""
    top = hw.causes[0]
    listed = "; ".join(
        f"{w.name} for {fmt.ns(w.idle_per_step_ns)} per step ({fmt.pct_text(w.step_share)} of the step)"
        for w in hw.causes
    )
    detail = (
        f" In the {fmt.plural(hw.steps, 'measured step')} (GPU step time "
        f"{fmt.ns(hw.step_per_step_ns)} each) "
        f"the GPU waited while the host was in {listed}, "
        f"{fmt.pct_text(hw.named_idle_ns / hw.idle_ns)} of the GPU's idle in them."
    )
    title = (
        f"The GPU waits for the host in {top.name} {fmt.ns(top.idle_per_step_ns)} per step "
        f"({fmt.pct_text(top.step_share)} of the step); it computes "
        f"{fmt.pct_text(util)} of the range"
    )
    saving = min(hw.claim_ns // max(1, hw.devices), idle_wall)
    assumption = (
        "taking the named host work off the step's critical path removes the GPU idle measured "
        "under it in the measured steps (per GPU; the last step's wait is not in the trace); "
        "any GPU time the moved work then takes is not counted"
    )
    if hw.claim_ns < hw.named_idle_ns:
        less = fmt.ns((hw.named_idle_ns - hw.claim_ns) / max(1, hw.devices))
        assumption += (
            "; the idle the findings on host synchronisation, copies and launch gaps claim "
            f"(ST001-ST003, GP002) is left to them, so {less} less is claimed here and no idle "
            "is claimed twice"
        )
    names = ", ".join(w.name for w in hw.causes)
    fix = f"Take {names} off the step's critical path. " + _off_path(
        c.flavour(analysis), top.work, feed
    )
    return title, detail, saving, assumption, fix


def _loader_saving(hw: HostWait | None, loader_ns: int, idle_wall: int) -> tuple[int, str]:
    """The data loader's saving: its time up to the GPU's idle, less the launch gaps and stalls
    the other findings claim (GP002, ST001-ST003), so no idle is claimed twice."""
    owned = (hw.launch_ns + hw.stalled_ns) // max(1, hw.devices) if hw is not None else 0
    assumption = (
        "loading in background workers overlaps compute, hiding the data-loader time up to the "
        "GPU's idle time"
    )
    if owned:
        assumption += (
            f", less the {fmt.ns(owned)} of idle the findings on launch gaps and host "
            "synchronisation claim (GP002, ST001-ST003), so no idle is claimed twice"
        )
    return max(0, min(loader_ns, idle_wall - owned)), assumption


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
    feed = _feed(c.flavour(analysis), nvidia, c.is_jax(analysis))
    detail = f"The GPU computes {fmt.pct_text(util)} of the {fmt.ns(wall)} aggregated range."
    saving: int | None = None
    assumption = "no saving claimed: the profile does not show what the GPU waited for"
    evidence: list[Evidence] = []
    hw = analysis.steps.host_wait
    title = (
        f"Data loading covers {fmt.pct_text(loader_share)} of the range; the GPU is busy {fmt.pct_text(util)}"
        if loader
        else f"Low GPU utilisation: the GPU computes {fmt.pct_text(util)} of the aggregated range"
    )
    if loader and loader_ns:
        names = ", ".join(analysis.signals.data_loader_names[:3])
        detail += f" Data loading ({names}) covers {fmt.ns(loader_ns)}, {fmt.pct_text(loader_share)} of it."
        workers = analysis.meta.settings.num_workers
        if workers == 0:
            detail += " The profiler recorded num_workers=0: loading runs on the training thread."
        fix = f"Overlap data loading with compute: {feed}."
        saving, assumption = _loader_saving(hw, loader_ns, idle_wall)
        ops = {o.name for o in analysis.breakdown.ops}
        evidence = [
            Evidence(EvidenceKind.OP, n) for n in analysis.signals.data_loader_names if n in ops
        ]
    elif hw is not None and hw.dominant and hw.causes and not whole:
        title, more, saving, assumption, fix = _host_wait(analysis, hw, util, idle_wall, feed)
        detail += more
        ops = {o.name for o in analysis.breakdown.ops}
        evidence = [Evidence(EvidenceKind.OP, w.name) for w in hw.causes if w.name in ops]
    else:
        fix = _sync_first(
            analysis,
            idle_wall,
            feed,
            _find_the_wait(c.flavour(analysis), nvidia, feed, c.is_jax(analysis)),
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
