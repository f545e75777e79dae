"""Aggregated iteration durations, shared by the warm-up and variance rules so they agree on what
counts as a warm-up outlier (and the variance rule does not fire on the warm-up again). The step
times the variance rule judges are the analysis' (``analysis.iterations.step_time``)."""

from __future__ import annotations

from tcreport.analysis.derived import IterationRow, warmup
from tcreport.analysis.result import Analysis


def aggregated(analysis: Analysis) -> list[IterationRow]:
    return [r for r in analysis.iterations.rows if r.aggregated and r.duration_ns > 0]


def warmup_outlier(rows: list[IterationRow]) -> tuple[IterationRow, float] | None:
    """(first aggregated iteration, median of the others) when the first is a warm-up outlier:
    the analysis' one decision (:func:`derived.warmup`), which also flags the row."""
    return warmup(rows)


def steady(rows: list[IterationRow]) -> list[IterationRow]:
    """The aggregated iterations without a leading warm-up outlier."""
    return rows[1:] if warmup_outlier(rows) is not None else rows
