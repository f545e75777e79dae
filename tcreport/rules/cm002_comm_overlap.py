"""CM002: collectives on the compute stream, or little of their time hidden under compute.

NCCL kernels queued on the same stream as the model's kernels cannot overlap them: every
all-gather and reduce-scatter adds its full time to the step. DDP's bucketed all-reduce and FSDP's
prefetching exist to run collectives on a side stream while compute continues; when a trace shows
them on the compute stream, or shows little of their time under compute, that design is not
working. The fix depends on the kind of collective with the most time (the analysis decides it,
:attr:`Communication.kind`): buckets during backward for an all-reduce, prefetching for an
all-gather or reduce-scatter, chunking the work around an all-to-all (MoE dispatch, sequence
parallel attention), more micro-batches for pipeline sends. Needs per-launch timestamps
(analysis.overlap).
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis import communication
from tcreport.analysis.collectives import Family
from tcreport.analysis.overlap import CommOverlap
from tcreport.analysis.result import Analysis
from tcreport.rules import _common as c
from tcreport.rules import thresholds
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity

ID = "CM002"


#: The fix for a collective of no kind the advice knows (a broadcast, a name that says none).
_GENERIC = {
    c.Flavour.TORCH: "Issue collectives asynchronously on their own stream (dist.all_reduce(..., "
    "async_op=True) or a torch.cuda.Stream, waiting on the handle only where the result is "
    "used); with FSDP enable prefetching (backward_prefetch=BackwardPrefetch.BACKWARD_PRE, "
    "forward_prefetch=True) and avoid synchronising calls between layers; with DDP let the "
    "gradient buckets all-reduce during backward instead of reducing after it.",
    c.Flavour.TF: "Let the distribution strategy overlap gradient all-reduce with backward "
    "compute (MultiWorkerMirroredStrategy with communication packing, or XLA's async "
    "collectives) instead of reducing after the step.",
    c.Flavour.ANY: "Run collectives on a dedicated stream and overlap them with independent "
    "compute (prefetch the next layer's parameters, all-reduce gradients per bucket during "
    "backward).",
}
_ALL_REDUCE = {
    c.Flavour.TORCH: "Let DDP all-reduce each gradient bucket during backward, not after it: "
    "keep synchronising calls (.item(), torch.cuda.synchronize()) out of backward, drop "
    "find_unused_parameters=True where no parameter goes unused, tune bucket_cap_mb (fewer, "
    "larger buckets), and skip the all-reduce on gradient-accumulation micro-steps "
    "(model.no_sync()).",
    c.Flavour.TF: _GENERIC[c.Flavour.TF],
    c.Flavour.ANY: "All-reduce gradients per bucket during backward (as PyTorch DDP does), not "
    "after it, and keep synchronising calls out of the backward pass.",
}
_ALL_TO_ALL = {
    c.Flavour.TORCH: "Overlap the all-to-all (MoE token dispatch, sequence-parallel attention, "
    "sharded embeddings) with independent compute: exchange one chunk of the batch while "
    "another computes (the experts, the attention heads, or the previous batch's dense layers "
    "as torchrec's TrainPipelineSparseDist does), issue it asynchronously "
    "(dist.all_to_all_single(..., async_op=True), waiting only where the result is used), make "
    "fewer, larger exchanges (one for q, k and v together), and keep the layout copies around "
    "it (permute, contiguous) to a minimum.",
    c.Flavour.TF: "Overlap the all-to-all (MoE dispatch, sharded embeddings) with independent "
    "compute: exchange one chunk of the batch while another computes, and make fewer, larger "
    "exchanges.",
    c.Flavour.ANY: "Overlap the all-to-all (MoE dispatch, sequence-parallel attention, sharded "
    "embeddings) with independent compute: exchange one chunk of the batch while another "
    "computes, and make fewer, larger exchanges (one for q, k and v together).",
}
_SHARDED = {
    c.Flavour.TORCH: "Prefetch the next layer's parameters while this one computes: with FSDP "
    "backward_prefetch=BackwardPrefetch.BACKWARD_PRE and forward_prefetch=True (FSDP2: "
    "set_modules_to_forward_prefetch / set_modules_to_backward_prefetch), wrap units large "
    "enough that each all-gather is worth overlapping, and avoid synchronising calls between "
    "layers.",
    c.Flavour.TF: "Let XLA overlap the parameter all-gathers and gradient reduce-scatters with "
    "compute (async collectives, the latency-hiding scheduler) instead of running them between "
    "layers.",
    c.Flavour.ANY: "Prefetch the next layer's parameters (its all-gather) while this one "
    "computes, and reduce-scatter each layer's gradients during backward.",
}
_SEND_RECV = (
    "Point-to-point sends and receives (pipeline parallelism) stall the stage that "
    "waits for them: use more micro-batches per step or an interleaved schedule, and issue the "
    "sends and receives asynchronously so compute continues."
)
#: The fix by the kind of the collective with the most time (:attr:`Communication.kind`).
_FIXES: dict[Family | None, dict[c.Flavour, str]] = {
    Family.ALL_REDUCE: _ALL_REDUCE,
    Family.ALL_TO_ALL: _ALL_TO_ALL,
    Family.ALL_GATHER: _SHARDED,
    Family.REDUCE_SCATTER: _SHARDED,
    Family.SEND_RECV: dict.fromkeys(c.Flavour, _SEND_RECV),
}


def _fix(kind: Family | None, fl: c.Flavour) -> str:
    """The advice for the kind of collective that holds the most time: a DDP all-reduce overlaps
    with backward by buckets, an FSDP all-gather by prefetching, an all-to-all only by chunking
    the work around it, so one generic sentence fits none of them well."""
    return _FIXES.get(kind, _GENERIC)[fl]


def _detail(cm: CommOverlap, share: float | None) -> str:
    per_dev = (  # one GPU: its figures are the totals already given
        " "
        + "; ".join(
            f"GPU {d.device_id}: {fmt.ns(d.collective_ns)} of collectives, "
            f"{fmt.pct_text(d.overlap_share or 0.0)} under compute"
            for d in cm.devices
        )
        + "."
        if len(cm.devices) > 1
        else ""
    )
    on = cm.on_compute_stream
    where = (
        "they run on the compute stream ("
        + ", ".join(f"GPU {s.device_id} stream {s.stream_id}" for s in on)
        + "), so they serialise with the model's kernels"
        if on
        else "they run on their own streams but little compute runs beside them"
    )
    return (
        f"Collectives ({', '.join(cm.names) or 'by kernel name'}) take {fmt.ns(cm.collective_ns)} "
        f"{cm.where}, {fmt.pct_text(share or 0.0)} of the kernel span, and {fmt.pct_text(cm.overlap_share or 0.0)} "
        f"of that time is hidden under compute; {where}.{per_dev}"
    )


def check(analysis: Analysis) -> list[Finding]:
    cm = analysis.communication.overlap
    if cm is None or cm.span_ns <= 0 or cm.collective_ns <= 0:
        return []
    # the span of the GPUs that ran collectives: a second GPU with none would dilute the share
    span = cm.comm_span_ns or cm.span_ns
    share = cm.collective_ns / span
    low = (cm.overlap_share or 0.0) < thresholds.COMM_LOW_OVERLAP
    on = cm.on_compute_stream
    if share < thresholds.COMM_MIN_SHARE or not (low or on):
        return []
    exposed_share = cm.exposed_ns / span
    ndev = max(1, len(cm.devices))
    title = (
        "Collectives run on the compute stream and are not overlapped"
        if on and low
        else "Collectives run on the compute stream"
        if on
        else "Little collective time is hidden under compute"
    )
    return [
        Finding(
            id=ID,
            severity=Severity.HIGH if exposed_share >= thresholds.COMM_SHARE else Severity.MEDIUM,
            # several GPUs rarely expose the same time (10.0 and 23.8 ms on the 2xH100 sample)
            title=f"{title}: {fmt.ns(cm.exposed_ns // ndev)} exposed"
            + (" per GPU on average" if ndev > 1 else ""),
            detail=_detail(cm, share) + _collective_op(analysis),
            fix=_fix(analysis.communication.kind, c.flavour(analysis)),
            estimated_saving_ns=int(cm.exposed_ns / ndev * thresholds.COMM_RECOVERABLE),
            assumptions=f"overlapping collectives with compute hides "
            f"{thresholds.COMM_RECOVERABLE:.0%} of their exposed time (per GPU)",
            evidence=tuple(Evidence(EvidenceKind.KERNEL, n) for n in cm.names),
        )
    ]


def _collective_op(analysis: Analysis) -> str:
    """The framework op around the collectives (e.g. ``AllToAll4D``), whose time includes its
    layout copies: where in the model to look."""
    op = communication.collective_op(analysis.breakdown.ops)
    if op is None:
        return ""
    return f" The collective op {fmt.tail(op.name, 50)} takes {fmt.pct_text(op.share)} of GPU time."
