"""The per-trace work of ``tcreport batch``: one input in, its dataset rows and report out.

This is the function the process pool and the Dask cluster run, so it takes and returns small
picklable values (a :class:`Task`, an :class:`Outcome` holding Arrow tables and the report text) and
writes nothing: the coordinating process owns the output folder and its atomic renames, which keeps
a worker on another machine from needing write access to it. Any failure of one run (a bad trace,
a reader bug, a figure too large for its column) becomes a failed outcome, never an exception, so
one corrupt file cannot stop an archive of thousands; the outcome records the tcreport version and
any missing extra, the environment that failed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

from tcreport import __version__, ingest, report
from tcreport.batch import rows
from tcreport.batch.rows import STEPS
from tcreport.errors import MissingExtraError, TcreportError
from tcreport.model import SourceFormat
from tcreport.report import Report

RUNS = pa.schema(
    [
        ("run_id", pa.string()),
        # A distributed job is one run: its own row (rank null) and one row per rank present
        ("rank", pa.int32()),
        ("status", pa.string()),  # "ok" | "error" | "retry" (failed for a reason outside the trace)
        ("error", pa.string()),
        ("source", pa.string()),  # path relative to the batch folder
        ("format", pa.string()),
        ("content_hash", pa.string()),
        ("gpu_model", pa.string()),
        ("gpu_count", pa.int32()),
        ("framework", pa.string()),
        ("profiler", pa.string()),
        ("profiler_version", pa.string()),
        ("date", pa.timestamp("s", tz="UTC")),
        ("date_source", pa.string()),
        ("tcreport_version", pa.string()),  # the tcreport that made the row (or failed on it)
        (
            "missing_extra",
            pa.string(),
        ),  # a failure for want of an extra ("xplane"): install, re-run
        # the analysis' broken invariants, "; "-joined (null when all hold): figures not to trust
        ("invariant_violations", pa.string()),
        ("iterations_aggregated", pa.int64()),
        ("wall_ns", pa.int64()),
        ("gpu_kernel_ns", pa.int64()),
        ("tc_kernel_ns", pa.int64()),
        ("memory_ns", pa.int64()),
        ("tc_share", pa.float64()),
        ("classified_share", pa.float64()),
        ("eligible_op_count", pa.int64()),
        ("using_op_count", pa.int64()),
        ("eligible_not_using_op_count", pa.int64()),
        ("eligible_gpu_ns", pa.int64()),
        ("eligible_not_using_gpu_ns", pa.int64()),
        # the report card's figure: per aggregated iteration (the analysis', rounded as the
        # summary JSON's eligible_not_using_per_iteration_ns); a job's, its ranks' summed
        ("eligible_not_using_per_iteration_ns", pa.int64()),
        ("eligible_not_tc_share", pa.float64()),
        ("finding_count", pa.int64()),
        ("top_finding_id", pa.string()),  # the first finding as ranked (findings.rank 1)
        ("top_finding_title", pa.string()),
        # the finding the report says to fix first (rules.fix_first; null when none qualifies)
        ("fix_first_id", pa.string()),
        ("fix_first_title", pa.string()),
        ("report", pa.string()),  # relative link to the run's HTML report
        ("seconds", pa.float64()),
        # the report's one-line verdict, its tone (good/neutral/bad/unknown) and the run's name
        # for its matrix units ("Tensor Cores", "AMD Matrix Cores"), as the verdict section
        # decided them: the index shows them, it does not decide them again
        ("verdict", pa.string()),
        ("verdict_tone", pa.string()),
        ("matrix_unit", pa.string()),
        ("ranks", pa.int32()),  # a job's ranks present (null: not a job)
        ("world_size", pa.int32()),  # a job's world size, where its traces record it
    ]
)
OPS = pa.schema(
    [
        ("run_id", pa.string()),
        ("rank", pa.int32()),  # a job's rank (null for a single trace)
        ("name", pa.string()),
        ("type", pa.string()),
        ("dtype", pa.string()),
        ("calls", pa.int64()),
        ("gpu_ns", pa.int64()),
        ("cpu_ns", pa.int64()),
        ("share", pa.float64()),
        ("tc_eligible", pa.bool_()),
        ("uses_tc", pa.bool_()),
    ]
)
KERNELS = pa.schema(
    [
        ("run_id", pa.string()),
        ("rank", pa.int32()),  # a job's rank (null for a single trace)
        ("name", pa.string()),
        ("calls", pa.int64()),
        ("gpu_ns", pa.int64()),
        ("share", pa.float64()),
        ("uses_tc", pa.bool_()),
        ("tc_rule", pa.string()),
        ("profiler_uses_tc", pa.bool_()),
    ]
)
FINDINGS = pa.schema(
    [
        ("run_id", pa.string()),
        ("rank", pa.int32()),
        ("id", pa.string()),
        ("severity", pa.string()),
        ("title", pa.string()),
        ("detail", pa.string()),
        ("fix", pa.string()),
        ("estimated_saving_ns", pa.int64()),
        ("saving_share", pa.float64()),
        ("source", pa.string()),
    ]
)
TABLES: dict[str, pa.Schema] = {
    "runs": RUNS,
    "ops": OPS,
    "kernels": KERNELS,
    "findings": FINDINGS,
    "steps": STEPS,
}
#: Columns added to a table after datasets were written without them: a run archived before
#: reads them as null (runner.existing_runs), and an OUT without them is still tcreport's.
ADDED_LATER: dict[str, frozenset[str]] = {
    "runs": frozenset(
        {
            "fix_first_id",
            "fix_first_title",
            "missing_extra",
            "verdict",
            "verdict_tone",
            "matrix_unit",
            "rank",
            "ranks",
            "world_size",
            "invariant_violations",
            "eligible_not_using_per_iteration_ns",
        }
    ),
    "ops": frozenset({"rank"}),
    "kernels": frozenset({"rank"}),
}


def is_legacy_out(out: Path) -> bool:
    """Whether unmarked ``out`` is a batch OUT from before the marker, judged by its content.

    Every file under ``out/dataset`` must be ``TABLE/gpu=*/month=*/*.parquet`` for one of
    :data:`TABLES`, with at least one ``runs`` file, and each file's schema must carry its table's
    columns: a user's folder that merely has a ``dataset/`` is never taken for one.
    """
    import pyarrow.parquet as pq

    root = out / "dataset"
    if root.is_symlink() or not root.is_dir():
        return False
    files = [p for p in root.rglob("*") if p.is_symlink() or not p.is_dir()]
    if not files or not any(p.parts[-4] == "runs" for p in files if len(p.parts) >= 4):
        return False
    for path in files:
        parts = path.relative_to(root).parts
        ok = (
            len(parts) == 4
            and parts[0] in TABLES
            and parts[1].startswith("gpu=")
            and parts[2].startswith("month=")
            and parts[3].endswith(".parquet")
            and not path.is_symlink()
            and path.is_file()
        )
        try:
            needed = set(TABLES[parts[0]].names) - ADDED_LATER.get(parts[0], frozenset())
            if not ok or not needed <= set(pq.read_schema(path).names):
                return False
        except (OSError, pa.ArrowException):
            return False
    return True


@dataclass(frozen=True)
class Task:
    path: str  # absolute, as the worker opens it
    source: str  # relative to the batch folder, as the index shows it
    run_id: str
    content_hash: str
    mtime: float  # seconds since the epoch: the run's date when the trace gives none
    format: str | None  # detected by the coordinator; None when detection failed
    error: str | None = None  # detection error: the worker only records it
    report_name: str | None = None  # reports/<name>.html, after the trace (run_id when None)
    members: tuple[str, ...] = ()  # a distributed job's rank traces (path: their folder)


@dataclass(frozen=True)
class Outcome:
    run_id: str
    source: str
    ok: bool
    error: str | None
    gpu_model: str | None
    date: datetime
    tables: dict[str, pa.Table]  # keyed like TABLES; every table has the run_id column
    report_html: str | None
    seconds: float


def _rows(schema: pa.Schema, columns: Mapping[str, Sequence[object]]) -> pa.Table:
    return pa.table({f.name: pa.array(columns[f.name], type=f.type) for f in schema})


#: ``runs.date_source`` when the trace records no start time of its own.
MTIME = "file mtime (the trace records no start time)"


def _run_row(
    task: Task, date: datetime, date_source: str = MTIME, **values: object
) -> dict[str, list[object]]:
    row: dict[str, object] = dict.fromkeys(RUNS.names)
    row.update(
        run_id=task.run_id,
        source=task.source,
        content_hash=task.content_hash,
        format=task.format,
        date=date,
        date_source=date_source,
        tcreport_version=__version__,
    )
    row.update(values)
    return {k: [v] for k, v in row.items()}


def _date(started_at: str | None, source: str | None, mtime: datetime) -> tuple[datetime, str]:
    """The run's date: when the trace says it was recorded, else the file's mtime, labelled."""
    if started_at is None:
        return mtime, MTIME
    return datetime.fromisoformat(started_at.replace("Z", "+00:00")), source or "trace"


def failed(task: Task, error: str) -> Outcome:
    """A run whose worker could not hand its outcome back (an exception the pool re-raised)."""
    date = datetime.fromtimestamp(int(task.mtime), tz=UTC)
    return _failed(task, date, error, time.perf_counter())


def retryable(task: Task, error: str) -> Outcome:
    """A run that failed for a reason outside the trace (its worker died, the file was unreadable):
    recorded with ``status = 'retry'`` so the index lists it and the next batch tries it again."""
    date = datetime.fromtimestamp(int(task.mtime), tz=UTC)
    return _failed(task, date, error, time.perf_counter(), status="retry")


def _failed(
    task: Task,
    date: datetime,
    error: str,
    started: float,
    status: str = "error",
    missing_extra: str | None = None,
) -> Outcome:
    row = _run_row(
        task,
        date,
        status=status,
        error=error,
        missing_extra=missing_extra,
        seconds=time.perf_counter() - started,
    )
    runs = _rows(RUNS, row)
    empty = {name: schema.empty_table() for name, schema in TABLES.items() if name != "runs"}
    return Outcome(
        task.run_id, task.source, False, error, None, date, {"runs": runs, **empty}, None, 0.0
    )


#: Columns a failed run keeps from the outcome it replaces: what it is, not what it measured.
_IDENTITY = ("run_id", "source", "format", "content_hash", "date", "date_source")


def failed_like(o: Outcome, error: str) -> Outcome:
    """``o`` recorded as failed with ``error`` (its tables could not be written), identity kept."""
    row = o.tables["runs"].slice(0, 1).to_pylist()[0]  # one row
    keep = {k: [row[k]] for k in _IDENTITY}
    values = {"status": ["error"], "error": [error], "tcreport_version": [__version__]}
    runs = _rows(RUNS, {**dict.fromkeys(RUNS.names, [None]), **keep, **values})
    empty = {name: schema.empty_table() for name, schema in TABLES.items() if name != "runs"}
    return Outcome(
        o.run_id, o.source, False, error, None, o.date, {"runs": runs, **empty}, None, 0.0
    )


def process(task: Task) -> Outcome:
    """Load, analyse, render and tabulate one input; any failure is returned, not raised."""
    started = time.perf_counter()
    # the file's date until the trace says when it was recorded (a later failure keeps that)
    when = [datetime.fromtimestamp(int(task.mtime), tz=UTC)]
    if task.error is not None or task.format is None:
        return _failed(task, when[0], task.error or "format not detected", started)
    try:
        return _process(task, started, when)
    except MissingExtraError as exc:
        return _failed(task, when[0], exc.reason, started, missing_extra=exc.extra)
    except TcreportError as exc:
        return _failed(task, when[0], exc.reason, started)
    except Exception as exc:  # a bug on one trace must not stop the batch: it is recorded
        text = " ".join(str(exc).split())[:300]
        return _failed(task, when[0], f"internal error: {type(exc).__name__}: {text}", started)


def _process(task: Task, started: float, when: list[datetime]) -> Outcome:
    """The work itself, every step of it inside :func:`process`'s failure handling: building
    the dataset rows can fail too (an int64 column given a value past it)."""
    # jinja2 only where a report is rendered, not for the dataset's schemas (TABLES)
    from tcreport.render.html import render as render_html

    if task.members or _is_launch(task):  # a distributed job: one run, a row per rank (job_work)
        return _process_job(task, started, when)
    run = ingest.load(Path(task.path))
    date, date_source = _date(run.meta.started_at, run.meta.started_at_source, when[0])
    when[0] = date
    view = report.build(run, source_path=task.source, with_timeline=True)
    html = render_html(view)
    names = sorted({g.name for g in view.analysis.meta.gpus if g.name})
    gpu = ", ".join(names) if names else None
    seconds = time.perf_counter() - started
    tables = {
        "runs": _runs_table(task, view, date, date_source, seconds),
        **_detail_tables(task.run_id, view),
    }
    return Outcome(task.run_id, task.source, True, None, gpu, date, tables, html, seconds)


def _is_launch(task: Task) -> bool:
    """An nsys export of a multi-process launch is a job by itself (ingest.job.launch_job)."""
    return task.format == SourceFormat.NSYS_SQLITE.value and (
        ingest.find_job(Path(task.path)) is not None
    )


def _process_job(task: Task, started: float, when: list[datetime]) -> Outcome:
    """A distributed job's run: its rows and its job page (:mod:`tcreport.batch.job_work`)."""
    from tcreport.batch import job_work

    done = job_work.process_job(task, TABLES, when[0])
    when[0] = done.date
    seconds = time.perf_counter() - started
    done.tables["runs"] = done.tables["runs"].set_column(
        RUNS.get_field_index("seconds"), "seconds", pa.array([seconds] * done.rows, pa.float64())
    )
    return Outcome(
        task.run_id, task.source, True, None, done.gpu, done.date, done.tables, done.html, seconds
    )


def _runs_table(
    task: Task, view: Report, date: datetime, date_source: str, seconds: float
) -> pa.Table:
    """The run's one row in ``runs``: what it is, its headline figures and its top finding."""
    return _rows(
        RUNS,
        _run_row(
            task,
            date,
            date_source,
            status="ok",
            **rows.run_figures(view),
            report=f"reports/{task.report_name or task.run_id}.html",
            seconds=seconds,
        ),
    )


def _detail_tables(run_id: str, view: Report) -> dict[str, pa.Table]:
    """``ops``, ``kernels``, ``findings`` and ``steps`` rows (:mod:`tcreport.batch.rows`)."""
    a = view.analysis
    return {
        "ops": _rows(OPS, rows.op_columns(run_id, a)),
        "kernels": _rows(KERNELS, rows.kernel_columns(run_id, a)),
        "findings": _rows(FINDINGS, rows.finding_columns(run_id, view.findings)),
        "steps": rows.step_rows(run_id, a),
    }
