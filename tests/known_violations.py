"""Invariant violations real traces show today, each with what is fixing it.

The test suite and the fuzzer run the analysis strictly (``TCREPORT_STRICT_INVARIANTS``): a
violation is an error, except the ones listed here, which stay notes in the outputs so the tests
that read those traces for something else keep running. The invariant test over every real trace
marks exactly these cases ``xfail(strict=True)``: when the fix lands they pass, the mark fails,
and the entry goes. Never add an entry to make a new violation pass: fix it.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Open:
    invariant: str  # tcreport.analysis.violation.Invariant's id
    trace: str  # a glob of the trace's file name
    why: str  # what is wrong and what is fixing it
    whole_run: bool  # False: only a slice of the run (a key node) breaks it


#: None today. The two the invariant checker found first (iteration windows overlapping on the V100
#: legacy ResNet-50 trace and on the 2x H100 export cut by a key node) went with the steps rework:
#: every GPU event joins the step that launched it and each GPU's step windows are cut disjoint.
OPEN: tuple[Open, ...] = ()


def environ() -> dict[str, str]:
    """The environment that makes the analysis strict, with the open violations above."""
    return {
        "TCREPORT_STRICT_INVARIANTS": "1",
        "TCREPORT_OPEN_VIOLATIONS": ",".join(f"{o.invariant}@{o.trace}" for o in OPEN),
    }


@contextlib.contextmanager
def lenient() -> Iterator[None]:
    """Violations as notes for the duration: for generated or hand-broken inputs that are
    inconsistent on purpose (op GPU time without kernels, negative host durations), where the
    test is about something else and asserts the notes itself where it matters."""
    saved = os.environ.pop("TCREPORT_STRICT_INVARIANTS", None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ["TCREPORT_STRICT_INVARIANTS"] = saved


def reason(trace_name: str, *, whole_run: bool = True) -> str | None:
    """Why ``trace_name`` (whole, or cut by a key node) breaks an invariant today, or ``None``
    when it should not."""
    hits = [
        o.why
        for o in OPEN
        if fnmatch.fnmatchcase(trace_name, o.trace) and (o.whole_run or not whole_run)
    ]
    return "; ".join(hits) or None
