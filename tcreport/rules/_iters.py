"""Aggregated iteration durations, shared by the warm-up and variance rules so they agree on what
counts as a warm-up outlier (and the variance rule does not fire on the warm-up again)."""

from __future__ import annotations

import statistics

from tcreport.analysis.derived import IterationRow, step_times, warmup
from tcreport.analysis.result import Analysis
from tcreport.rules import thresholds


def aggregated(analysis: Analysis) -> list[IterationRow]:
    return [r for r in analysis.iterations.rows if r.aggregated and r.duration_ns > 0]


def warmup_outlier(rows: list[IterationRow]) -> tuple[IterationRow, float] | None:
    """(first aggregated iteration, median of the others) when the first is a warm-up outlier:
    the analysis' one decision (:func:`derived.warmup`), which also flags the row."""
    return warmup(rows)


def steady(rows: list[IterationRow]) -> list[IterationRow]:
    """The aggregated iterations without a leading warm-up outlier."""
    return rows[1:] if warmup_outlier(rows) is not None else rows


def steady_times(rows: list[IterationRow]) -> tuple[list[tuple[IterationRow, int]], str]:
    """The aggregated iterations' step times (:func:`derived.step_times`: GPU-side where the
    breakdown measured them, else host-side) without a leading warm-up outlier by that same
    measure, and which measure it is ("GPU" or "host")."""
    times, basis = step_times(rows)
    timed = [(r, times[r.iteration]) for r in rows if r.iteration in times]
    if len(timed) >= thresholds.MIN_ITERATIONS:
        first, rest = timed[0][1], [t for _, t in timed[1:]]
        median = statistics.median(rest)
        if median > 0 and first >= thresholds.WARMUP_RATIO * median:
            timed = timed[1:]
    return timed, basis
