"""The facade's distributed-job half: find a job, analyse, render, diff and gate it.

:mod:`tcreport.api` re-exports every function here, so the CLI and Python users call
``api.analyze_job`` as they call ``api.analyze``; the job half lives apart only to keep each
module short. As in :mod:`tcreport.api`, every import of the pipeline is deferred to the call
that needs it (``tcreport --help`` imports this module).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tcreport import __version__

if TYPE_CHECKING:
    from tcreport.analysis.slicing import Slice
    from tcreport.compare.gates import CheckResult
    from tcreport.compare.job_diff import JobDiff
    from tcreport.ingest.job import Job
    from tcreport.job_report import JobReport, Mapper


#: What a distributed job is, as every option and message that needs one (``--rank``) says it:
#: the forms :func:`find_job` recognises.
JOB_FORMS = (
    "a distributed job (a folder of its per-rank traces, or one Nsight Systems export of a "
    "multi-process launch, or a folder holding that export)"
)


def find_job(path: str | Path) -> Job | None:
    """The distributed job ``path`` holds (a folder of the per-rank traces of one job and nothing
    else), or ``None``: then :func:`tcreport.api.load` reads it as before
    (:mod:`tcreport.ingest.job`)."""
    from tcreport import ingest

    return ingest.find_job(Path(path))


def analyze_job(
    job: Job | str | Path,
    slc: Slice | None = None,
    *,
    source_path: str | None = None,
    rank: int | None = None,
    timestamp: str | None = None,
    with_timeline: bool = False,
    mapper: Mapper | None = None,
) -> JobReport:
    """Every rank of ``job`` analysed one at a time (or through ``mapper``), then the job:
    per-rank figures, stragglers, collective wait and bandwidth (:mod:`tcreport.job_report`).
    ``slc`` (:class:`Slice`) applies to every rank, as :func:`tcreport.api.analyze` applies it
    to one run; ``rank`` is the rank shown in full (default: the straggler). ``job`` may be
    the path of the job's folder, as every other path the facade takes (a str or a Path); a path
    that holds no job raises :class:`~tcreport.errors.InputError`."""
    from tcreport import job_report
    from tcreport.analysis.slicing import WHOLE

    return job_report.build(
        _as_job(job),
        slc if slc is not None else WHOLE,
        source_path=source_path,
        rank=rank,
        timestamp=timestamp,
        with_timeline=with_timeline,
        mapper=mapper,
    )


def _as_job(job: Job | str | Path) -> Job:
    """A Job as given, or the job a path holds (``str`` and ``Path`` alike)."""
    if not isinstance(job, str | Path):
        return job
    found = find_job(job)
    if found is None:
        from tcreport.errors import InputError

        raise InputError(f"{job}: not {JOB_FORMS}")
    return found


def render_job_json(jr: JobReport) -> str:
    """The ``tcreport.job/1`` document (docs/summary-json.md)."""
    from tcreport.render import job_json

    return job_json.render(jr)


def render_job_html(jr: JobReport) -> str:
    """The job's page: the job section above the report of the rank shown in full."""
    from tcreport.render import html

    return html.render(jr.detail, job=jr)


def render_job_markdown(jr: JobReport) -> str:
    from tcreport.render import job_markdown

    return job_markdown.render(jr)


def print_job_summary(jr: JobReport) -> None:
    """A distributed job's verdict, ranks and straggler as a table on the terminal."""
    from tcreport.render import terminal

    terminal.render_job(jr)


def diff_jobs(base: JobReport, head: JobReport, *, force: bool = False) -> JobDiff:
    """What changed from job ``base`` to job ``head``: the job's figures, each rank's, and the
    rank shown in full diffed as one run; refuses jobs that are not comparable unless ``force``."""
    from tcreport.compare import job_diff

    return job_diff.diff(base, head, force=force)


def same_rank_in_full(
    base: JobReport, head: JobReport, base_job: Job, head_job: Job, slc: Slice | None = None
) -> tuple[JobReport, JobReport]:
    """``base`` and ``head`` (analysed from ``base_job`` and ``head_job`` with ``slc``) showing
    one rank in full, timed on both sides, as :func:`diff_jobs` diffs them: the head's where the
    base timed it too, else another (:func:`tcreport.compare.job_diff.rank_in_full`); only a
    rank shown anew is analysed again."""
    from tcreport import job_report
    from tcreport.analysis.slicing import WHOLE
    from tcreport.compare import job_diff

    rank = job_diff.rank_in_full(base, head)
    if rank is None:
        return base, head
    s = slc if slc is not None else WHOLE
    why = "timed on both sides" if rank != head.detail_rank else head.detail_why
    if base.detail_rank != rank:
        base = job_report.with_detail(base, base_job, rank, s, why)
    if head.detail_rank != rank:
        head = job_report.with_detail(head, head_job, rank, s, why)
    return base, head


def render_job_diff(d: JobDiff, fmt: str) -> str:
    """The job diff as ``"markdown"``, ``"json"`` (``tcreport.job-diff/1``), ``"html"`` or
    ``"terminal"``."""
    from tcreport.render import diff_terminal
    from tcreport.render import job_diff as render

    fn = {
        "html": render.render_html,
        "json": render.render_json,
        "markdown": render.render_markdown,
        "terminal": diff_terminal.render_job,
    }[fmt]  # as render_diff: an unknown format is a caller's error, not Markdown
    return fn(d, __version__)


def check_job(
    jr: JobReport,
    baseline: JobReport | None = None,
    *,
    min_tc_share: float | None = None,
    max_eligible_not_tc_share: float | None = None,
    max_regression: float | None = None,
    force: bool = False,
) -> CheckResult:
    """The CI gates that are switched on, against the job's own figures (and a baseline job)."""
    from tcreport.compare import gates, job_diff

    g = gates.Gates(min_tc_share, max_eligible_not_tc_share, max_regression)
    return job_diff.check(jr, g, baseline, force=force)
