"""The analysed run: an analysis, its findings and provenance, nothing else.

Renderers, gates, the diff and batch read this one object. They never touch Arrow tables or trace
metadata; what they may show is exactly what is here, which is how a report keeps the trace's
environment and secrets out by construction.
"""

from __future__ import annotations

from dataclasses import dataclass

from tcreport import __version__
from tcreport.analysis.result import Analysis
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

    @property
    def title(self) -> str:
        return self.source_path


def build(
    run: Run,
    *,
    source_path: str | None = None,
    key_node: str | None = None,
    iter_start: int | None = None,
    iter_stop: int | None = None,
    timestamp: str | None = None,
) -> Report:
    """Classify, slice iterations, compute figures and findings: the one way a Report is made."""
    from tcreport import rules
    from tcreport.analysis import result

    analysis = result.compute(run, key_node=key_node, iter_start=iter_start, iter_stop=iter_stop)
    findings = rules.evaluate(analysis)
    return Report(
        analysis=analysis,
        findings=findings,
        source_path=source_path if source_path is not None else run.meta.path,
        generated_at=timestamp,
        fix_first=rules.fix_first(findings),
    )
