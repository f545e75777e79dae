"""The facade the CLI and Python users call: load -> analyze -> render.

>>> from tcreport import api
>>> run = api.load("dlprof_results/")
>>> view = api.analyze(run, source_path="dlprof_results/")
>>> html = api.render_html(view)

Output files are written atomically (:func:`write_text_atomic`: temporary name, then rename) so a
failure never leaves a half-written report behind.

The imports inside the functions below defer pyarrow, jinja2, pandas, DuckDB and the readers to
the first call that needs them: ``tcreport --help`` and ``import tcreport`` import this module
and must stay light (tests/cli/test_cli.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tcreport import __version__
from tcreport._fs import write_atomic, write_text_atomic  # noqa: F401  (write_atomic: re-exported)
from tcreport.api_files import (
    check_ingest_output,
    export_perfetto,
    guard_output,
    guard_sidecars,
    ingest,
)
from tcreport.api_jobs import (
    JOB_FORMS,
    analyze_job,
    check_job,
    diff_jobs,
    find_job,
    print_job_summary,
    render_job_diff,
    render_job_html,
    render_job_json,
    render_job_markdown,
    same_rank_in_full,
)
from tcreport.errors import OptionError, UsageError  # noqa: F401  (OptionError: re-exported)

if TYPE_CHECKING:
    from collections.abc import Callable

    import pandas as pd
    import pyarrow as pa

    from tcreport.analysis.slicing import Slice as Slice
    from tcreport.batch.runner import BatchResult
    from tcreport.batch.work import Outcome as Outcome  # the batch's per-run callback argument
    from tcreport.compare.gates import CheckResult as CheckResult
    from tcreport.compare.model import Diff
    from tcreport.ingest.job import Job as Job
    from tcreport.job_report import JobReport as JobReport
    from tcreport.model import Run as Run
    from tcreport.model import SourceFormat
    from tcreport.notebook import AnalysedRun
    from tcreport.notebook_job import AnalysedJob
    from tcreport.report import Report as Report

__all__ = [
    "Slice",
    "analyze",
    "analyze_job",
    "check_job",
    "diff_jobs",
    "JOB_FORMS",
    "find_job",
    "print_job_summary",
    "render_job_diff",
    "render_job_html",
    "render_job_json",
    "render_job_markdown",
    "same_rank_in_full",
    "attach_counters",
    "batch",
    "check",
    "check_ingest_output",
    "diff",
    "export_perfetto",
    "guard_output",
    "guard_sidecars",
    "ingest",
    "load",
    "open",
    "print_rows",
    "print_summary",
    "query",
    "query_csv",
    "query_json",
    "read_dataset",
    "render_diff",
    "render_html",
    "render_json",
    "render_markdown",
    "write_text_atomic",
]


def __getattr__(name: str) -> object:
    """``api.Slice`` imported on first use: the model's dataclasses are a fifth of what
    ``tcreport --help`` would import (the CLI builds a Slice only when a command runs)."""
    if name == "Slice":
        from tcreport.analysis.slicing import Slice

        return Slice
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load(path: str | Path, fmt: SourceFormat | None = None) -> Run:
    """Read any supported trace (or a ``tcreport ingest`` folder) into canonical tables."""
    from tcreport import ingest

    return ingest.load(Path(path), fmt)


def attach_counters(run: Run, ncu_path: str | Path) -> Run:
    """Give ``run``'s kernels the Tensor Core verdicts Nsight Compute measured (``ncu --csv``;
    ``ncu_path`` may be a folder holding that one CSV, as any trace path may)."""
    from tcreport import ingest
    from tcreport.analysis import counters
    from tcreport.model import SourceFormat

    # resolve, not detect: a folder holding the one CSV is read through it, as every PATH is
    fmt, p = ingest.resolve(Path(ncu_path))
    if fmt is not SourceFormat.NCU_CSV:
        raise UsageError(
            f"--counters wants an Nsight Compute CSV (ncu --csv); this is {fmt.value}", p
        )
    return counters.merge(run, ingest.load(p, fmt))


def analyze(
    run: Run,
    slc: Slice | None = None,
    *,
    source_path: str | None = None,
    timestamp: str | None = None,
    with_timeline: bool = False,
) -> Report:
    """Classify, slice iterations, compute figures and findings; returns the renderers' view.

    ``slc`` (:class:`Slice`) says which part of the run to analyse (default: all of it, split
    wherever iteration markers are found); one that would select nothing is refused with an
    :class:`~tcreport.errors.OptionError` unless ``slc.allow_empty``."""
    from tcreport import report
    from tcreport.analysis.slicing import WHOLE

    return report.build(
        run,
        slc if slc is not None else WHOLE,
        source_path=source_path,
        timestamp=timestamp,
        with_timeline=with_timeline,
    )


def open(  # tcreport.open(path): the notebook entry point (shadows the builtin here only)
    path: str | Path,
    *,
    key_node: str | None = None,
    iter_start: int | None = None,
    iter_stop: int | None = None,
    counters: str | Path | None = None,
    allow_empty: bool = False,
    rank: int | None = None,
) -> AnalysedRun | AnalysedJob:
    """Read and analyse one trace for a notebook: DataFrames, the summary dict, inline HTML
    (``docs/python-api.md``); the options are those of ``tcreport report`` (a :class:`Slice`).
    A folder holding the ranks of one distributed job gives an
    :class:`~tcreport.notebook_job.AnalysedJob`."""
    from tcreport.analysis.slicing import Slice
    from tcreport.notebook import AnalysedRun

    slc = Slice(key_node, iter_start, iter_stop, allow_empty)  # refused before the long read
    path = Path(path)  # "dir/" and "dir" name the same source, as on the command line
    job = find_job(path)
    if job is not None:
        return _open_job(job, path, slc, counters, rank)
    if rank is not None:
        raise UsageError(f"{path}: rank= is for {JOB_FORMS}; this is not one")
    run = load(path)
    if counters is not None:
        run = attach_counters(run, counters)
    # with the timeline: .to_html() gives the same report as `tcreport report`
    view = analyze(run, slc, source_path=str(path), with_timeline=True)
    return AnalysedRun(report=view, run=run, slice=slc)


def _open_job(
    job: Job, path: Path, slc: Slice, counters: str | Path | None, rank: int | None
) -> AnalysedJob:
    from tcreport.notebook_job import AnalysedJob

    if counters is not None:
        raise UsageError(f"{path}: counters= takes one trace's Nsight Compute CSV, not a job's")
    jr = analyze_job(job, slc, source_path=str(path), rank=rank, with_timeline=True)
    return AnalysedJob(report=jr, slice=slc, job=job)


def read_dataset(out: str | Path) -> dict[str, pd.DataFrame]:
    """A ``tcreport batch`` dataset's tables (runs, ops, kernels, findings, steps) as DataFrames."""
    from tcreport.notebook import read_dataset as read

    return read(Path(out))


