"""The communication section: collective (NCCL/RCCL) kernel time, how much of it compute hides,
and on which streams it ran."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from tcreport.analysis import collectives as calls_of
from tcreport.analysis import communication
from tcreport.analysis.communication import Communication as Collectives
from tcreport.analysis.overlap import CommOverlap
from tcreport.model import Run


@dataclass(frozen=True)
class Communication:
    #: collective kernel time and its share of kernel time; ``None`` without kernel rows
    collectives: Collectives | None
    #: collective time per GPU as a share of the aggregated wall time (the step)
    wall_share: float | None
    #: collective time, its overlap with compute and its streams; ``None`` without any
    overlap: CommOverlap | None
    #: the collective calls of the aggregated iterations with their message sizes (a distributed
    #: job's bandwidth is figured from every rank's); ``None`` when the trace recorded none
    calls: pa.Table | None = None
    #: the kind of the collective with the most time (all-reduce, all-to-all, ...): the advice
    #: on overlapping it depends on it; ``None`` without collectives
    kind: calls_of.Family | None = None


def build(
    run: Run, overlap: CommOverlap | None, wall_ns: int | None, op_names: Sequence[str] = ()
) -> Communication:
    """``op_names``: the run's op names, which say an all-to-all that NCCL ran as send/receive
    kernels (:func:`tcreport.analysis.communication.collective_kind`)."""
    c = communication.communication(run.kernels, overlap)
    names = overlap.names if overlap is not None else (c.names if c is not None else ())
    return Communication(
        collectives=c,
        wall_share=c.wall_share(wall_ns) if c is not None else None,
        overlap=overlap,
        calls=calls_of.calls(run.collectives),
        kind=communication.collective_kind(names, op_names),
    )
