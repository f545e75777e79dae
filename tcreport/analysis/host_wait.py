"""What host work the GPU waited for over the aggregated steps, when the step breakdown names it.

The step breakdown (:mod:`tcreport.analysis.steps`) names each host-bound gap inside a step
(``host_causes``) and the idle between a step's last GPU activity and the next step's first
(``between``) by the host range or op enclosing it. A GPU that idles most of every step because
the host is busy in one op (a batch made on the CPU with ``torch.randn`` each step: ``aten::normal_``)
shows only as "low utilisation" unless someone adds those names up. This module adds them up once,
over the aggregated steps, and decides whether named host work explains the idle, so the finding
(GP001) and any output say the same figure.

The steps measured are the aggregated (iteration, GPU) steps with a GPU step time (a window to the
next step's first activity): the last step's idle after its work is not in the trace, so counting
it would dilute the per-step figure with a step whose wait cannot be seen. A run of one step has
no window; its span is measured instead.

Only host work is a cause: a range or op that launched GPU work itself (a kernel or copy launched
inside one of its intervals: ``## backward ##``, an optimizer step, a GPU op whose first call was
slow to launch) encloses the gap without being what the GPU waited for, and "move it off the
step" would be wrong advice for it; a data loader or a synchronisation is a cause either way.
Without launch times nothing is named.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.analysis.activity import Activity
from tcreport.analysis.steps import StepRow
from tcreport.model import IterationInfo

#: Named host ranges/ops explain the GPU's idle when together they hold at least this share of the
#: measured steps' idle: then the idle has a cause to fix, not just a size.
DOMINANT_SHARE = 0.5
#: A named range/op is listed as a cause only with at least this share of the steps' idle; smaller
#: ones (a 0.3 ms ``zero_grad`` next to an 11 ms wait) are noise beside it.
LISTED_SHARE = 0.1
#: Causes listed at most.
TOP = 3
#: Host ops that make random data: a synthetic batch drawn on the CPU each step (PyTorch's
#: ``aten::normal_`` / ``randn`` / ``uniform_``, TensorFlow's ``RandomStandardNormal``).
RANDOM_DATA = re.compile(
    r"aten::(normal_|randn|rand|rand_like|randn_like|uniform_|randint|randperm|bernoulli_?)\b"
    r"|^Random(StandardNormal|Uniform|UniformInt)|random_(normal|uniform)",
)


#: Kinds of host range that are a cause even when they launched GPU work.
_ANY_LAUNCH = ("data loading", "synchronisation")


@dataclass(frozen=True)
class WaitCause:
    """One host range or op the GPU waited on, over the measured steps."""

    kind: str  # the step breakdown's: "data loading", "synchronisation", "host range"
    name: str
    #: what the host work is, for the fix: "data loading", "synchronisation", "random data"
    #: (random numbers drawn on the host, a synthetic batch), or "host work"
    work: str
    idle_ns: int  # GPU idle under it, summed over the measured steps
    idle_per_step_ns: float
    step_share: float  # of the measured steps' GPU step time
    idle_share: float  # of the measured steps' GPU idle


@dataclass(frozen=True)
class HostWait:
    """The GPU idle of the measured aggregated steps and the named host work behind it."""

    steps: int  # measured (iteration, GPU) steps
    devices: int
    step_ns: int  # their GPU step time (window; span for a run of one step)
    idle_ns: int  # their idle: launch- and host-bound inside the span, and between steps
    causes: tuple[WaitCause, ...]  # named, at least LISTED_SHARE of the idle, most idle first
    #: the listed causes hold at least DOMINANT_SHARE of the idle: the idle is explained
    dominant: bool
    #: of ``idle_ns``: in gaps under the launch gap (launch-bound: GP002's), and in gaps a host
    #: synchronisation or copy opened (:mod:`tcreport.analysis.stalls`: ST001-ST003's)
    launch_ns: int = 0
    stalled_ns: int = 0

    @property
    def named_idle_ns(self) -> int:
        return sum(c.idle_ns for c in self.causes)

    @property
    def claim_ns(self) -> int:
        """The named idle that taking the named host work off the step may claim as its own.

        One gap can be both under a named host op (the midpoint's ``aten::normal_``) and opened by a
        readback the host waited for (a stall): the stall's finding owns it, since where the gap
        opened proves what made the host late, and the launch-bound gaps are GP002's. So the named
        work claims at most the idle left beside both; the stalls' and launch-bound findings claim
        a share of theirs, and together the findings never claim more idle than the steps had."""
        left = self.idle_ns - self.launch_ns - self.stalled_ns
        return max(0, min(self.named_idle_ns, left))

    @property
    def step_per_step_ns(self) -> float:
        return self.step_ns / max(1, self.steps)


def _work(kind: str, name: str) -> str:
    if kind in ("data loading", "synchronisation"):
        return kind
    return "random data" if RANDOM_DATA.search(name) else "host work"


def _intervals(table: pa.Table | None, name: str, end_col: str) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of every row of ``table`` named ``name`` (vectorised: a million calls of one
    op are normal); ``end_col``: ``end_ns`` (ranges) or ``cpu_ns`` (ops, a duration)."""
    none = np.empty(0, np.int64)
    if table is None or table.num_rows == 0:
        return none, none
    t = table.select(["name", "start_ns", end_col])
    t = t.filter(pc.and_(pc.equal(t.column("name"), name), pc.is_valid(t.column("start_ns"))))
    start = np.asarray(t.column("start_ns").to_numpy(), np.int64)
    end = np.asarray(pc.fill_null(t.column(end_col), 0).to_numpy(), np.int64)
    return start, (end if end_col == "end_ns" else start + end)


def _launches_inside(
    name: str, launches: np.ndarray, ranges: pa.Table | None, ops: pa.Table | None
) -> bool:
    """Whether a GPU launch (sorted host times) falls inside one of the name's intervals."""
    for table, end_col in ((ranges, "end_ns"), (ops, "cpu_ns")):
        s, e = _intervals(table, name, end_col)
        if s.size and (np.searchsorted(launches, e) > np.searchsorted(launches, s)).any():
            return True
    return False


def _host_only(
    ranked: list[tuple[tuple[str, str], int]],
    act: Activity | None,
    ranges: pa.Table | None,
    ops: pa.Table | None,
) -> list[tuple[tuple[str, str], int]]:
    """The candidates that launched no GPU work of their own; none without launch times. A data
    loader or a synchronisation is a cause whatever it launched (``aten::item`` launches the
    copy it waits for)."""
    if not ranked or act is None or act.launch is None:
        return []
    launches = np.sort(act.launch[act.launch >= 0])
    if launches.size == 0:
        return []
    return [
        (key, ns)
        for key, ns in ranked  # at most 1 / LISTED_SHARE of them
        if key[0] in _ANY_LAUNCH or not _launches_inside(key[1], launches, ranges, ops)
    ]


def host_wait(
    rows: tuple[StepRow, ...],
    info: IterationInfo,
    act: Activity | None = None,
    ranges: pa.Table | None = None,
    ops: pa.Table | None = None,
) -> HostWait | None:
    """The aggregated steps' named host waits; None without step rows or idle to explain.
    ``act`` (with launch times), ``ranges`` and ``ops``: to leave out ranges and ops that
    launched GPU work themselves."""
    lo = info.start or 0
    hi = info.stop if info.stop is not None else 1 << 31
    kept = [s for s in rows if lo <= s.iteration <= hi]
    windowed = [s for s in kept if s.window_ns is not None]
    steps = windowed or kept
    idle = sum(
        s.idle_launch_ns + s.idle_host_ns + (s.between.idle_ns if s.between else 0) for s in steps
    )
    step_ns = sum(s.step_ns for s in steps)
    if idle <= 0 or step_ns <= 0:
        return None
    per: dict[tuple[str, str], int] = {}
    for s in steps:  # one per (iteration, GPU): small
        for c in (*s.host_causes, *((s.between,) if s.between else ())):
            if c.name is not None:
                per[(c.kind, c.name)] = per.get((c.kind, c.name), 0) + c.idle_ns
    big = [
        p
        for p in sorted(per.items(), key=lambda p: (-p[1], p[0][1]))
        if p[1] >= LISTED_SHARE * idle
    ]
    ranked = _host_only(big, act, ranges, ops)
    causes = tuple(
        WaitCause(kind, name, _work(kind, name), ns, ns / len(steps), ns / step_ns, ns / idle)
        for (kind, name), ns in ranked[:TOP]
    )
    named = sum(c.idle_ns for c in causes)
    devices = len({s.device_id for s in steps})
    return HostWait(
        len(steps),
        devices,
        step_ns,
        idle,
        causes,
        named >= DOMINANT_SHARE * idle,
        launch_ns=sum(s.idle_launch_ns for s in steps),
        stalled_ns=sum(st.idle_ns for s in steps for st in s.stalls),
    )
