"""The analysed distributed job: its job section, its findings and one rank in full.

What renderers, gates and batch read for a job, as :class:`tcreport.report.Report` is for one
trace. Built by :func:`build`, which reads the ranks one at a time (or through ``mapper``: a
process pool or a Dask cluster), keeps only each rank's :class:`RankFigures` and drops its tables
before the next is read, so a job of N ranks needs about the memory of its largest rank plus the
per-rank figures. The rank shown in full (with its timeline in the HTML report) is the straggler
unless one is asked for. Read one after the other, the rank asked for (or, up to
:data:`TIMELINE_IN_PASS` ranks, every rank; past that the likeliest straggler so far) keeps its
Report, timeline drawn where the page shows one (:func:`_kept`); the rank shown is analysed once
more at the end only where that was not kept (a worker's Report is never sent back), the price of
not keeping N analyses. Where no rank is analysed again, a multi-process export's rows of each
rank go once it is analysed (``ingest.release_rank``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tcreport import __version__
from tcreport.analysis import job_invariants
from tcreport.analysis.job import JobIdentity, JobSection, section
from tcreport.analysis.job_ranks import RankFigures, rank_figures
from tcreport.analysis.slicing import WHOLE, Slice
from tcreport.errors import UsageError
from tcreport.ingest.job import Job, RankTrace
from tcreport.model import SourceFormat
from tcreport.report import Report
from tcreport.rules.base import Finding

#: ``map(fn, specs)``-like: how the ranks are analysed (the built-in map: one after the other).
Mapper = Callable[
    [Callable[["RankSpec"], "RankResult"], Sequence["RankSpec"]], Iterable["RankResult"]
]


@dataclass(frozen=True)
class RankSpec:
    """What analysing one rank needs: small and picklable, for a worker process or a cluster."""

    path: str
    rank: int
    slc: Slice = WHOLE  # the part of every rank analysed (its timeline_iter: the detail's only)
    #: called with the rank's Report while its tables are alive (batch: per-rank dataset rows);
    #: a module-level function, so that it pickles
    extra: Callable[[int, Report], Any] | None = None
    keep_report: bool = False  # hand the Report back (the serial path only: never pickled)
    process_id: int | None = None  # the rank's process in a multi-process export
    with_timeline: bool = False  # draw the timeline (a rank that may be the one shown in full)
    #: let go of the rank's rows once analysed (a multi-process export's: never asked for again)
    release: bool = False

    @property
    def trace(self) -> RankTrace:
        path = Path(self.path)
        return RankTrace(
            path, SourceFormat.NSYS_SQLITE, self.rank, None, path.name, self.process_id
        )


@dataclass(frozen=True)
class RankResult:
    figures: RankFigures
    extra: Any = None
    report: Report | None = None  # kept only where asked (the serial path's last candidate)


def analyse_rank(spec: RankSpec) -> RankResult:
    """Read and analyse one rank; keep its figures (and ``spec.extra``'s result)."""
    from tcreport import ingest, report

    trace = spec.trace
    run = ingest.load_rank(trace, geometry=False)  # no analysis reads the launch geometry
    view = report.build(
        run,
        spec.slc,
        source_path=spec.path,
        with_timeline=spec.with_timeline,
        threaded=ingest.held_beside(trace) <= OVERLAP_BESIDE,
    )
    figures = rank_figures(
        spec.rank,
        trace.name,
        view.analysis,
        run,
        tuple(dict.fromkeys(f.id for f in view.findings)),
    )
    extra = spec.extra(spec.rank, view) if spec.extra is not None else None
    if spec.release:
        del run
        ingest.release_rank(trace)
    return RankResult(figures, extra, view if spec.keep_report else None)


def _serial(
    fn: Callable[[RankSpec], RankResult], specs: Sequence[RankSpec]
) -> Iterable[RankResult]:
    """One rank at a time; each result keeps its Report only until the next one arrives."""
    for spec in specs:
        yield fn(spec)


@dataclass(frozen=True)
class JobReport:
    section: JobSection
    findings: tuple[Finding, ...]  # the job's own (rules.job_rules), ranked by saving
    detail: Report  # the rank shown in full
    detail_rank: int
    #: "the straggler", "asked for", "the only rank", "the first rank", "the first rank with
    #: timed GPU steps"
    detail_why: str
    source_path: str
    rank_files: tuple[tuple[int, str], ...]  # (rank, path as given) of every rank read
    extras: tuple[Any, ...] = ()  # spec.extra results, one per rank, in rank order
    tool_version: str = __version__
    generated_at: str | None = None

    @property
    def title(self) -> str:
        return self.source_path


def _detail_rank(sec: JobSection, asked: int | None, job: Job) -> tuple[int, str]:
    """The rank asked for, else the straggler, else the first rank with timed GPU steps: a
    damaged rank the job's figures leave out is not the one to show (or diff) in full."""
    if asked is not None:
        if asked not in sec.identity.ranks:
            job.rank_path(asked)  # raises the one-line error naming the ranks present
        return asked, "asked for"
    if sec.straggler is not None:
        return sec.straggler.rank, "the straggler"
    timed = sec.timed
    if len(sec.identity.ranks) == 1:
        return timed[0], "the only rank"
    if timed[0] != sec.identity.ranks[0]:
        return timed[0], "the first rank with timed GPU steps"
    return timed[0], "the first rank"


#: A rank of a multi-process export is analysed with its step analysis beside the rest
#: (:func:`result.compute`'s ``threaded``) only while the export holds at most this many bytes of
#: other ranks' rows beside it: the x1000 export's rank 0 is analysed beside ~0.5 GiB of rank
#: 1's, and the two threads' temporaries (~0.25 GiB more than one after the other) made the
#: run's peak.
OVERLAP_BESIDE = 256 << 20

#: Up to this many ranks, the serial path draws every rank's timeline (when the page shows one)
#: so that the rank shown in full is not analysed again: on the x1000 export's rank 0 the
#: timeline costs 0.3-0.45 s of CPU and the analysis 2.6-2.8 s, so six timelines cost less than
#: one more analysis (a folder's rank would be read from its file again as well).
TIMELINE_IN_PASS = 6


def _kept(
    this: int, asked: int | None, with_timeline: bool, serial: bool, ranks: int
) -> tuple[bool, bool]:
    """(keep its Report, draw its timeline) for rank ``this``: a rank that may be the one shown
    in full keeps its Report on the serial path (a worker's is never sent back), the rank asked
    for or, without one, every rank (all of them up to :data:`TIMELINE_IN_PASS` ranks, past that
    the likeliest straggler's: :func:`_build`); the
    timeline only where the rank's Report is kept and drawing it is cheaper than analysing it
    again (:data:`TIMELINE_IN_PASS`)."""
    keep = serial and asked in (None, this)
    if with_timeline and keep and asked is None and ranks > TIMELINE_IN_PASS:
        keep = False  # analysed again once chosen, timeline and all
    return keep, with_timeline and keep


def build(
    job: Job,
    slc: Slice = WHOLE,
    *,
    source_path: str | None = None,
    rank: int | None = None,
    with_timeline: bool = False,
    timestamp: str | None = None,
    mapper: Mapper | None = None,
    extra: Callable[[int, Report], Any] | None = None,
) -> JobReport:
    """Analyse the part ``slc`` selects of every rank of ``job``, then the job; ``rank`` picks
    the rank shown in full. A slice that selects nothing on a rank is refused naming that rank's
    trace (:class:`~tcreport.errors.OptionError`), as for one trace, unless ``slc.allow_empty``.
    A multi-process export read for its ranks is let go at the end (``ingest.forget_ranks``)."""
    from tcreport import ingest

    try:
        return _build(job, slc, source_path, rank, with_timeline, timestamp, mapper, extra)
    finally:
        ingest.forget_ranks()


def _build(
    job: Job,
    slc: Slice,
    source_path: str | None,
    rank: int | None,
    with_timeline: bool,
    timestamp: str | None,
    mapper: Mapper | None,
    extra: Callable[[int, Report], Any] | None,
) -> JobReport:
    from tcreport import report
    from tcreport.rules import job_rules

    if rank is not None and rank not in {r.rank for r in job.ranks}:
        job.rank_path(rank)
    # Every Report the serial path may show is kept up to TIMELINE_IN_PASS ranks (or only the
    # rank asked for), so no rank is analysed again and a multi-process export's rows of a rank
    # can go once it is analysed; a worker's are its own export's.
    keep_all = mapper is None and (rank is not None or len(job.ranks) <= TIMELINE_IN_PASS)
    release = mapper is not None or keep_all
    specs = [
        RankSpec(str(r.path), r.rank, slc, extra, keep, r.process_id, drawn, release)
        for r in job.ranks
        for keep, drawn in [_kept(r.rank, rank, with_timeline, mapper is None, len(job.ranks))]
    ]
    figures: list[RankFigures] = []
    extras: list[Any] = []
    kept: dict[int, Report] = {}
    most = -1
    for result in (mapper or _serial)(analyse_rank, specs):
        figures.append(result.figures)
        extras.append((result.figures.rank, result.extra))
        own = sum(s.own_ns for s in result.figures.aggregated_steps)
        if result.report is not None and keep_all:
            kept[result.figures.rank] = result.report
        elif result.report is not None and own > most:  # the likeliest straggler so far
            kept, most = {result.figures.rank: result.report}, own
        del result
    if not figures:
        raise UsageError("no rank could be read", job.folder)
    identity = JobIdentity(
        job.label, job.detected_by, job.world_size, job.backend, tuple(r.rank for r in job.ranks)
    )
    source = source_path if source_path is not None else str(job.folder)
    sec = section(identity, figures, job.sizes_note)
    if job.unreadable:
        sec = dataclasses.replace(sec, notes=(*sec.notes, *job.unreadable_notes()))
    sec = job_invariants.enforce(sec, figures, source)
    chosen, why = _detail_rank(sec, rank, job)
    detail = kept.get(chosen)
    kept = {}
    if detail is None:
        from tcreport import ingest

        trace = job.rank_trace(chosen)
        detail = report.build(
            ingest.load_rank(trace, geometry=False),
            slc,
            source_path=str(trace.path),
            with_timeline=with_timeline,
        )
    return JobReport(
        section=sec,
        findings=job_rules.evaluate(sec),
        detail=detail,
        detail_rank=chosen,
        detail_why=why,
        source_path=source,
        rank_files=tuple((r.rank, str(r.path)) for r in job.ranks),
        extras=tuple(x for _, x in sorted(extras, key=lambda p: p[0])),
        generated_at=timestamp,
    )


def with_detail(jr: JobReport, job: Job, rank: int, slc: Slice, why: str) -> JobReport:
    """``jr`` showing ``rank`` in full instead (``job``: the job ``jr`` was built from, ``slc``
    its slice): that one rank is read and analysed again, the job's figures are kept. A job
    diff needs the same rank, timed on both sides, in full on each."""
    from tcreport import ingest, report

    trace = job.rank_trace(rank)
    try:
        detail = report.build(
            ingest.load_rank(trace, geometry=False), slc, source_path=str(trace.path)
        )
    finally:
        ingest.forget_ranks()
    return replace(jr, detail=detail, detail_rank=rank, detail_why=why)
