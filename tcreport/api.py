"""The facade the CLI and Python users call: load -> analyze -> render.

>>> from tcreport import api
>>> run = api.load("dlprof_results/")
>>> view = api.analyze(run, source_path="dlprof_results/")
>>> html = api.render_html(view)

Output files are written atomically (:func:`write_text_atomic`: temporary name, then rename) so a
failure never leaves a half-written report behind.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, TYPE_CHECKING

from tcreport._fs import write_atomic, write_text_atomic

if TYPE_CHECKING:
    from collections.abc import Callable

    import pandas as pd

    from tcreport.ingest.job import Job
    from tcreport.job_report import JobReport, Mapper
    from tcreport.model import Run, SourceFormat
    from tcreport.notebook import AnalysedRun
    from tcreport.notebook_job import AnalysedJob
    from tcreport.report import Report

__all__ = [
    "analyze",
    "analyze_job",
    "find_job",
    "attach_counters",
    "check_ingest_output",
    "ingest",
    "load",
    "open",
    "read_dataset",
    "render_html",
    "render_json",
    "render_markdown",
    "write_text_atomic",
]


def load(path: str | Path, fmt: SourceFormat | None = None) -> Run:
    """Read any supported trace (or a ``tcreport ingest`` folder) into canonical tables."""
    from tcreport import ingest

    return ingest.load(Path(path), fmt)


def attach_counters(run: Run, ncu_path: str | Path) -> Run:
    """Give ``run``'s kernels the Tensor Core verdicts Nsight Compute measured (``ncu --csv``)."""
    from tcreport import ingest
    from tcreport.analysis import counters
    from tcreport.errors import UsageError
    from tcreport.model import SourceFormat

    p = Path(ncu_path)
    fmt = ingest.detect(p)
    if fmt is not SourceFormat.NCU_CSV:
        raise UsageError(
            f"--counters wants an Nsight Compute CSV (ncu --csv); this is {fmt.value}", p
        )
    return counters.merge(run, ingest.load(p, fmt))


def find_job(path: str | Path) -> Job | None:
    """The distributed job ``path`` holds (a folder of the per-rank traces of one job and nothing
    else), or ``None``: then :func:`load` reads it as before (:mod:`tcreport.ingest.job`)."""
    from tcreport import ingest

    return ingest.find_job(Path(path))


def analyze_job(
    job: Job,
    *,
    source_path: str | None = None,
    key_node: str | None = None,
    iter_start: int | None = None,
    iter_stop: int | None = None,
    rank: int | None = None,
    timestamp: str | None = None,
    timeline_iter: int | None = None,
    with_timeline: bool = False,
    mapper: Mapper | None = None,
) -> JobReport:
    """Every rank of ``job`` analysed one at a time (or through ``mapper``), then the job:
    per-rank figures, stragglers, collective wait and bandwidth (:mod:`tcreport.job_report`).
    ``rank`` is the rank shown in full (default: the straggler)."""
    from tcreport import job_report

    return job_report.build(
        job,
        source_path=source_path,
        key_node=key_node,
        iter_start=iter_start,
        iter_stop=iter_stop,
        rank=rank,
        timestamp=timestamp,
        timeline_iter=timeline_iter,
        with_timeline=with_timeline,
        mapper=mapper,
    )


