"""Collective communication (NCCL/RCCL) in the kernel timeline: how much, and how much is exposed.

On a multi-GPU run the all-reduce / all-to-all / send-recv kernels are GPU time the Tensor Core
share says nothing about: on the 2x H100 sample ``ncclDevKernel_SendRecv`` is 6.9 % of kernel time
and 11 % of the wall time, which Nsight-based tools report as a first-class slice of the step. The
figure lives here so a fuller step breakdown (compute / communication / memory / idle) can build on
it; :func:`communication` is one pass of vector operations over the kernels table.

"Exposed" communication is the time a collective runs on a GPU while no compute kernel does
(interval union per device): overlap hides the rest, so only the exposed part can be won back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport._arrays import exact_sums
from tcreport._group_by import aggregate_by
from tcreport.analysis import activity, collectives
from tcreport.analysis.figures import OpRow
from tcreport.analysis.overlap import CommOverlap


@dataclass(frozen=True)
class Communication:
    kernel_ns: int  # collective kernel time, summed over launches and devices
    kernel_share: float | None  # of all GPU kernel time
    exposed_ns: int | None  # collectives running with no compute kernel on the same GPU (summed)
    devices: int  # GPUs with kernel rows (the per-GPU share divides by this)
    names: tuple[str, ...]  # distinct collective kernel names, longest total first (at most 10)
    max_device_share: float | None = None  # the busiest GPU's collective share of its kernel time

    def wall_share(self, wall_ns: int | None) -> float | None:
        """Collective time per GPU as a share of the aggregated wall time (the step)."""
        if not wall_ns or wall_ns <= 0:
            return None
        return min(1.0, self.kernel_ns / max(1, self.devices) / wall_ns)


def _is_collective(kernels: pa.Table) -> np.ndarray:
    """The one collective-kernel test (:func:`tcreport.analysis.activity.is_collective`)."""
    return activity.is_collective(kernels.column("name"))


def communication(
    kernels: pa.Table | None, overlap: CommOverlap | None = None
) -> Communication | None:
    """Collective kernel time and its share; ``None`` without kernel rows. The exposed part is
    the step breakdown's (:attr:`CommOverlap.exposed_ns`, collective time with no compute kernel
    beside it on its GPU), so the JSON's two communication blocks say the same number."""
    if kernels is None or kernels.num_rows == 0:
        return None
    coll = _is_collective(kernels)
    dur = np.asarray(kernels.column("duration_ns").to_numpy(), np.int64)
    total = int(dur.sum())
    devices = int(pc.count_distinct(kernels.column("device_id")).as_py() or 1)
    if not coll.any():
        return Communication(0, 0.0 if total else None, 0, devices, ())
    mask = pa.array(coll)
    part = {c: kernels.column(c).filter(mask) for c in ("name", "duration_ns")}  # not every column
    by_name = aggregate_by(
        pa.table({"n": part["name"].cast(pa.string()), "d": part["duration_ns"]}),
        "n",
        [("d", "sum")],
    ).sort_by([("d_sum", "descending"), ("n", "ascending")])
    ns = int(dur[coll].sum())
    return Communication(
        kernel_ns=ns,
        kernel_share=ns / total if total else None,
        exposed_ns=overlap.exposed_ns if overlap is not None else None,
        devices=devices,
        names=tuple(by_name.column("n").to_pylist()[:10]),
        max_device_share=_max_device_share(kernels, coll, dur),
    )


def _max_device_share(kernels: pa.Table, coll: np.ndarray, dur: np.ndarray) -> float | None:
    dev = np.asarray(pc.fill_null(kernels.column("device_id"), -1).to_numpy())
    low = int(dev.min())
    if int(dev.max()) - low < 1 << 16:  # device ids are few and small: a bin per id offset
        inv = np.subtract(dev, low, dtype=np.int32)  # (a bin with no launch has no time)
    else:  # hostile ids: np.unique's codes (a sort of every launch)
        _, inv = np.unique(dev, return_inverse=True)
    del dev
    n = int(inv.max()) + 1
    all_ns = exact_sums(inv, dur, n)  # exact int64 per device, a slice of launches at a time
    coll_ns = exact_sums(inv[coll], dur[coll], n)
    ok = all_ns > 0
    return float((coll_ns[ok] / all_ns[ok]).max()) if ok.any() else None


def collective_op(ops: Sequence[OpRow]) -> OpRow | None:
    """The collective op (``AllToAll4D``, ``nccl:all_reduce``, ``c10d::allreduce_``) with the most
    GPU time: its time includes the layout copies around the NCCL kernel, which is what a user
    sees as "the all-to-all" (11.2 % of GPU time on the 2x H100 sample). The largest one, never a
    sum, since collective ops nest."""
    collective = re.compile(activity.COLLECTIVE, re.IGNORECASE)
    hits = [o for o in ops if o.gpu_ns and collective.search(o.name)]
    return max(hits, key=lambda o: (o.gpu_ns or 0, o.name), default=None)


#: Kinds a collective kernel's name says outright (NCCL's ``ncclDevKernel_AllGather_RING_LL``).
_NAMED_KINDS = (
    collectives.Family.ALL_REDUCE,
    collectives.Family.ALL_GATHER,
    collectives.Family.REDUCE_SCATTER,
    collectives.Family.ALL_TO_ALL,
    collectives.Family.BROADCAST,
    collectives.Family.REDUCE,
)
#: NCCL's point-to-point kernel, which also carries its all-to-all (grouped sends and receives).
_SEND_RECV = re.compile(r"sendrecv|send_recv", re.IGNORECASE)


def collective_kind(names: Sequence[str], op_names: Iterable[str]) -> collectives.Family | None:
    """What kind of collective the one with the most time is (``names``: most time first), for
    advice that depends on it: a DDP all-reduce, an FSDP all-gather or reduce-scatter, a MoE or
    sequence-parallel all-to-all. NCCL runs an all-to-all as ``SendRecv`` kernels, which look
    like pipeline-parallel point-to-point, so a ``SendRecv`` kernel is an all-to-all where the
    run's ops record one (``nccl:all_to_all``, ``c10d::alltoall_base_``, ``AllToAll4D``), else
    send/receive. ``None`` without collectives; :attr:`Family.OTHER` for a name that says none."""
    if not names:
        return None
    top = names[0]
    kind = collectives.family(top)
    if kind in _NAMED_KINDS:
        return kind
    if _SEND_RECV.search(top):
        to_all = any(collectives.family(o) is collectives.Family.ALL_TO_ALL for o in op_names)
        return collectives.Family.ALL_TO_ALL if to_all else collectives.Family.SEND_RECV
    return collectives.Family.OTHER
