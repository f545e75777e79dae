"""The view-model every renderer reads: an analysis, its findings and provenance, nothing else.

Renderers never touch Arrow tables or trace metadata; what they may show is exactly what is here,
which is how the report keeps trace environment and secrets out by construction.
"""

from __future__ import annotations

from dataclasses import dataclass

from tcreport import __version__
from tcreport.analysis.result import Analysis
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
