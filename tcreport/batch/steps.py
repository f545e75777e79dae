"""The ``steps`` table of a batch dataset: the step breakdown of every run, per iteration and GPU.

A single trace gives one row per (iteration, GPU) of its step breakdown (``rank`` null); a
distributed job one row per rank and compared iteration, with the collective wait and the
straggler (:mod:`tcreport.batch.job_work`). So ``SELECT rank, avg(wait_ns) FROM steps GROUP BY
rank`` answers "who waits for whom" across an archive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    from tcreport.analysis.result import Analysis

#: One row per iteration and GPU (a job: per rank and compared iteration) of the step breakdown.
STEPS = pa.schema(
    [
        ("run_id", pa.string()),
        ("rank", pa.int32()),  # a job's rank (null for a single trace)
        ("device_id", pa.int32()),
        ("iteration", pa.int32()),  # the run's (a job's: the compared iteration's) number
        ("label", pa.string()),  # "ProfilerStep#551" where the trace numbers its steps
        ("step_ns", pa.int64()),
        ("span_ns", pa.int64()),
        ("compute_ns", pa.int64()),
        ("tc_compute_ns", pa.int64()),
        ("communication_ns", pa.int64()),  # exposed
        ("communication_total_ns", pa.int64()),
        ("memory_ns", pa.int64()),  # exposed
        ("idle_ns", pa.int64()),
        ("wait_ns", pa.int64()),  # a job's collective wait (null for a single trace)
        ("straggler", pa.bool_()),  # a job's straggler of the iteration
    ]
)


def step_rows(run_id: str, a: Analysis, rank: int | None = None) -> pa.Table:
    """``steps``: the step breakdown of every iteration and GPU (one per (iteration, GPU))."""
    s = a.steps
    compute = [r.tc_compute_ns + r.other_compute_ns + r.unknown_compute_ns for r in s]
    return pa.Table.from_pydict(
        {
            "run_id": [run_id] * len(s),
            "rank": [rank] * len(s),
            "device_id": [r.device_id for r in s],
            "iteration": [r.iteration for r in s],
            "label": [None] * len(s),
            "step_ns": [r.window_ns if r.window_ns is not None else r.span_ns for r in s],
            "span_ns": [r.span_ns for r in s],
            "compute_ns": compute,
            "tc_compute_ns": [r.tc_compute_ns for r in s],
            "communication_ns": [r.communication_ns for r in s],
            "communication_total_ns": [r.communication_total_ns for r in s],
            "memory_ns": [r.memory_ns for r in s],
            "idle_ns": [r.idle_launch_ns + r.idle_host_ns for r in s],
            "wait_ns": [None] * len(s),
            "straggler": [None] * len(s),
        },
        schema=STEPS,
    )
