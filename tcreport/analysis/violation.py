"""A figure that breaks what must always hold (:mod:`tcreport.analysis.invariants`).

Kept apart from the checker so the analysed run (:class:`tcreport.analysis.sections.Analysis`)
can carry its violations without the checker and the sections importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Invariant(StrEnum):
    """What must hold for every analysed run; the value is the invariant's stable id."""

    NOT_NEGATIVE = "not-negative"  # no time or count below zero
    SHARE = "share-in-0-1"  # every share a fraction
    TC_WITHIN_KERNEL = "tc-within-kernel-time"  # matrix-unit time <= GPU kernel time
    ELIGIBLE_WITHIN_KERNEL = "eligible-within-kernel-time"  # eligible time <= kernel time
    MISSED_WITHIN_ELIGIBLE = "missed-within-eligible-time"
    OP_PARTS = "op-parts-sum-to-gpu-time"  # matrix-unit + missed + other = the op's GPU time
    OPS_WITHIN_KERNEL = "op-time-within-kernel-time"  # ops' kernel time <= GPU kernel time
    COUNTS = "eligible-counts-ordered"  # using <= eligible, eligible-not-using <= eligible
    #: using + eligible-not-using == eligible, partly-using <= using (every eligible op is one)
    COUNTS_ADD_UP = "eligible-counts-add-up"
    DEVICES_SUM = "devices-sum-to-totals"  # the per-GPU rows add up to the run's figures
    #: the kernel rows add up to the kernel time, those with a verdict of yes to the TC time
    KERNEL_ROWS_SUM = "kernel-rows-sum-to-totals"
    ITERATION_GPUS = "iteration-gpus-sum-to-row"  # an iteration's per-GPU stacks add up
    STEP_PARTS = "step-parts-sum-to-span"
    WINDOWS = "iteration-windows-ordered-disjoint"  # per GPU
    # a distributed job's own (tcreport.analysis.job_invariants)
    JOB_CELL_PARTS = "job-cell-parts-sum-to-span"  # and the step time is no shorter than the span
    JOB_OWN_TIME = "job-own-time-outside-collectives"  # compute beside none + copies + idle
    JOB_WAIT = "job-wait-from-least"  # no wait negative, the least of an iteration zero
    #: per GPU, the work an iteration's row shows in its window <= that window's span
    ITERATION_WITHIN_SPAN = "iteration-work-within-span"
    #: an op group's TFLOP/s <= the peak of the precision it ran at, unless an algorithm or an
    #: unknown verdict explains it (:class:`tcreport.analysis.op_throughput.PeakExcess`)
    WITHIN_PEAK = "throughput-within-peak"


@dataclass(frozen=True)
class Violation:
    invariant: Invariant
    figure: str  # the broken figure, as the API names it ("time.tc_kernel_ns")
    message: str  # what is wrong with it, one line

    def __str__(self) -> str:
        return f"{self.figure}: {self.message} ({self.invariant})"
