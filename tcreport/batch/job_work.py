"""The batch work of a distributed job: one run, its own ``runs`` row and a row per rank.

:func:`tcreport.batch.work.process` hands a task whose ``members`` are a job's rank traces here.
The job is analysed as ``tcreport report`` does (:func:`tcreport.job_report.build`: ranks one at a
time, only their figures kept), and each rank's dataset rows (its ``runs`` row, its ``ops`` and
``kernels`` with their ``rank``) are made while that rank's analysis is alive, by
:func:`rank_rows`. On a Dask worker (``batch --executor dask``) the ranks fan out over the cluster
(``worker_client``), so a 64-rank job is not one worker's hours; elsewhere they run one at a time
in the worker that took the job, which keeps its memory at one rank's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from tcreport import __version__, job_report
from tcreport.batch import rows
from tcreport.batch.rows import STEPS
from tcreport.errors import InputError
from tcreport.ingest import job as jobs
from tcreport.job_report import JobReport, RankResult, RankSpec
from tcreport.model import SourceFormat
from tcreport.report import Report


@dataclass(frozen=True)
class RankRows:
    """One rank's dataset rows, as plain columns (they travel back from a worker)."""

    runs: dict[str, Any]
    ops: dict[str, list[Any]]
    kernels: dict[str, list[Any]]


def rank_rows(rank: int, view: Report) -> RankRows:
    """Run by :func:`tcreport.job_report.analyse_rank` while the rank's analysis is alive; the
    ``run_id`` column is filled when the job's tables are put together."""
    a = view.analysis
    return RankRows(
        rows.run_figures(view), rows.op_columns("", a, rank), rows.kernel_columns("", a, rank)
    )


def dask_mapper() -> job_report.Mapper | None:
    """Where this runs as a Dask task, a mapper that sends the ranks to the cluster (the task
    secedes while it waits, so it holds no worker thread); None elsewhere."""
    try:
        from distributed import get_worker, worker_client

        get_worker()
    except (ImportError, ValueError):
        return None

    def mapped(
        fn: Callable[[RankSpec], RankResult], specs: Sequence[RankSpec]
    ) -> Iterator[RankResult]:
        with worker_client() as client:
            futures = client.map(fn, list(specs), pure=False)
            for fut in futures:  # in rank order; each result is small
                result: RankResult = fut.result()
                yield result

    return mapped


@dataclass(frozen=True)
class JobDone:
    tables: dict[str, pa.Table]
    html: str
    gpu: str | None
    date: datetime
    rows: int  # rows of its runs table


def _table(schema: pa.Schema, columns: Mapping[str, Sequence[Any]], n: int) -> pa.Table:
    return pa.table({f.name: pa.array(columns.get(f.name, [None] * n), f.type) for f in schema})


def _runs(
    task: Any, jr: JobReport, ranked: list[RankRows], schema: pa.Schema, date: tuple[datetime, str]
) -> pa.Table:
    """The job's row (rank null) and one per rank."""
    sec = jr.section
    gpus = sorted({str(r.runs["gpu_model"]) for r in ranked if r.runs["gpu_model"]})
    top = jr.findings[0] if jr.findings else None
    first = jr.detail.fix_first

    def summed(key: str) -> int | None:
        values = [r.runs[key] for r in ranked if r.runs[key] is not None]
        return sum(values) if values else None

    job_row = {
        "rank": None,
        "format": ranked[0].runs["format"],
        "gpu_model": ", ".join(gpus) if gpus else None,
        "gpu_count": summed("gpu_count"),
        "framework": ranked[0].runs["framework"],
        "profiler": ranked[0].runs["profiler"],
        "profiler_version": ranked[0].runs["profiler_version"],
        "iterations_aggregated": len(sec.iterations) or None,
        "wall_ns": max(
            (r.runs["wall_ns"] for r in ranked if r.runs["wall_ns"] is not None), default=None
        ),
        "gpu_kernel_ns": summed("gpu_kernel_ns"),
        "tc_kernel_ns": summed("tc_kernel_ns"),
        "memory_ns": summed("memory_ns"),
        "tc_share": sec.verdict.tc_share,
        "eligible_gpu_ns": summed("eligible_gpu_ns"),
        "eligible_not_using_gpu_ns": summed("eligible_not_using_gpu_ns"),
        "eligible_not_using_per_iteration_ns": summed("eligible_not_using_per_iteration_ns"),
        "finding_count": len(jr.findings),
        "top_finding_id": top.id if top else None,
        "top_finding_title": top.title if top else None,
        # the job page's "Fix first" line: the one of the rank it shows in full
        "fix_first_id": first.id if first else None,
        "fix_first_title": first.title if first else None,
        "verdict": sec.verdict.text,
        "verdict_tone": sec.verdict.tone.value,
        "matrix_unit": sec.matrix_unit,
        "invariant_violations": "; ".join(str(v) for v in sec.violations) or None,
    }
    miss, kt = job_row["eligible_not_using_gpu_ns"], job_row["gpu_kernel_ns"]
    job_row["eligible_not_tc_share"] = (
        miss / kt if isinstance(miss, int) and isinstance(kt, int) and kt else None
    )
    per_rank = [
        {"rank": rank, **r.runs} for rank, r in zip(sec.identity.ranks, ranked, strict=True)
    ]
    common = {
        "run_id": task.run_id,
        "status": "ok",
        "source": task.source,
        "content_hash": task.content_hash,
        "date": date[0],
        "date_source": date[1],
        "tcreport_version": __version__,
        "report": f"reports/{task.report_name or task.run_id}.html",
        "ranks": len(sec.identity.ranks),
        "world_size": sec.identity.world_size,
    }
    all_rows = [{**common, **row} for row in (job_row, *per_rank)]
    return _table(
        schema, {k: [row.get(k) for row in all_rows] for k in schema.names}, len(all_rows)
    )


