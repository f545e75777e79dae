"""Findings about a distributed job as a whole: rules that read the job section, not one rank.

Each rank's own findings come from :data:`tcreport.rules.REGISTRY` as for any trace; what only
the ranks side by side show (a straggler the others wait for) is judged here, one module per rule
with a stable id, like the single-run rules. Savings are the job's time: clamped to the compared
iterations' step time and stated per iteration and as a share of it, as the registry does for a
run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from tcreport.analysis.job import JobSection
from tcreport.rules import dj001_collective_wait
from tcreport.rules.base import SEVERITY_ORDER, Finding

JobRule = Callable[[JobSection], list[Finding]]

#: rule id -> rule, sorted by id.
JOB_REGISTRY: dict[str, JobRule] = {
    "DJ001": dj001_collective_wait.check,
}


def _normalise(f: Finding, job: JobSection) -> Finding:
    ns = f.estimated_saving_ns
    n = len(job.iterations)
    total = int(job.step_ns * n) if job.step_ns else None
    if ns is None:
        return f
    ns = max(0, ns) if total is None else min(max(0, ns), total)
    return dataclasses.replace(
        f,
        estimated_saving_ns=ns,
        saving_share=min(1.0, ns / total) if total else None,
        saving_per_iteration_ns=ns // n if n else None,
        saving_iterations=n or None,
    )


def evaluate(job: JobSection) -> tuple[Finding, ...]:
    found = [_normalise(f, job) for rule in JOB_REGISTRY.values() for f in rule(job)]
    found.sort(key=lambda f: (-(f.estimated_saving_ns or 0), SEVERITY_ORDER[f.severity], f.id))
    return tuple(found)
