"""Where the step time goes: per iteration and per GPU, what the GPU was doing, and why it waited.

A Tensor Core share answers "were the matrix units used"; a user's next question is how much of
the step was matrix work at all. Each (iteration, GPU) span, from the first GPU activity of the
iteration on that GPU to its last, is cut into parts that sum to the span exactly:

* Tensor Core compute, other compute (verdict no), compute of unknown verdict,
* communication (collectives, by kernel name), memory copies/sets,
* idle, split into launch-bound (gaps shorter than :data:`timeline.LAUNCH_GAP_NS`: the CPU issuing
  the next of many small kernels) and host-bound (longer gaps: nothing was queued because the host
  was busy or waiting).

Overlapped time is counted once, by priority (compute before communication before memory), so a
collective hidden under a GEMM costs nothing here; :mod:`tcreport.analysis.overlap` reports how
much was hidden. Host-bound gaps are named by the host range or op that encloses their midpoint on
the launching process (a data loader, ``aten::item`` / a synchronize, an NVTX range) when the
tables carry one; otherwise the cause is "no host range recorded", never a guess.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from tcreport._arrays import exact_sums
from tcreport.analysis import gaps as all_gaps
from tcreport.analysis import host_ranges, stalls, sweep, windows
from tcreport.analysis.activity import IDLE, Activity, Cat
from tcreport.analysis.host_ranges import HostIntervals as HostIntervals
from tcreport.analysis.host_ranges import enclosing as enclosing
from tcreport.analysis.host_ranges import host_intervals as host_intervals
from tcreport.analysis.stalls import SYNC, Stall
from tcreport.analysis.timeline import DATA_LOADER, LAUNCH_GAP_NS

#: Causes kept per (iteration, GPU), longest first.
TOP_CAUSES = 3


@dataclass(frozen=True)
class IdleCause:
    """Host-bound idle time of one (iteration, GPU) under one host range name."""

    kind: str  # "data loading" | "synchronisation" | "host range" | "no host range recorded"
    name: str | None  # the range/op name; None when nothing on the host covered the gap
    idle_ns: int


@dataclass(frozen=True)
class StepRow:
    """One iteration on one GPU; the seven ``*_ns`` parts sum to ``span_ns``."""

    iteration: int
    device_id: int | None
    start_ns: int
    span_ns: int
    tc_compute_ns: int
    other_compute_ns: int
    unknown_compute_ns: int
    communication_ns: int  # collective time not hidden under compute
    memory_ns: int  # copies/sets not hidden under compute or communication
    idle_launch_ns: int
    idle_host_ns: int
    communication_total_ns: int  # union of collective intervals, hidden or not
    communication_overlap_ns: int  # of which compute ran at the same time on this GPU
    host_causes: tuple[IdleCause, ...]  # longest first, at most TOP_CAUSES
    memory_total_ns: int = 0  # union of copy/set intervals, hidden or not
    #: The GPU step time: from this step's first GPU activity to the next step's first on this
    #: GPU, so idle between steps counts in the step before (analysis.windows); None for the
    #: last step on its GPU, whose window has no end. ``span_ns`` is first to last activity, as
    #: HTA measures a step.
    window_ns: int | None = None
    #: The idle time in HTA's vocabulary (analysis.gaps): the closing event was launched after the
    #: GPU ran dry (host wait), was queued and the gap is under 30 µs (kernel wait), or queued and
    #: longer (other). They sum to the idle time; None without launch times.
    idle_queue: tuple[int, int, int] | None = None
    stalls: tuple[Stall, ...] = ()  # idle caused by host syncs and copies (analysis.stalls)
    #: The GPU idle after this step's last activity until the next step's first on this GPU
    #: (``window_ns - span_ns``), named by the host range enclosing its middle (a data loader
    #: between steps); None for the last step or when the next starts at once.
    between: IdleCause | None = None

    @property
    def compute_ns(self) -> int:
        """All compute of the step on this GPU: matrix-unit, other and unknown-verdict kernels."""
        return self.tc_compute_ns + self.other_compute_ns + self.unknown_compute_ns

    @property
    def step_ns(self) -> int:
        """The GPU step time: the window where there is a next step, else the span."""
        return self.window_ns if self.window_ns is not None else self.span_ns

    @property
    def parts(self) -> tuple[int, ...]:
        return (
            self.tc_compute_ns,
            self.other_compute_ns,
            self.unknown_compute_ns,
            self.communication_ns,
            self.memory_ns,
            self.idle_launch_ns,
            self.idle_host_ns,
        )


#: Up to this many possible (iteration, device) keys, the group of each interval is found
#: through a lookup table (bytes per key: 5) instead of by sorting.
_LUT_MAX = 1 << 22
#: Rows per slice where per-row temporaries are built a slice at a time.
_SLICE = 1 << 20


def _group_keys(act: Activity) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Row mask of intervals inside an iteration, their group code, and per group its iteration
    and device (-1: unknown).

    The device is packed as its offset from the lowest one, in int64: any int32 id (a hostile
    ``2**31 - 1``, a negative one) keeps its own group, and the product cannot wrap. When the
    packed keys are few (iterations times GPUs, as in every real trace) a lookup table maps
    them to groups a slice at a time, so no per-interval temporary outlives its slice."""
    inside = act.iteration >= 0
    everything = bool(inside.all())
    it = act.iteration if everything else act.iteration[inside]
    dev = act.device if everything else act.device[inside]
    low = int(dev.min(initial=0))
    width = int(dev.max(initial=0)) - low + 1  # <= 2**32, iterations < 2**31: fits in int64

    def pack(part: slice) -> np.ndarray:
        packed = it[part].astype(np.int64)
        packed *= width
        packed += dev[part]  # in place, in int64
        packed -= low
        return packed

    top = (int(it.max(initial=0)) + 1) * width  # every packed key is below
    if top <= _LUT_MAX:
        parts = [slice(a, a + _SLICE) for a in range(0, it.size, _SLICE)]
        seen = np.zeros(top, bool)
        for part in parts:
            seen[pack(part)] = True
        uniq = np.flatnonzero(seen)  # sorted, as np.unique's
        lut = np.zeros(top, np.int32)
        lut[uniq] = np.arange(uniq.size, dtype=np.int32)
        group = np.empty(it.size, np.int32)
        for part in parts:
            group[part] = lut[pack(part)]
    else:
        packed = pack(slice(None))
        uniq = np.unique(packed)  # few groups: hashed, then each row found by binary search
        group = np.searchsorted(uniq, packed).astype(np.int32)
    g_iter, g_dev = np.divmod(uniq, width)
    return inside, group, g_iter, g_dev + low