def render_json(view: Report) -> str:
    from tcreport.render import summary_json

    return summary_json.render(view)


def render_html(view: Report) -> str:
    from tcreport.render import html

    return html.render(view)


def render_markdown(view: Report) -> str:
    from tcreport.render import markdown

    return markdown.render(view)


# -- comparing runs ----------------------------------------------------------------------------


def diff(base: Report, head: Report, *, force: bool = False) -> Diff:
    """What changed from ``base`` to ``head``; refuses runs that are not comparable unless
    ``force`` (:class:`tcreport.compare.model.NotComparableError`)."""
    from tcreport.compare import diff as compare

    return compare.diff(base, head, force=force)


def render_diff(d: Diff, fmt: str) -> str:
    """The diff as ``"markdown"`` (one PR comment), ``"json"`` (``tcreport.diff/1``), ``"html"``
    or ``"terminal"`` (plain tables as wide as the window)."""
    from tcreport.render import diff_html, diff_json, diff_markdown, diff_terminal

    render: Callable[[Diff, str], str] = {
        "html": diff_html.render,
        "json": diff_json.render,
        "markdown": diff_markdown.render,
        "terminal": diff_terminal.render,
    }[fmt]
    return render(d, __version__)


def check(
    view: Report,
    baseline: Report | None = None,
    *,
    min_tc_share: float | None = None,
    max_eligible_not_tc_share: float | None = None,
    max_regression: float | None = None,
    force: bool = False,
) -> CheckResult:
    """The CI gates that are switched on (not ``None``), each passed or failed in one line."""
    from tcreport.compare import gates

    g = gates.Gates(min_tc_share, max_eligible_not_tc_share, max_regression)
    return gates.check(view, g, baseline, force=force)


# -- the terminal ------------------------------------------------------------------------------


def fix_first_text(view: Report) -> str | None:
    """The report's fix-first finding as the terminal outputs name it (not escaped), or None."""
    from tcreport.render import terminal

    return terminal.fix_first_text(view)


def print_summary(view: Report) -> None:
    """The verdict and the top rows as tables on the terminal (``tcreport summary``)."""
    from tcreport.render import terminal

    terminal.render(view)


def print_rows(columns: list[str], rows: list[list[str]]) -> None:
    """A table of text a person reads (a query result), controls shown, never sent."""
    from tcreport.render import terminal

    terminal.rows_table(columns, rows)


# -- many runs ---------------------------------------------------------------------------------


def batch(
    root: str | Path,
    out: str | Path,
    *,
    jobs: int = 1,
    force: bool = False,
    executor: str = "process",
    scheduler: str | None = None,
    on_start: Callable[[int], None] | None = None,
    on_done: Callable[[Outcome], None] | None = None,
) -> BatchResult:
    """Every trace under ``root`` into the dataset, reports and index under ``out``
    (``tcreport batch``); ``executor`` is ``"process"`` or ``"dask"``. Nothing to archive raises
    :class:`~tcreport.errors.EmptyInputError`."""
    from tcreport.batch import runner

    return runner.run_batch(
        Path(root),
        Path(out),
        jobs=jobs,
        force=force,
        executor=runner.Executor(executor),
        scheduler=scheduler,
        on_start=on_start,
        on_done=on_done,
    )


def query(out: str | Path, sql: str, *, timeout: float | None = None) -> pa.Table:
    """``sql`` over a batch dataset's views, sandboxed (``tcreport query``)."""
    from tcreport.batch import query as q

    return q.run(Path(out), sql, timeout=timeout)


def query_csv(table: pa.Table, escape: Callable[[str], str] | None = None) -> str:
    from tcreport.batch import query as q

    return q.to_csv(table, escape=escape)


def query_json(table: pa.Table) -> str:
    from tcreport.batch import query as q

    return q.to_json(table)
