"""The host section: a run without GPU kernels (a laptop capture) has no matrix-unit verdict, but
its host time per op and op type still says where the step went
(:mod:`tcreport.analysis.host_time`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tcreport.analysis import host_time
from tcreport.analysis.figures import OpRow, TimeFigures
from tcreport.analysis.host_time import HostRow, HostTime
from tcreport.model import Run


@dataclass(frozen=True)
class Host:
    cpu_only: bool  # no GPU kernel time anywhere, but ops with host time
    ops: tuple[HostRow, ...]  # () unless cpu_only
    op_types: tuple[HostRow, ...]
    total: HostTime | None  # host time in ops, nested ops counted once


def build(run: Run, time: TimeFigures, ops: Sequence[OpRow]) -> Host:
    if not host_time.is_cpu_only(run.meta, time, ops):
        return Host(False, (), (), None)
    by_op, by_type = host_time.host_rows(ops)
    return Host(True, by_op, by_type, host_time.host_time(run.ops, ops))