def cause_kind(name: str | None) -> str:
    if name is None:
        return "no host range recorded"
    if DATA_LOADER.search(name):
        return "data loading"
    if SYNC.search(name):
        return "synchronisation"
    return "host range"


def _host_causes(
    group: np.ndarray, length: np.ndarray, code: np.ndarray, host: HostIntervals | None
) -> dict[int, tuple[IdleCause, ...]]:
    """Top causes of the host-bound gaps of each group."""
    names = host.names if host is not None else []
    key = group * (len(names) + 1) + (code + 1)
    uk, inv = np.unique(key, return_inverse=True)
    total = exact_sums(inv, length, uk.size)  # float sums of long gaps could outgrow the idle
    out: dict[int, list[IdleCause]] = {}
    for k, ns in sorted(zip(uk.tolist(), total.tolist(), strict=True), key=lambda p: -p[1]):
        grp, c = divmod(k, len(names) + 1)  # one per (group, distinct cause): small
        name = names[c - 1] if c > 0 else None
        lst = out.setdefault(grp, [])
        if len(lst) < TOP_CAUSES:
            lst.append(IdleCause(cause_kind(name), name, int(ns)))
    return {grp: tuple(v) for grp, v in out.items()}


@dataclass(frozen=True)
class HostGaps:
    """Every host-bound gap of the breakdown, with its enclosing host range (for the timeline)."""

    iteration: np.ndarray
    device: np.ndarray  # -1: unknown
    start: np.ndarray  # absolute ns
    length: np.ndarray
    code: np.ndarray  # into names, -1: none
    names: list[str | None]


