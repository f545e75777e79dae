"""The noise rule: when a change between two runs is a change and not run-to-run spread.

The rule itself is written out in :mod:`tcreport.compare.diff`'s docstring (and docs/ci-workflow.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tcreport.compare.model import Better, Change

if TYPE_CHECKING:
    from tcreport.analysis.result import Analysis


@dataclass(frozen=True)
class Spread:
    std: float | None  # per-iteration kernel time
    share_std: float | None  # per-iteration TC share
    cv: float | None  # relative spread (std / mean)
    source: str
    #: per-iteration wall time (the iterations' durations): the host's share of a step varies
    #: far more than its kernels' (15-25 % on the H200 CNN runs against ~1 %), so wall time is
    #: judged by its own spread, not the kernel time's
    wall_std: float | None = None


def _stats(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(var)


def spread(a: Analysis) -> Spread:
    rows = [r for r in a.iterations.rows if r.aggregated]
    if len(rows) >= 2:
        kt = [float(r.tc_ns + r.non_tc_ns) for r in rows]
        mean, std = _stats(kt)
        shares = [r.tc_ns / (r.tc_ns + r.non_tc_ns) for r in rows if r.tc_ns + r.non_tc_ns > 0]
        share_std = _stats(shares)[1] if len(shares) >= 2 else None
        wall_std = _stats([float(r.duration_ns) for r in rows])[1]
        return Spread(
            std, share_std, std / mean if mean > 0 else None, f"{len(rows)} iterations", wall_std
        )
    info = a.iterations.info
    if (info.aggregated or 0) >= 2 and info.std_ns is not None and info.mean_ns:
        return Spread(None, None, info.std_ns / info.mean_ns, "iteration duration spread")
    return Spread(None, None, None, "none (1 % rule)")


def pooled(a: float | None, b: float | None) -> float | None:
    if a is None and b is None:
        return None
    x, y = a if a is not None else b, b if b is not None else a
    assert x is not None and y is not None
    return math.sqrt((x * x + y * y) / 2)


def judge(
    base: float | None, head: float | None, threshold: float | None, better: Better
) -> tuple[float | None, float | None, Change]:
    if base is None and head is None:
        return None, None, Change.UNKNOWN
    if base is None:
        return None, None, Change.NEW
    if head is None:
        return None, None, Change.GONE
    delta = head - base
    rel = delta / base if base else None
    if delta == 0:
        return delta, rel, Change.UNCHANGED
    if threshold is not None and abs(delta) < threshold:
        return delta, rel, Change.NOISE
    if better is Better.NEITHER:
        return delta, rel, Change.CHANGED
    good = delta < 0 if better is Better.LOWER else delta > 0
    return delta, rel, Change.IMPROVED if good else Change.REGRESSED
