"""When the GPU was busy, when it sat idle, and how short its kernels were.

Tensor Core share says nothing about a GPU that waits: a model whose step is 90 % CPU launch overhead
or data loading gains little from mixed precision. Telling those apart needs per-launch timestamps,
so this module works only on kernel tables at launch granularity (``start_ns`` set) and returns
``None`` otherwise, never a made-up figure.

Busy time is the union of kernel intervals per device (concurrent streams count once); idle time is
what the union leaves between a device's first kernel start and last kernel end; gaps are split into
short ones (the CPU issuing the next launch) and long ones (synchronisation, data loading, host
work) at :data:`LAUNCH_GAP_NS`. All of it is sorting and cumulative maxima in numpy: one pass per
device, no per-launch Python.

The same interval union measures host ranges that name a data loader (``enumerate(DataLoader)``,
TensorFlow's ``IteratorGetNext``), so the low-utilisation finding can say what the GPU waited for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.analysis import _codes

#: A kernel shorter than this is dominated by its own launch cost: a CUDA launch costs the CPU a few
#: microseconds, and an eager framework adds tens more per op, so a stream of sub-10 µs kernels can
#: only keep the GPU busy if the CPU issues them faster than it can.
SHORT_KERNEL_NS = 10_000
#: Idle gaps shorter than this are taken to be the CPU issuing the next launch (eager per-op overhead
#: is 10-100 µs); longer gaps are synchronisation, data loading or other host work.
LAUNCH_GAP_NS = 100_000
#: How many of the most frequent short kernels to keep as evidence.
TOP_SHORT_KERNELS = 5

#: Host ranges and ops that mean "waiting for input data", across frameworks.
DATA_LOADER = re.compile(
    r"DataLoader|IteratorGetNext|MultiDeviceIterator|data_?loader|dali", re.IGNORECASE
)


@dataclass(frozen=True)
class TimelineFigures:
    """Per-launch timeline statistics of the aggregated range (all devices together)."""

    devices: int
    launches: int
    span_ns: int  # sum over devices of first kernel start to last kernel end
    busy_ns: int  # sum over devices of the union of kernel intervals
    idle_ns: int  # span_ns - busy_ns
    gaps: int  # idle gaps between kernels
    short_gap_idle_ns: int  # idle time in gaps shorter than LAUNCH_GAP_NS
    long_gap_idle_ns: int
    short_launches: int  # launches shorter than SHORT_KERNEL_NS
    short_kernel_ns: int  # their total duration
    median_kernel_ns: int
    median_gap_ns: int | None  # None when kernels never left a gap
    short_kernel_names: tuple[str, ...]  # most frequent short kernels, most frequent first

    @property
    def busy_share(self) -> float | None:
        """Busy fraction of the kernel span (not of wall time: see ``Analysis.time.wall_ns``)."""
        return self.busy_ns / self.span_ns if self.span_ns > 0 else None

    @property
    def short_launch_share(self) -> float | None:
        return self.short_launches / self.launches if self.launches else None


@dataclass(frozen=True)
class HostMarkers:
    """Data-loader ranges/ops found on the host side, and how long they covered (interval union)."""

    data_loader_names: tuple[str, ...]
    data_loader_ns: int | None  # None when the matches have no timestamps


def _union(starts: np.ndarray, ends: np.ndarray) -> tuple[int, int, np.ndarray]:
    """(busy, span, gap lengths) of a set of intervals, by sorting and a running maximum of ends.
    Launches are usually recorded in start order: then nothing is sorted or gathered."""
    if starts.size > 1 and bool((starts[1:] < starts[:-1]).any()):
        order = np.argsort(starts, kind="stable")
        s, e = starts[order], np.maximum(ends[order], starts[order])
        del order
    else:  # a stable sort would keep this order: the same arrays
        s, e = starts, np.maximum(ends, starts)
    reach = np.maximum.accumulate(e, out=e)
    gaps = s[1:] - reach[:-1]
    gaps = gaps[gaps > 0]
    span = int(reach[-1] - s[0])
    return span - int(gaps.sum()), span, gaps


#: Up to this many GPUs the per-GPU loop is fastest; past it (a hostile trace naming a device per
#: launch) a pass per GPU over every launch would be quadratic, and :func:`_unions` takes over.
_FEW_DEVICES = 64


def _numbers(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """An int64 column as a writable int64 array: one copy (to_numpy's own, or of its view)."""
    out = np.asarray(col.to_numpy(), np.int64)
    return out if out.flags.writeable else out.copy()


def _intervals(k: pa.Table, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Starts and ends (start + duration, a negative one as 0) of the launches, or of the
    ``mask``ed ones: read from the columns per GPU, so no array of every launch is kept."""
    start, dur = k.column("start_ns"), k.column("duration_ns")
    if mask is not None:
        m = pa.array(mask)
        start, dur = start.filter(m), dur.filter(m)
    starts = np.asarray(start.to_numpy(), np.int64)
    ends = _numbers(dur)
    np.maximum(ends, 0, out=ends)
    ends += starts
    return starts, ends


def _union_per_device(
    uniq: np.ndarray, devices: np.ndarray, k: pa.Table
) -> tuple[int, int, np.ndarray]:
    if uniq.size == 1:  # every launch on one GPU
        return _union(*_intervals(k))
    busy = span = 0
    all_gaps: list[np.ndarray] = []
    for dev in uniq:  # one iteration per GPU, not per launch
        b, s, g = _union(*_intervals(k, devices == dev))
        busy, span = busy + b, span + s
        all_gaps.append(g)
    return busy, span, np.concatenate(all_gaps) if all_gaps else np.empty(0, np.int64)


def _unions(
    devices: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[int, int, np.ndarray]:
    """:func:`_union_per_device` for every GPU at once: the start/end events sorted by (GPU,
    time, starts first) and a running count of open launches, which is 0 between two GPUs; busy
    is where it is positive, a gap where it is 0 between two launches of one GPU."""
    n = starts.size
    times = np.concatenate([starts, np.maximum(ends, starts)])
    grp = np.concatenate([devices, devices])
    is_end = np.arange(2 * n) >= n
    order = np.lexsort((is_end, times, grp))
    t, g = times[order], grp[order]
    open_ = np.cumsum(np.where(is_end[order], -1, 1))[:-1]
    seg = np.diff(t)
    busy = int(seg[open_ > 0].sum())
    gaps = seg[(open_ == 0) & (g[1:] == g[:-1]) & (seg > 0)]
    return busy, busy + int(gaps.sum()), gaps


def _name_counts(names: pa.ChunkedArray, mask: np.ndarray, top: int) -> tuple[str, ...]:
    """The ``top`` most frequent names among masked rows (value counts over distinct names)."""
    if not mask.any():
        return ()
    counts = pc.value_counts(pc.filter(names, pa.array(mask)))
    values = counts.field("values")
    if pa.types.is_dictionary(values.type):
        values = values.cast(values.type.value_type)
    pairs = zip(values.to_pylist(), counts.field("counts").to_pylist(), strict=True)
    ranked = sorted(
        ((str(v), int(c)) for v, c in pairs if v is not None), key=lambda p: (-p[1], p[0])
    )
    return tuple(v for v, _ in ranked[:top])


def kernel_timeline(kernels: pa.Table | None) -> TimelineFigures | None:
    """Timeline figures of a canonical kernels table; ``None`` without per-launch timestamps."""
    if kernels is None or kernels.num_rows == 0:
        return None
    k = kernels.select(["name", "start_ns", "duration_ns", "calls", "device_id"])  # not wide
    valid = pc.fill_null(
        pc.and_(pc.is_valid(k.column("start_ns")), pc.equal(k.column("calls"), 1)), False
    )
    if not pc.all(valid).as_py():
        k = k.filter(valid)
    if k.num_rows == 0:
        return None
    devices = pc.fill_null(k.column("device_id"), -1).to_numpy()
    uniq = np.unique(devices)
    busy, span, gaps = (
        _union_per_device(uniq, devices, k)
        if uniq.size <= _FEW_DEVICES
        else _unions(devices, *_intervals(k))
    )
    del devices
    durs = _numbers(k.column("duration_ns"))
    np.maximum(durs, 0, out=durs)
    short_gaps = gaps < LAUNCH_GAP_NS
    short = durs < SHORT_KERNEL_NS
    return TimelineFigures(
        devices=int(uniq.size),
        launches=int(k.num_rows),
        span_ns=span,
        busy_ns=busy,
        idle_ns=span - busy,
        gaps=int(gaps.size),
        short_gap_idle_ns=int(gaps[short_gaps].sum()),
        long_gap_idle_ns=int(gaps[~short_gaps].sum()),
        short_launches=int(short.sum()),
        short_kernel_ns=int(durs[short].sum()),
        # last: the medians partition the arrays in place instead of copying them
        median_kernel_ns=int(np.median(durs, overwrite_input=True)),
        median_gap_ns=int(np.median(gaps, overwrite_input=True)) if gaps.size else None,
        short_kernel_names=_name_counts(k.column("name"), short, TOP_SHORT_KERNELS),
    )


def _matching(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """Per row: does the name match :data:`DATA_LOADER`? Regex once per distinct value."""
    return _codes.matches(col, DATA_LOADER.pattern, ignore_case=True)


def host_markers(ranges: pa.Table | None, ops: pa.Table | None) -> HostMarkers:
    """Data-loader ranges and ops: their distinct names and the time they cover together."""
    names: set[str] = set()
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    if ranges is not None and ranges.num_rows:
        hit = ranges.filter(_matching(ranges.column("name")))
        names.update(str(n) for n in _codes.as_strings(hit.column("name")))
        starts.append(hit.column("start_ns").to_numpy().astype(np.int64))
        ends.append(hit.column("end_ns").to_numpy().astype(np.int64))
    if ops is not None and ops.num_rows:
        mask = pc.or_(_matching(ops.column("name")), _matching(ops.column("type")))
        hit = ops.filter(mask)
        names.update(str(n) for n in _codes.as_strings(hit.column("name")))
        timed = hit.filter(pc.is_valid(hit.column("start_ns")))
        if timed.num_rows:
            st = timed.column("start_ns").to_numpy().astype(np.int64)
            starts.append(st)
            ends.append(st + pc.fill_null(timed.column("cpu_ns"), 0).to_numpy().astype(np.int64))
    s = np.concatenate(starts) if starts else np.empty(0, np.int64)
    covered = _union(s, np.concatenate(ends))[0] if s.size else None
    return HostMarkers(data_loader_names=tuple(sorted(names)), data_loader_ns=covered)