def breakdown(
    act: Activity | None,
    ranges: pa.Table | None = None,
    ops: pa.Table | None = None,
    whole_run: bool = False,
    memory: pa.Table | None = None,
) -> tuple[StepRow, ...]:
    """:func:`breakdown_with_gaps` without the gaps."""
    return breakdown_with_gaps(act, ranges, ops, whole_run, memory)[0]


def breakdown_with_gaps(
    act: Activity | None,
    ranges: pa.Table | None = None,
    ops: pa.Table | None = None,
    whole_run: bool = False,
    memory: pa.Table | None = None,
) -> tuple[tuple[StepRow, ...], HostGaps | None]:
    """The step breakdown of every (iteration, GPU) with timed activity; () without timestamps.

    ``whole_run``: the run has no iterations table, so its whole span counts as iteration 0
    (otherwise rows outside every iteration are left out, as everywhere else). Each GPU's steps
    are cut into disjoint windows first (analysis.windows). The host ranges and ops are indexed
    only where they contain a host-bound gap; ``memory`` (the table ``act`` was collected from)
    names the copies behind the stalls.
    """
    if act is not None and whole_run:
        act = dataclasses.replace(act, iteration=np.zeros_like(act.iteration))
    if act is None or not (act.iteration >= 0).any():
        return (), None
    inside, group, g_iter, gdev = _group_keys(act)
    every = bool(inside.all())  # then no copies of the activity arrays
    start, end, cat = (a if every else a[inside] for a in (act.start, act.end, act.cat))
    ng = g_iter.size
    pieces, win = windows.windows(group, start, end, cat, g_iter, gdev)
    group, start, end = pieces.group, pieces.start, pieces.end
    sums = sweep.sweep(group, start, end, pieces.cat, ng, LAUNCH_GAP_NS)
    g_start = np.full(ng, np.iinfo(np.int64).max)
    np.minimum.at(g_start, group, start)
    mid = sums.gap_start + sums.gap_length // 2
    host = host_intervals(ranges, ops, np.sort(mid))
    code = host_ranges.codes_at(gdev[sums.gap_group], mid, act, host)
    causes = _host_causes(sums.gap_group, sums.gap_length, code, host)
    gaps = HostGaps(
        iteration=g_iter[sums.gap_group], device=gdev[sums.gap_group],
        start=sums.gap_start, length=sums.gap_length, code=code,
        names=host.names if host is not None else [],
    )  # fmt: skip
    rows = np.flatnonzero(inside) if not every else np.arange(act.start.size)
    if pieces.source is not None:
        rows = rows[pieces.source]
    found = all_gaps.find(start, end, gdev[group])
    queue = (
        all_gaps.queue_split(found, group, act.launch[rows], ng) if act.launch is not None else None
    )
    stall = stalls.stalls(act, rows, group, found, gdev, memory, (ranges, ops))
    between = _between(act, g_start, sums.span, win, gdev, (ranges, ops))
    out = []
    for g in range(ng):  # one per (iteration, GPU): small
        if g_start[g] == np.iinfo(np.int64).max:
            continue  # every event of it ran in another step's window
        p = sums.by_winner[g]
        out.append(
            _row(g, g_iter, gdev, g_start, p, sums, win, causes.get(g, ()), stall.get(g, ()),
                 None if queue is None else
                 (int(queue.host_wait[g]), int(queue.kernel_wait[g]), int(queue.other[g])),
                 between.get(g))
        )  # fmt: skip
    ordered = sorted(out, key=lambda r: (r.iteration, r.device_id is None, r.device_id or 0))
    return tuple(ordered), gaps


