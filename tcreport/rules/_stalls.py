"""The stalls of the aggregated iterations (:mod:`tcreport.analysis.stalls`), summed per kind, for
the three step-stall rules (ST001 host synchronisation, ST002 pageable copies, ST003 tiny copies):
one summary, so the three state their idle, their per-step figure and their share the same way."""

from __future__ import annotations

from dataclasses import dataclass

from tcreport.analysis.result import Analysis
from tcreport.analysis.stalls import StallKind
from tcreport.rules import thresholds
from tcreport.rules.base import Evidence, EvidenceKind


@dataclass(frozen=True)
class StallSummary:
    kind: StallKind
    idle_ns: int  # GPU idle it caused, summed over the aggregated (iteration, GPU) steps
    gaps: int
    copies: int  # copies of this kind that ran (pageable, tiny), a gap or not
    bytes: int
    steps: int  # aggregated (iteration, GPU) pairs with a step breakdown
    devices: int
    step_ns: int  # their GPU step time (window; span for the last step)
    ops: tuple[tuple[str | None, int], ...]  # op, idle: most idle first
    iterations: tuple[int, ...]  # with idle from it, most first

    @property
    def share(self) -> float:
        return self.idle_ns / self.step_ns if self.step_ns > 0 else 0.0

    @property
    def idle_per_step_ns(self) -> float:
        return self.idle_ns / max(1, self.steps)

    @property
    def saving_ns(self) -> int:
        """Per GPU: removing the stall lets the host queue ahead again; a floor, stated."""
        return int(self.idle_ns / max(1, self.devices) * thresholds.STALL_RECOVERABLE)

    def evidence(self) -> tuple[Evidence, ...]:
        named = [Evidence(EvidenceKind.OP, op) for op, _ in self.ops if op]
        its = [Evidence(EvidenceKind.ITERATION, str(i)) for i in self.iterations[:10]]
        return tuple(named[:5] + its)


def summary(analysis: Analysis, kind: StallKind) -> StallSummary | None:
    """The kind's stalls over the aggregated iterations; None without a step breakdown, and for a
    run not split into iterations: its one "step" holds the set-up (``model.cuda()`` copying each
    parameter, the first batch), which is no per-step cost."""
    if analysis.iterations.whole_run:
        return None
    info = analysis.iterations.info
    lo = info.start or 0
    hi = info.stop if info.stop is not None else 1 << 31
    steps = [s for s in analysis.steps.rows if lo <= s.iteration <= hi]
    if not steps:
        return None
    idle = gaps = copies = size = 0
    per_op: dict[str | None, int] = {}
    per_iter: dict[int, int] = {}
    for s in steps:  # one per (iteration, GPU): small
        for st in s.stalls:
            if st.kind != kind:
                continue
            idle += st.idle_ns
            gaps += st.gaps
            copies += st.copies
            size += st.bytes
            per_op[st.op] = per_op.get(st.op, 0) + st.idle_ns
            if st.idle_ns:
                per_iter[s.iteration] = per_iter.get(s.iteration, 0) + st.idle_ns
    step_ns = sum(s.window_ns if s.window_ns is not None else s.span_ns for s in steps)
    ops = tuple(sorted(per_op.items(), key=lambda p: (-p[1], p[0] or "")))
    its = tuple(sorted(per_iter, key=lambda i: (-per_iter[i], i)))
    devices = len({s.device_id for s in steps})
    return StallSummary(kind, idle, gaps, copies, size, len(steps), devices, step_ns, ops, its)
