"""Finding rules: one module per rule, a stable id each, evaluated in a sorted registry.

Findings are ranked by estimated saving (largest first), then severity, then id, so the ordering
is deterministic and the most valuable change comes first.
"""

from __future__ import annotations

from tcreport.analysis.result import Analysis
from tcreport.rules import (
    dlprof_feedback,
    it001_iterations,
    tc001_eligible_not_tc,
    tc002_unclassified,
)
from tcreport.rules.base import SEVERITY_ORDER, Evidence, EvidenceKind, Finding, Rule, Severity

__all__ = ["REGISTRY", "Evidence", "EvidenceKind", "Finding", "Severity", "evaluate"]

#: rule id -> rule, sorted by id.
REGISTRY: dict[str, Rule] = dict(
    sorted(
        {
            "IT001": it001_iterations.check,
            "TC001": tc001_eligible_not_tc.check,
            "TC002": tc002_unclassified.check,
            "DLPROF": dlprof_feedback.check,
        }.items()
    )
)


def evaluate(analysis: Analysis) -> tuple[Finding, ...]:
    found = [f for rule in REGISTRY.values() for f in rule(analysis)]
    found.sort(
        key=lambda f: (-(f.estimated_saving_ns or 0), SEVERITY_ORDER[f.severity], f.id, f.title)
    )
    return tuple(found)
