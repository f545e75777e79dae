"""Findings: what a rule concluded, how bad it is, what to do and what it would save.

Findings carry no HTML or Markdown; renderers format them. Each links to the rows that justify it
(``evidence``: op ids or kernel names) so a reviewer can check the claim.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from tcreport import fmt
from tcreport.analysis.result import Analysis


class Severity(StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"
    INFO = "info"


SEVERITY_ORDER = {Severity.HIGH: 0, Severity.MEDIUM: 1, Severity.LOW: 2, Severity.INFO: 3}


class EvidenceKind(StrEnum):
    OP = "op"
    KERNEL = "kernel"
    ITERATION = "iteration"
    LAYER = "layer"  # a model layer the audit saw: "name (file:line)"; no table row to link to


@dataclass(frozen=True)
class Evidence:
    kind: EvidenceKind
    key: str  # op name, kernel name, iteration number or layer


@dataclass(frozen=True)
class Finding:
    id: str
    severity: Severity
    title: str
    detail: str
    fix: str | None = None
    estimated_saving_ns: int | None = None
    assumptions: str | None = None  # how the saving was estimated
    source: str = "tcreport"  # or "DLProf expert systems"
    evidence: tuple[Evidence, ...] = ()
    # Filled by rules.evaluate from estimated_saving_ns, so every rule states them the same way.
    saving_share: float | None = None  # of the aggregated wall time
    saving_per_iteration_ns: int | None = None  # saving / aggregated iterations
    saving_iterations: int | None = None  # the aggregated iterations the saving is summed over

    @property
    def saving_amount(self) -> str | None:
        """The estimated saving in words, the one way every output states it (None: no saving).
        Over several iterations it leads with the saving per iteration, the unit of a title that
        speaks "per step" ("313.2 µs per step" idle cannot read as a "626.4 µs" saving), then the
        total the JSON's ``estimated_saving_ns`` carries."""
        ns = self.estimated_saving_ns
        if not ns:
            return None
        n, per = self.saving_iterations, self.saving_per_iteration_ns
        if n is None or n < 2 or per is None:
            return f"~{fmt.ns(ns)}"
        return f"~{fmt.ns(per)} per iteration, {fmt.ns(ns)} over {n} iterations"

    @property
    def saving_words(self) -> str | None:
        """``saves ~…`` (:attr:`saving_amount`) after a finding's title; None without a saving."""
        amount = self.saving_amount
        return None if amount is None else f"saves {amount}"


Rule = Callable[[Analysis], list[Finding]]