def _steps(run_id: str, jr: JobReport) -> pa.Table:
    cells = jr.section.cells
    return pa.table(
        {
            "run_id": [run_id] * len(cells),
            "rank": [c.rank for c in cells],
            "device_id": [None] * len(cells),
            "iteration": [c.iteration for c in cells],
            "label": [c.label for c in cells],
            "step_ns": [c.step.step_ns for c in cells],
            "span_ns": [c.step.span_ns for c in cells],
            "compute_ns": [c.step.compute_ns for c in cells],
            "tc_compute_ns": [c.step.tc_compute_ns for c in cells],
            "communication_ns": [c.step.communication_ns for c in cells],
            "communication_total_ns": [c.step.communication_total_ns for c in cells],
            "memory_ns": [c.step.memory_ns for c in cells],
            "idle_ns": [c.step.idle_ns for c in cells],
            "wait_ns": [c.wait_ns for c in cells],
            "straggler": [c.straggler for c in cells],
        },
        schema=STEPS,
    )


def _detail(run_id: str, schema: pa.Schema, parts: Iterable[dict[str, list[Any]]]) -> pa.Table:
    tables = [
        _table(schema, {**p, "run_id": [run_id] * len(p["rank"])}, len(p["rank"])) for p in parts
    ]
    return pa.concat_tables(tables) if tables else schema.empty_table()


def process_job(task: Any, schemas: Mapping[str, pa.Schema], mtime: datetime) -> JobDone:
    """Analyse the job of ``task`` (a :class:`tcreport.batch.work.Task` with members) into its
    dataset tables and report; a :class:`~tcreport.errors.TcreportError` for bad input."""
    from tcreport.render.html import render as render_html

    folder = Path(task.path)
    fmt = SourceFormat(task.format)
    if task.members:
        found, rest = jobs.group(folder, [(fmt, Path(m)) for m in task.members])
    else:  # one export of a multi-process launch
        launch = jobs.launch_job(folder)
        found, rest = ([launch] if launch is not None else []), []
    if len(found) != 1 or rest:
        raise InputError("its rank traces no longer form one job", folder)
    jr = job_report.build(
        found[0], source_path=task.source, with_timeline=True, extra=rank_rows, mapper=dask_mapper()
    )
    ranked: list[RankRows] = list(jr.extras)
    meta = jr.detail.analysis.meta
    date = (
        (
            datetime.fromisoformat(meta.started_at.replace("Z", "+00:00")),
            meta.started_at_source or "trace",
        )
        if meta.started_at
        else (mtime, "file mtime (the trace records no start time)")
    )
    runs = _runs(task, jr, ranked, schemas["runs"], date)
    fs = jr.findings
    findings = _table(schemas["findings"], rows.finding_columns(task.run_id, fs), len(fs))
    tables = {
        "runs": runs,
        "ops": _detail(task.run_id, schemas["ops"], (r.ops for r in ranked)),
        "kernels": _detail(task.run_id, schemas["kernels"], (r.kernels for r in ranked)),
        "findings": findings,
        "steps": _steps(task.run_id, jr),
    }
    gpu = runs.column("gpu_model")[0].as_py()
    return JobDone(tables, render_html(jr.detail, job=jr), gpu, date[0], runs.num_rows)