def analyze(
    run: Run,
    *,
    source_path: str | None = None,
    key_node: str | None = None,
    iter_start: int | None = None,
    iter_stop: int | None = None,
    timestamp: str | None = None,
    timeline_iter: int | None = None,
    with_timeline: bool = False,
) -> Report:
    """Classify, slice iterations, compute figures and findings; returns the renderers' view."""
    from tcreport import report

    return report.build(
        run,
        source_path=source_path,
        key_node=key_node,
        iter_start=iter_start,
        iter_stop=iter_stop,
        timestamp=timestamp,
        timeline_iter=timeline_iter,
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
    (``docs/python-api.md``); the options are those of ``tcreport report``. A folder holding
    the ranks of one distributed job gives an :class:`~tcreport.notebook_job.AnalysedJob`."""
    from tcreport.errors import UsageError
    from tcreport.notebook import AnalysedRun

    if iter_start is not None and iter_stop is not None and iter_stop < iter_start:
        raise UsageError(f"iter_stop {iter_stop} is before iter_start {iter_start}")
    path = Path(path)  # "dir/" and "dir" name the same source, as on the command line
    job = find_job(path)
    if job is not None:
        return _open_job(job, path, key_node, iter_start, iter_stop, counters, allow_empty, rank)
    if rank is not None:
        raise UsageError(f"{path}: rank= is for a folder of a distributed job's traces")
    run = load(path)
    if counters is not None:
        run = attach_counters(run, counters)
    view = analyze(  # with the timeline: .to_html() gives the same report as `tcreport report`
        run,
        source_path=str(path),
        key_node=key_node,
        iter_start=iter_start,
        iter_stop=iter_stop,
        with_timeline=True,
    )
    if not allow_empty:
        refuse_ineffective_options(view, path, key_node, iter_start)
    return AnalysedRun(report=view, run=run, key_node=key_node)


def _open_job(
    job: Job,
    path: Path,
    key_node: str | None,
    iter_start: int | None,
    iter_stop: int | None,
    counters: str | Path | None,
    allow_empty: bool,
    rank: int | None,
) -> AnalysedJob:
    from tcreport.errors import UsageError
    from tcreport.notebook_job import AnalysedJob

    if counters is not None:
        raise UsageError(f"{path}: counters= takes one trace's Nsight Compute CSV, not a job's")
    jr = analyze_job(
        job,
        source_path=str(path),
        key_node=key_node,
        iter_start=iter_start,
        iter_stop=iter_stop,
        rank=rank,
        with_timeline=True,
    )
    if not allow_empty:
        refuse_ineffective_options(jr.detail, path, key_node, iter_start)
    return AnalysedJob(report=jr, key_node=key_node)


def refuse_ineffective_options(
    view: Report, path: str | Path, key_node: str | None, iter_start: int | None
) -> None:
    """Raise the one-line :class:`UsageError` when ``key_node``/``iter_start`` would silently
    do nothing (an unknown key node aggregates the whole run); shared by the CLI and :func:`open`
    so both refuse the same way. ``allow_empty`` callers skip it."""
    from tcreport.analysis.key_nodes import ineffective_options
    from tcreport.errors import UsageError

    problem = ineffective_options(view.analysis.selection, key_node, iter_start)
    if problem is not None:
        raise UsageError(f"{path}: {problem}")


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


def render_job_json(jr: JobReport) -> str:
    """The ``tcreport.job/1`` document (docs/summary-json.md)."""
    from tcreport.render import job_json

    return job_json.render(jr)


def render_job_html(jr: JobReport) -> str:
    from tcreport.render import html

    return html.render(jr.detail, job=jr)


def render_job_markdown(jr: JobReport) -> str:
    from tcreport.render import job_markdown

    return job_markdown.render(jr)


def ingest(
    run: Run,
    out_dir: str | Path,
    *,
    force: bool = False,
    on_kept: Callable[[Path], None] | None = None,
) -> Path:
    """Persist the canonical tables as Parquet so ``report``/``summary`` skip re-parsing.

    ``out_dir`` must not exist, or (with ``force``) be an ingest folder tcreport wrote. Files a
    user added to it while it was being replaced are kept in a folder passed to ``on_kept``.
    """
    from tcreport.ingest.parquet import reader as parquet

    return parquet.write(run, Path(out_dir), force=force, on_kept=on_kept)


def check_ingest_output(out_dir: str | Path, *, force: bool = False) -> None:
    """Refuse an ``ingest`` target before any parsing: one tcreport did not write, or without
    ``force`` one that exists (``ingest`` re-checks when it writes)."""
    from tcreport.ingest.parquet import reader as parquet

    parquet.check_target(Path(out_dir), force=force)


def export_perfetto(
    run: Run,
    out_path: str | Path | IO[bytes],
    *,
    key_node: str | None = None,
    iter_start: int | None = None,
    iter_stop: int | None = None,
    allow_empty: bool = False,
    source: str | Path = "",
    follow_link: bool = False,
    replace_read_only: bool = False,
) -> tuple[Path, int]:
    """Write the analysed run as Chrome/Perfetto trace JSON (every kernel with its verdict and
    rule); returns the file and the number of kernel events. A binary stream (stdout for
    ``-o -``) is written as is, and the returned path is then ``-``. A key node that never
    occurs (or an ``iter_start`` past the end) is refused as by ``report``, unless
    ``allow_empty``; ``source`` names the input in that message. A symbolic link or read-only
    file at ``out_path`` is refused unless ``follow_link`` / ``replace_read_only``, as for every
    output."""
    from tcreport.analysis import result
    from tcreport.analysis.key_nodes import ineffective_options
    from tcreport.errors import UsageError
    from tcreport.render import perfetto

    classified, selection = result.classified_selection(
        run, key_node=key_node, iter_start=iter_start, iter_stop=iter_stop
    )
    problem = None if allow_empty else ineffective_options(selection, key_node, iter_start)
    if problem is not None:
        raise UsageError(f"{source or run.meta.path}: {problem}")
    count = 0

    def writer(fh: IO[bytes]) -> None:
        nonlocal count
        count = perfetto.write(classified, fh)

    if not isinstance(out_path, str | Path):
        writer(out_path)
        return Path("-"), count
    target = write_atomic(
        Path(out_path), writer, follow_link=follow_link, replace_read_only=replace_read_only
    )
    return target, count
