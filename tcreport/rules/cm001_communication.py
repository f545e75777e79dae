"""CM001: collective communication (NCCL/RCCL) is a large slice of the GPU time.

Tensor Core share says nothing about a step that waits for an all-reduce or all-to-all. Nsight-based
tools report communication as its own slice; this rule does so once it reaches
``COMM_SHARE`` of GPU kernel time. Only exposed communication (no compute kernel running
on the same GPU) can be won back by overlapping; the saving assumes ``COMM_RECOVERABLE``
of it, per GPU.
"""

from __future__ import annotations

from tcreport import fmt
from tcreport.analysis import communication
from tcreport.analysis.result import Analysis
from tcreport.rules import _common as c
from tcreport.rules import cm002_comm_overlap, thresholds
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity

ID = "CM001"


def _fix(fl: c.Flavour) -> str:
    torch = (
        "Overlap it with compute: DDP(bucket_cap_mb=..., gradient_as_bucket_view=True) or FSDP "
        "(forward_prefetch=True, backward_prefetch=BackwardPrefetch.BACKWARD_PRE); issue "
        "collectives with async_op=True and wait just before use; for sequence-parallel "
        "all-to-all, overlap it with the attention of the previous chunk"
    )
    tf = (
        "Overlap it with compute: tf.distribute with CommunicationOptions(implementation="
        "CommunicationImplementation.NCCL, bytes_per_pack=...) so gradients are packed and "
        "all-reduced while the backward pass continues"
    )
    common = (
        "; check the links between GPUs (nvidia-smi topo -m: NVLink, not PCIe) and NCCL's choice "
        "(NCCL_DEBUG=INFO), and send fewer or larger messages (gradient accumulation, bf16 "
        "gradients)."
    )
    body = {c.Flavour.TORCH: torch, c.Flavour.TF: tf}.get(fl, f"PyTorch: {torch}. TF: {tf}")
    return body + common


def check(analysis: Analysis) -> list[Finding]:
    comm = analysis.communication.collectives
    if comm is None or not comm.kernel_ns or comm.kernel_share is None:
        return []
    if cm002_comm_overlap.check(analysis):  # the timeline shows the cause: CM002 says it once
        return []
    if comm.kernel_share < thresholds.COMM_SHARE:
        return []
    wall = analysis.communication.wall_share
    op = communication.collective_op(analysis.breakdown.ops)
    names = ", ".join(fmt.tail(n, 50) for n in comm.names[:3])
    detail = (
        f"Collective kernels ({names}) take {fmt.ns(comm.kernel_ns)}, {fmt.pct_text(comm.kernel_share)} "
        "of GPU kernel time"
    )
    if comm.devices > 1 and comm.max_device_share is not None:
        detail += f" ({fmt.pct_text(comm.max_device_share)} on the busiest of {comm.devices} GPUs)"
    if wall is not None:
        detail += f" and {fmt.pct_text(wall)} of the aggregated wall time per GPU"
    if comm.exposed_ns is not None:
        detail += f"; {fmt.ns(comm.exposed_ns)} of it runs with no compute kernel beside it"
    detail += "."
    if op is not None:
        detail += (
            f" The collective op {fmt.tail(op.name, 50)} takes {fmt.pct_text(op.share)} of GPU time, "
            "its layout copies included."
        )
    exposed = comm.exposed_ns if comm.exposed_ns is not None else comm.kernel_ns
    saving = int(exposed / max(1, comm.devices) * thresholds.COMM_RECOVERABLE)
    high = comm.kernel_share >= 2 * thresholds.HIGH_SEVERITY_SHARE
    ev = [Evidence(EvidenceKind.KERNEL, n) for n in comm.names[:5]]
    if op is not None:
        ev.append(Evidence(EvidenceKind.OP, op.name))
    return [
        Finding(
            id=ID,
            severity=Severity.HIGH if high else Severity.MEDIUM,
            title=f"Collective communication takes {fmt.pct_text(comm.kernel_share)} of GPU kernel time",
            detail=detail,
            fix=_fix(c.flavour(analysis)),
            estimated_saving_ns=saving,
            assumptions=f"{thresholds.COMM_RECOVERABLE:.0%} of the exposed collective "
            "time per GPU can be hidden behind compute; overlapped time is already free",
            evidence=tuple(ev),
        )
    ]
