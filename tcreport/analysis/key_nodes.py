"""Key-node suggestions that can actually mark iterations, with how sure we are.

Suggesting the most frequent names (``aten::linear``, ``empty_strided``) sends users to split a
run at every layer: following ``--key-node aten::linear`` on the 2x H100 sample gives 150
"iterations" whose times vary by 154 %. A key node has to do what a training step does: repeat with
a roughly constant period and span most of the run. So candidates come from names that mean a step
(``ProfilerStep``, the optimizer's step, a user ``train_step`` range, TensorFlow's
``AssignAddVariableOp`` step counter that DLProf used) and from outermost repeating ranges, and each
is checked against the timeline before it is offered: a name whose ranges nest inside or overlap
each other is never a step. When none passes, none is suggested.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.analysis import _codes
from tcreport.analysis.iteration_marks import _span, nested
from tcreport.model import Run

#: Names that mean "one training step" in the frameworks and in user code.
STEP_NAME = re.compile(
    r"ProfilerStep|Optimizer\.step|optimizer[._]?step|\.step#|train_?step|training_step|"
    r"train_batch|train_iter|AssignAddVariableOp|\bstep\b|\biteration\b",
    re.IGNORECASE,
)
#: A key node's period may vary this much (coefficient of variation) and still mark steps: real
#: training steps vary by a few per cent; per-layer ops swing between forward, backward and update.
MAX_PERIOD_CV = 0.25
#: ... and its occurrences must span at least this share of the run.
MIN_COVERAGE = 0.5
_POOL = 30


class Confidence(StrEnum):
    HIGH = "high"  # a step name, >= 3 occurrences, period within 10 %, covers >= 80 %
    MEDIUM = "medium"  # passes the checks
    LOW = "low"  # only two occurrences: the period cannot be checked


@dataclass(frozen=True)
class KeyNodeCandidate:
    name: str
    occurrences: int
    period_cv: float | None  # None with two occurrences
    coverage: float
    confidence: Confidence

    def describe(self) -> str:
        period = "" if self.period_cv is None else f", period varies {self.period_cv:.0%}"
        return (
            f"{self.name!r} ({self.confidence} confidence: {self.occurrences} occurrences"
            f"{period}, covers {self.coverage:.0%} of the run)"
        )


def _pool(run: Run) -> list[str]:
    """Step-like names from ranges and ops, and repeating outermost ranges, most frequent first."""
    tallies: dict[str, int] = {}
    sources: list[tuple[pa.Table | None, str, bool]] = [
        (run.ranges, "name", False),
        (run.ops, "name", True),
        (run.ops, "type", True),
    ]
    for table, col, named_only in sources:
        if table is None or table.num_rows == 0:
            continue
        c = _codes.codes(table.column(col))
        counts = _codes.value_counts(c)
        frequent = np.flatnonzero(counts >= 2)
        outer = set()
        if not named_only and "depth" in table.column_names:
            top = np.asarray(pc.fill_null(table.column("depth"), 0).to_numpy(), np.int64) == 0
            outer = set(np.unique(c.codes[top & (c.codes >= 0)]).tolist())
        for code, value, count in zip(
            frequent.tolist(), c.take(frequent), counts[frequent].tolist(), strict=True
        ):
            if value and (STEP_NAME.search(value) or code in outer):
                tallies[value] = max(tallies.get(value, 0), count)
    ranked = sorted(tallies.items(), key=lambda kv: (-kv[1], kv[0]))
    return [n for n, _ in ranked[:_POOL]]


Occurrences = dict[str, tuple[np.ndarray, np.ndarray]]


def _occurrences_of(run: Run, names: list[str]) -> Occurrences:
    """Start/end times of every pool name, from ONE pass over the ranges and ops: the big tables
    are filtered to the pool's rows once, then each name is cut from the small remainder (30
    scans of a million-row table cost seconds). Same rank rule as ``iterations._occurrences``."""
    wanted = set(names)
    parts: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {n: [] for n in names}
    sources = ((run.ranges, ("name",), "end_ns"), (run.ops, ("name", "type"), "cpu_ns"))
    for table, cols, end_col in sources:
        if table is None or table.num_rows == 0:
            continue
        # only the columns used: filtering a whole wide table copies every column (seconds on
        # millions of ops), and most runs have no null start to drop at all
        table = table.select([*cols, "start_ns", end_col, "process_id"])
        if table.column("start_ns").null_count:
            table = table.filter(pc.is_valid(table.column("start_ns")))
        codes = [_codes.codes(table.column(c)) for c in cols]
        lookups = [{v: i for i, v in enumerate(c.values.to_pylist()) if v in wanted} for c in codes]
        hit = np.zeros(table.num_rows, dtype=bool)
        for c, lk in zip(codes, lookups, strict=True):
            hit |= np.isin(c.codes, np.fromiter(lk.values(), np.int64, len(lk)))
        if not hit.any():
            continue
        sub = table.filter(pa.array(hit))
        st = np.asarray(sub.column("start_ns").to_numpy(), np.int64)
        extra = np.asarray(pc.fill_null(sub.column(end_col), 0).to_numpy(), np.int64)
        en = extra if end_col == "end_ns" else st + extra
        pid = np.asarray(pc.fill_null(sub.column("process_id"), -1).to_numpy(), np.int64)
        sub_codes = [c.codes[hit] for c in codes]
        for n in names:
            m = np.zeros(sub.num_rows, dtype=bool)
            for sc, lk in zip(sub_codes, lookups, strict=True):
                if n in lk:
                    m |= sc == lk[n]
            if m.any():
                parts[n].append((st[m], en[m], pid[m]))
    out: Occurrences = {}
    for n, chunks in parts.items():
        if not chunks:
            continue
        s, e, pid = (np.concatenate(x) for x in zip(*chunks, strict=True))
        values, counts = np.unique(pid, return_counts=True)
        if values.size > 1:  # boundaries from the rank with the most occurrences
            keep = pid == values[np.argmax(counts)]
            s, e = s[keep], e[keep]
        order = np.argsort(s, kind="stable")
        out[n] = (s[order], e[order])
    return out


def _check(
    name: str, occ: tuple[np.ndarray, np.ndarray] | None, span: tuple[int, int]
) -> KeyNodeCandidate | None:
    if occ is None or occ[0].size < 2:
        return None
    starts, ends = occ
    if nested(starts, ends):
        return None  # ranges inside ranges of the same name are not a step (train_step in itself)
    n = int(starts.size)
    coverage = float((ends.max() - starts[0]) / max(1, span[1] - span[0]))
    periods = np.diff(starts).astype(np.float64)
    cv = float(periods.std() / periods.mean()) if n >= 3 and periods.mean() > 0 else None
    if coverage < MIN_COVERAGE or (cv is not None and cv > MAX_PERIOD_CV):
        return None
    if cv is None:
        conf = Confidence.LOW
    elif STEP_NAME.search(name) and cv <= 0.10 and coverage >= 0.8:
        conf = Confidence.HIGH
    else:
        conf = Confidence.MEDIUM
    return KeyNodeCandidate(name, n, cv, min(1.0, coverage), conf)


def validated_candidates(run: Run, limit: int = 3) -> tuple[KeyNodeCandidate, ...]:
    """Names that pass the checks, most confident (then most frequent) first; () when none."""
    span = _span(run)
    if span is None or span[1] <= span[0]:
        return ()
    pool = _pool(run)
    occ = _occurrences_of(run, pool) if pool else {}
    found = [c for n in pool if (c := _check(n, occ.get(n), span)) is not None]
    order = {Confidence.HIGH: 0, Confidence.MEDIUM: 1, Confidence.LOW: 2}
    found.sort(key=lambda c: (order[c.confidence], -c.occurrences, c.name))
    return tuple(found[:limit])
