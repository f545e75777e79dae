"""The analysed run: an analysis, its findings and provenance, nothing else.

Renderers, gates, the diff and batch read this one object. They never touch Arrow tables or trace
metadata; what they may show is exactly what is here, which is how a report keeps the trace's
environment and secrets out by construction.
"""

from __future__ import annotations

from dataclasses import dataclass

from tcreport import __version__, rules
from tcreport.analysis import result
from tcreport.analysis.result import Analysis
from tcreport.analysis.slicing import WHOLE, Slice
from tcreport.errors import OptionError
from tcreport.model import Run
from tcreport.rules.base import Finding


@dataclass(frozen=True)
class Report:
    analysis: Analysis
    findings: tuple[Finding, ...]
    source_path: str  # as given on the command line
    tool_version: str = __version__
    generated_at: str | None = (
        None  # only when the user asks (--timestamp): reports stay byte-stable
    )
    fix_first: Finding | None = None  # rules.fix_first(findings): the headline's "fix first"
    #: what the headline says without one, and why (rules.no_fix_first); None with one
    no_fix_first: str | None = None

    @property
    def title(self) -> str:
        return self.source_path


def build(
    run: Run,
    slc: Slice = WHOLE,
    *,
    source_path: str | None = None,
    timestamp: str | None = None,
    with_timeline: bool = False,
    threaded: bool = True,
) -> Report:
    """Classify, slice iterations, compute figures and findings: the one way a Report is made.
    A slice that selects nothing is refused naming ``source_path`` (:class:`OptionError`).
    ``threaded``: the step analysis in a second thread (:func:`result.compute`)."""
    source = source_path if source_path is not None else run.meta.path
    try:
        analysis = result.compute(run, slc, with_timeline=with_timeline, threaded=threaded)
    except OptionError as exc:
        raise exc.at(source) from None
    findings = rules.evaluate(analysis)
    first = rules.fix_first(findings, analysis.host.cpu_only)
    return Report(
        analysis=analysis,
        findings=findings,
        source_path=source,
        generated_at=timestamp,
        fix_first=first,
        no_fix_first=None if first is not None else rules.no_fix_first(findings),
    )