def swallowed_note(act: Activity | None, rows: tuple[StepRow, ...]) -> str | None:
    """The report's line on steps that ran GPU work but have no row: every event of theirs ran in
    another step's window (the next step's first event started no later than theirs, so their
    window is empty), which a trace whose events on one stream overlap (edited, or clocks gone
    wrong) produces. A step must never leave the breakdown unsaid."""
    if act is None or not (act.iteration >= 0).any():
        return None
    has = act.iteration >= 0
    its, devs = _active_pairs(act.iteration[has], act.device[has])
    pairs = set(zip(its.tolist(), devs.tolist(), strict=True))  # one per step and GPU: small
    kept = {(r.iteration, -1 if r.device_id is None else r.device_id) for r in rows}
    lost = sorted(pairs - kept)
    if not lost:
        return None
    shown = ", ".join(f"{i} (GPU {'?' if d == -1 else d})" for i, d in lost[:8])
    more = f" and {len(lost) - 8:,} more" if len(lost) > 8 else ""
    return (
        f"{len(lost):,} step(s) with GPU work have no row in the step breakdown: iteration {shown}"
        f"{more}; each one's GPU work started no earlier than the next step's first event, so its "
        "window is empty and its time is counted in a later step's window (events of one step "
        "overlapping the next's on the GPU: a damaged trace, or one stream's events overlapping)"
    )


def _active_pairs(iteration: np.ndarray, device: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (iteration, device) pairs, vectorised (one per step and GPU come out), in
    signed order, as ``np.unique(axis=1)`` gave them. A lexsort of the two int64 columns:
    ``np.unique(axis=1)`` compared the pairs as opaque records, 0.1 s of the V100 x8 trace's
    72,000 GPU activities and 1.2 s of a 2.3 M-event rank of the x1000 export (a packed int64 key
    was as fast but put a negative device after the others)."""
    it, dev = iteration.astype(np.int64), device.astype(np.int64)
    order = np.lexsort((dev, it))
    it, dev = it[order], dev[order]
    first = np.ones(len(it), bool)
    first[1:] = (it[1:] != it[:-1]) | (dev[1:] != dev[:-1])
    return it[first], dev[first]


def _row(
    g: int,
    g_iter: np.ndarray,
    gdev: np.ndarray,
    g_start: np.ndarray,
    p: np.ndarray,
    sums: sweep.SweepSums,
    win: windows.Windows,
    causes: tuple[IdleCause, ...],
    stall: tuple[Stall, ...],
    queue: tuple[int, int, int] | None,
    between: IdleCause | None,
) -> StepRow:
    dev = int(gdev[g])
    return StepRow(
        iteration=int(g_iter[g]),
        device_id=dev if dev != -1 else None,
        start_ns=int(g_start[g]),
        span_ns=int(p.sum()),
        tc_compute_ns=int(p[Cat.TC]),
        other_compute_ns=int(p[Cat.OTHER]),
        unknown_compute_ns=int(p[Cat.UNKNOWN]),
        communication_ns=int(p[Cat.COMM]),
        memory_ns=int(p[Cat.MEMORY]),
        idle_launch_ns=int(p[IDLE]),
        idle_host_ns=int(p[sweep.LONG_IDLE]),
        communication_total_ns=int(sums.comm_total[g]),
        communication_overlap_ns=int(sums.comm_hidden[g]),
        host_causes=causes,
        memory_total_ns=int(sums.memory_total[g]),
        window_ns=int(win.length[g]) if win.next_group[g] >= 0 else None,
        idle_queue=queue,
        stalls=stall,
        between=between,
    )


def _between(
    act: Activity,
    g_start: np.ndarray,
    span: np.ndarray,
    win: windows.Windows,
    gdev: np.ndarray,
    host: tuple[pa.Table | None, pa.Table | None],
) -> dict[int, IdleCause]:
    """Per step with a next one on its GPU, the idle between them and the host range enclosing
    its middle (the named cause, as for the host-bound gaps inside a step)."""
    has = np.flatnonzero((win.next_group >= 0) & (g_start < np.iinfo(np.int64).max))
    length = win.length[has] - span[has]
    has, length = has[length > 0], length[length > 0]
    if has.size == 0:
        return {}
    mid = g_start[has] + span[has] + length // 2
    found = host_intervals(*host, np.sort(mid))
    code = host_ranges.codes_at(gdev[has], mid, act, found)
    names = found.names if found is not None else []
    out = {}
    for g, c, ln in zip(has.tolist(), code.tolist(), length.tolist(), strict=True):  # per step
        name = names[c] if c >= 0 else None
        out[g] = IdleCause(cause_kind(name), name, int(ln))
    return out
