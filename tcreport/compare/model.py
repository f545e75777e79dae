"""The diff's data model: verdicts, figures, row and finding changes (no logic beyond lookups).

:mod:`tcreport.compare.diff` builds these, :mod:`tcreport.compare.rows` matches rows into them, and
the renderers and gates read them; keeping them here lets the builders import each other's types
without a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from tcreport.analysis.sections.verdict import UnitWords
from tcreport.errors import UsageError

NOISE_FLOOR = 0.01  # relative (times) or absolute (shares) threshold when no spread is known
NOISE_SIGMAS = 2.0


class NotComparableError(UsageError):
    """Two runs that do not measure the same thing (GPU, framework, iteration count)."""


class Change(StrEnum):
    """How one figure or row moved between base and head."""

    IMPROVED = "improved"
    REGRESSED = "regressed"
    CHANGED = "changed"  # a real change in a figure with no better direction
    NOISE = "noise"
    UNCHANGED = "no change"
    NEW = "new"
    GONE = "gone"
    UNKNOWN = "unknown"


class Better(StrEnum):
    LOWER = "lower"
    HIGHER = "higher"
    NEITHER = "neither"


class Unit(StrEnum):
    NS = "ns"
    SHARE = "share"
    COUNT = "count"


@dataclass(frozen=True)
class Side:
    """What the diff shows about one input (whitelisted fields only)."""

    path: str
    format: str
    gpu: str | None
    framework: str | None
    aggregated: int | None
    spread: str  # where the noise estimate came from


@dataclass(frozen=True)
class Figure:
    key: str
    label: str
    unit: Unit
    better: Better
    base: float | None
    head: float | None
    delta: float | None
    rel: float | None  # delta / base
    threshold: float | None  # |delta| below this is noise
    verdict: Change


@dataclass(frozen=True)
class RowDiff:
    """One op, op type or kernel: per-iteration GPU time, TC use and eligible-not-TC time."""

    key: str
    type: str | None
    matched_by: str  # "name", "type" or "" (present on one side only)
    base_ns: float | None
    head_ns: float | None
    delta_ns: float | None
    rel: float | None
    verdict: Change
    base_tc_share: float | None  # of the row's time on the matrix units (1/0 for a kernel)
    head_tc_share: float | None
    base_missed_ns: float | None  # eligible for the matrix units, not on them (OpRow.missed_ns)
    head_missed_ns: float | None
    eligible: bool
    base_dtype: str | None = None  # an op's data type, to show a precision change
    head_dtype: str | None = None
    #: the report's own verdict (OpRow/KernelRow.uses_tc), so the diff says what the report says
    base_uses_tc: bool | None = None
    head_uses_tc: bool | None = None


@dataclass(frozen=True)
class FindingChange:
    id: str
    title: str
    severity: str


@dataclass(frozen=True)
class Diff:
    base: Side
    head: Side
    not_comparable: tuple[str, ...]  # reasons; non-empty only when forced
    forced: bool
    matching: str  # how ops were paired, in words
    noise_rule: str
    figures: tuple[Figure, ...]
    ops: tuple[RowDiff, ...]
    op_types: tuple[RowDiff, ...]
    kernels: tuple[RowDiff, ...]
    added: tuple[FindingChange, ...]
    resolved: tuple[FindingChange, ...]
    persisting: tuple[FindingChange, ...]
    notes: tuple[str, ...]
    words: UnitWords  # what the runs' matrix units are called (comparable runs share a vendor)
    op_clock: str = "GPU"  # "host" when neither run has op GPU time (a CPU-only capture)
    verdict: str = ""  # one line: better / worse / mixed / no change, by how much, per iteration

    def figure(self, key: str) -> Figure:
        return next(f for f in self.figures if f.key == key)
