"""Collective communication: how long it ran, how much of it compute hid, and on which streams.

Data-parallel and sharded training (DDP, FSDP, ZeRO) is only as fast as the communication it fails
to hide. NCCL kernels on their own stream can run while the next layer's GEMMs do; the same
kernels queued on the compute stream serialise with them and every microsecond shows up in the
step. This module measures it on the aggregated range, per GPU: the union of collective intervals,
the part of it during which a compute kernel ran on the same GPU, and, per stream that carried
collectives, whether that stream is the GPU's compute stream (the one with the most compute time).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from tcreport._arrays import exact_sums, sum_slice
from tcreport.analysis import _codes
from tcreport.analysis.activity import Activity, Cat
from tcreport.analysis.steps import StepRow
from tcreport.analysis.sweep import sweep
from tcreport.analysis.timeline import LAUNCH_GAP_NS

#: Collective kernel names kept as evidence, by time.
TOP_NAMES = 5


@dataclass(frozen=True)
class CollectiveStream:
    """One stream of one GPU that ran collectives."""

    device_id: int | None
    stream_id: int | None
    collective_ns: int  # summed kernel time of the collectives on it
    launches: int
    compute_ns: int  # compute-kernel time on the same stream
    is_compute_stream: bool  # the stream with the GPU's most compute time


@dataclass(frozen=True)
class DeviceComm:
    device_id: int | None
    collective_ns: int  # union of collective intervals
    overlap_ns: int  # of which a compute kernel ran at the same time on this GPU
    compute_stream_id: int | None

    @property
    def exposed_ns(self) -> int:
        return self.collective_ns - self.overlap_ns

    @property
    def overlap_share(self) -> float | None:
        return self.overlap_ns / self.collective_ns if self.collective_ns else None


@dataclass(frozen=True)
class CommOverlap:
    """Communication figures of the aggregated range; ``None`` on runs without collectives."""

    devices: tuple[DeviceComm, ...]
    streams: tuple[CollectiveStream, ...]
    names: tuple[str, ...]  # the collective kernels with the most time, most first
    span_ns: int  # summed over GPUs, first to last activity
    #: the same, over only the GPUs that ran collectives (the span their share is of)
    comm_span_ns: int | None = None

    @property
    def collective_ns(self) -> int:
        return sum(d.collective_ns for d in self.devices)

    @property
    def overlap_ns(self) -> int:
        return sum(d.overlap_ns for d in self.devices)

    @property
    def exposed_ns(self) -> int:
        return self.collective_ns - self.overlap_ns

    @property
    def overlap_share(self) -> float | None:
        return self.overlap_ns / self.collective_ns if self.collective_ns else None

    @property
    def on_compute_stream(self) -> tuple[CollectiveStream, ...]:
        return tuple(s for s in self.streams if s.is_compute_stream)

    @property
    def where(self) -> str:
        """Where :attr:`collective_ns` was counted, after the figure: "summed over 2 GPUs", or
        "on GPU 0" when one GPU is in view (a single rank's trace has nothing to sum over)."""
        if len(self.devices) == 1:
            d = self.devices[0].device_id
            return f"on GPU {d}" if d is not None else "on its GPU"
        return f"summed over {len(self.devices)} GPUs"


def _opt(v: int) -> int | None:
    return None if v < 0 else v


def _stream_table(
    act: Activity, rows: np.ndarray | None = None
) -> tuple[tuple[CollectiveStream, ...], dict[int, int]]:
    """Per (device, stream): collective and compute time; the compute stream of each device.
    ``rows``: a mask of the intervals to count (``None``: all).

    Grouped on one int32 code per (device, stream) and summed a slice at a time: no table of
    per-interval columns (a duration, two weighted copies of it) is ever built."""
    key = _codes.combine(act.device, act.stream)
    first = _codes.first_rows(key)
    n = first.size
    comm_ns, comp_ns, comm_n = (np.zeros(n, np.int64) for _ in range(3))
    step = sum_slice(key.size, n)
    for a in range(0, key.size, step):
        part = slice(a, a + step)
        k, cat = key[part], act.cat[part]
        comm = cat == Cat.COMM
        compute = cat <= Cat.UNKNOWN  # the three compute categories
        if rows is not None:  # rows left out weigh zero
            comm &= rows[part]
            compute &= rows[part]
        dur = act.end[part] - act.start[part]
        comm_ns += exact_sums(k, np.where(comm, dur, 0), n)
        comp_ns += exact_sums(k, np.where(compute, dur, 0), n)
        comm_n += np.bincount(k[comm], minlength=n)
    order = np.lexsort((act.stream[first], act.device[first]))  # by device, then stream
    first = first[order]
    comm_ns, comp_ns, comm_n = comm_ns[order], comp_ns[order], comm_n[order]
    dev, stream = act.device[first], act.stream[first]
    busiest: dict[int, int] = {}
    for d in np.unique(dev):  # one per GPU
        sel = np.flatnonzero(dev == d)
        if comp_ns[sel].max() > 0:
            busiest[int(d)] = int(stream[sel[np.argmax(comp_ns[sel])]])
    out = [
        CollectiveStream(
            device_id=_opt(int(dev[i])),
            stream_id=_opt(int(stream[i])),
            collective_ns=int(comm_ns[i]),
            launches=int(comm_n[i]),
            compute_ns=int(comp_ns[i]),
            is_compute_stream=busiest.get(int(dev[i])) == int(stream[i]),
        )
        for i in np.flatnonzero(comm_n > 0)  # streams with collectives: a handful
    ]
    out.sort(key=lambda s: (s.device_id or -1, s.stream_id or -1))
    return tuple(out), busiest


def _top_names(
    kernels: pa.Table | None, act: Activity, rows: np.ndarray | None = None
) -> tuple[str, ...]:
    is_comm = (act.cat == Cat.COMM) & (act.kernel_row >= 0)
    if rows is not None:
        is_comm &= rows
    krow = act.kernel_row[is_comm]
    if kernels is None or krow.size == 0:
        return ()
    c = _codes.codes(kernels.column("name"))
    code = c.codes[krow]
    dur = act.end[is_comm] - act.start[is_comm]
    total = np.bincount(code[code >= 0], weights=dur[code >= 0])
    top = np.argsort(-total, kind="stable")[:TOP_NAMES]
    top = top[total[top] > 0]
    return tuple(str(v) for v in c.take(top) if v is not None)


def comm_overlap(act: Activity | None, kernels: pa.Table | None = None) -> CommOverlap | None:
    """Collective time and its overlap with compute per GPU; ``None`` without collectives."""
    if act is None or not (act.cat == Cat.COMM).any():
        return None
    dev_code = _codes.combine(act.device)
    n = int(dev_code.max()) + 1
    sums = sweep(dev_code, act.start, act.end, act.cat, n, LAUNCH_GAP_NS)
    total, over, span = sums.comm_total, sums.comm_hidden, sums.span
    streams, busiest = _stream_table(act)
    dev_of = act.device[_codes.first_rows(dev_code)]
    devices = tuple(
        sorted(
            (
                DeviceComm(
                    device_id=_opt(int(dev_of[g])),
                    collective_ns=int(total[g]),
                    overlap_ns=int(over[g]),
                    compute_stream_id=busiest.get(int(dev_of[g])),
                )
                for g in range(n)  # one per GPU
                if total[g] > 0
            ),
            key=lambda d: d.device_id or -1,
        )
    )
    return CommOverlap(
        devices, streams, _top_names(kernels, act), int(span.sum()), int(span[total > 0].sum())
    )


def from_steps(
    act: Activity | None,
    kernels: pa.Table | None,
    rows: Sequence[StepRow],
    iterations: tuple[int, int] | None,
) -> CommOverlap | None:
    """The same figures from the step breakdown's per-(iteration, GPU) sweep, summed over the
    aggregated iterations (``iterations`` = first, last; ``None``: every row), so a large trace
    is swept once. Collectives spanning an iteration boundary count in each iteration."""
    if act is None or not (act.cat == Cat.COMM).any():
        return None
    lo, hi = iterations if iterations is not None else (-(1 << 31), 1 << 31)
    kept = [r for r in rows if lo <= r.iteration <= hi]
    per: dict[int | None, list[int]] = {}
    for r in kept:  # one per (iteration, GPU): small
        acc = per.setdefault(r.device_id, [0, 0])
        acc[0] += r.communication_total_ns
        acc[1] += r.communication_overlap_ns
    if not any(v[0] for v in per.values()):
        return None
    mask = (act.iteration >= lo) & (act.iteration <= hi) if iterations is not None else None
    streams, busiest = _stream_table(act, mask)
    devices = tuple(
        DeviceComm(d, v[0], v[1], busiest.get(d if d is not None else -1))
        for d, v in sorted(per.items(), key=lambda p: p[0] if p[0] is not None else -1)
        if v[0] > 0
    )
    return CommOverlap(
        devices,
        streams,
        _top_names(kernels, act, mask),
        sum(r.span_ns for r in kept),
        sum(r.span_ns for r in kept if per[r.device_id][0] > 0),
    )
