"""A run's rows of a batch dataset, as columns: its figures in ``runs``, its ``ops``, ``kernels``,
``findings`` and ``steps``. One place for what a single trace's run (:mod:`tcreport.batch.work`)
and each rank of a distributed job (:mod:`tcreport.batch.job_work`) write, so the two cannot
drift apart.

``steps`` holds the step breakdown of every run: a single trace one row per (iteration, GPU)
(``rank`` null), a job one row per rank and compared iteration with the collective wait and the
straggler. So ``SELECT rank, avg(wait_ns) FROM steps GROUP BY rank`` answers "who waits for whom"
across an archive.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from tcreport.analysis.derived import step_idle_ns

if TYPE_CHECKING:
    from tcreport.analysis.result import Analysis
    from tcreport.report import Report
    from tcreport.rules.base import Finding

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
    s = a.steps.rows
    return pa.Table.from_pydict(
        {
            "run_id": [run_id] * len(s),
            "rank": [rank] * len(s),
            "device_id": [r.device_id for r in s],
            "iteration": [r.iteration for r in s],
            "label": [None] * len(s),
            "step_ns": [r.step_ns for r in s],
            "span_ns": [r.span_ns for r in s],
            "compute_ns": [r.compute_ns for r in s],
            "tc_compute_ns": [r.tc_compute_ns for r in s],
            "communication_ns": [r.communication_ns for r in s],
            "communication_total_ns": [r.communication_total_ns for r in s],
            "memory_ns": [r.memory_ns for r in s],
            "idle_ns": [step_idle_ns(r) for r in s],
            "wait_ns": [None] * len(s),
            "straggler": [None] * len(s),
        },
        schema=STEPS,
    )


def run_figures(view: Report) -> dict[str, Any]:
    """The ``runs`` columns a run's analysis fills: what it is, its figures, its top finding."""
    a = view.analysis
    names = sorted({g.name for g in a.meta.gpus if g.name})
    top = view.findings[0] if view.findings else None
    first = view.fix_first
    return {
        "format": a.meta.format.value,
        "gpu_model": ", ".join(names) if names else None,
        "gpu_count": len(a.meta.gpus) or None,
        "framework": a.meta.framework,
        "profiler": a.meta.profiler,
        "profiler_version": a.meta.profiler_version,
        "iterations_aggregated": a.iterations.info.aggregated,
        "wall_ns": a.time.wall_ns,
        "gpu_kernel_ns": a.time.gpu_kernel_ns,
        "tc_kernel_ns": a.time.tc_kernel_ns,
        "memory_ns": a.time.memory_ns,
        "tc_share": a.verdict.tc_share,
        "classified_share": a.verdict.classified_share,
        "eligible_op_count": a.verdict.eligible_op_count,
        "using_op_count": a.verdict.using_op_count,
        "eligible_not_using_op_count": a.verdict.eligible_not_using_op_count,
        "eligible_gpu_ns": a.verdict.eligible_gpu_ns,
        "eligible_not_using_gpu_ns": a.verdict.eligible_not_using_gpu_ns,
        "eligible_not_using_per_iteration_ns": (
            None if (per := a.verdict.eligible_not_using_per_iteration_ns) is None else round(per)
        ),  # whole ns, as the summary JSON's
        "eligible_not_tc_share": a.verdict.eligible_not_tc_share,
        "finding_count": len(view.findings),
        "top_finding_id": top.id if top else None,
        "top_finding_title": top.title if top else None,
        "fix_first_id": first.id if first else None,
        "fix_first_title": first.title if first else None,
        # the verdict as its section decided it (sentence, tone, the run's matrix-unit word)
        "verdict": "".join(a.verdict.sentence),
        "verdict_tone": a.verdict.tone.value,
        "matrix_unit": a.verdict.words.unit,
        # the analysis' broken invariants (null when all hold): figures not to trust
        "invariant_violations": "; ".join(str(v) for v in a.violations) or None,
    }


def _distinct_rows(
    run_id: str, rank: int | None, rows: Sequence[Any], fields: tuple[str, ...]
) -> dict[str, list[Any]]:
    """One row per analysed row (distinct ops or kernels, already aggregated: few), its run and
    rank first, then ``fields`` as the analysis named them."""
    n = len(rows)
    return {
        "run_id": [run_id] * n,
        "rank": [rank] * n,
        **{f: [getattr(r, f) for r in rows] for f in fields},
    }


def op_columns(run_id: str, a: Analysis, rank: int | None = None) -> dict[str, list[Any]]:
    """``ops``: one row per distinct op (already aggregated by the analysis), not per call."""
    fields = ("name", "type", "dtype", "calls", "gpu_ns", "cpu_ns", "share", "tc_eligible")
    return _distinct_rows(run_id, rank, a.breakdown.ops, (*fields, "uses_tc"))


def kernel_columns(run_id: str, a: Analysis, rank: int | None = None) -> dict[str, list[Any]]:
    """``kernels``: one row per distinct kernel and verdict, not per launch."""
    fields = ("name", "calls", "gpu_ns", "share", "uses_tc", "tc_rule", "profiler_uses_tc")
    return _distinct_rows(run_id, rank, a.breakdown.kernels, fields)


def finding_columns(run_id: str, fs: Sequence[Finding]) -> dict[str, list[Any]]:
    """``findings``, in their order (``rank`` here is that order, 1 first: the column predates
    distributed jobs and keeps its meaning)."""
    return {
        "run_id": [run_id] * len(fs),
        "rank": list(range(1, len(fs) + 1)),
        "id": [f.id for f in fs],
        "severity": [f.severity.value for f in fs],
        "title": [f.title for f in fs],
        "detail": [f.detail for f in fs],
        "fix": [f.fix for f in fs],
        "estimated_saving_ns": [f.estimated_saving_ns for f in fs],
        "saving_share": [f.saving_share for f in fs],
        "source": [f.source for f in fs],
    }
