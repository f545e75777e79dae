"""HTA's step figures, the tolerance tcreport's must meet and tcreport's figures in HTA's terms
(tests/realtraces/test_hta_oracle.py for one rank of ../shared, test_hta_oracle_h200.py for the
H200 sample traces, tests/analysis/test_jobs.py for the ranks of a job): shared here so no test
imports another."""

from __future__ import annotations

import re

from tcreport.analysis.steps import StepRow
from tcreport.model import Run

#: Figures must equal HTA 0.5's within 0.5 % (1 ns for zeros).
TOLERANCE = 0.005
FIGURES = ("span", "idle", "compute_union", "comm_union", "mem_union")
SPLIT = ("idle_host_wait", "idle_kernel_wait", "idle_other")


def _close(mine: float, hta: float) -> bool:
    return abs(mine - hta) <= max(TOLERANCE * abs(hta), 1e-3)  # 1 ns for zeros


def _hta(ranks: dict[str, dict[str, float]], key: str) -> dict[str, float]:
    """HTA's figures for a key, without Kineto's cuda_sync events where the trace has them."""
    return ranks.get(f"{key}_without_cuda_sync", ranks[key])


def _step_numbers(run: Run) -> list[int]:
    """``ProfilerStep#N`` numbers in start order: tcreport's iteration k is the k-th."""
    assert run.ranges is not None
    seen = {
        (r["start_ns"], int(m.group(1)))
        for r in run.ranges.select(["name", "start_ns"]).to_pylist()
        if (m := re.fullmatch(r"ProfilerStep#(\d+)", r["name"]))
    }
    return [n for _, n in sorted(seen)]


def _mine(s: StepRow) -> dict[str, float]:
    """tcreport's figures in HTA's terms, µs. Compute is every compute category: compute wins
    overlapped time in the sweep, so its time is the union of compute kernels."""
    out = {
        "span": s.span_ns,
        "idle": s.idle_launch_ns + s.idle_host_ns,
        "compute_union": s.tc_compute_ns + s.other_compute_ns + s.unknown_compute_ns,
        "comm_union": s.communication_total_ns,
        "mem_union": s.memory_total_ns,
    }
    if s.idle_queue is not None:
        out.update(zip(SPLIT, s.idle_queue, strict=True))
    return {k: v / 1e3 for k, v in out.items()}


def _compare(mine: dict[str, float], hta: dict[str, float], where: str) -> None:
    for key in FIGURES:
        assert _close(mine[key], hta[key]), f"{where} {key}: tcreport {mine[key]} HTA {hta[key]}"
    split = [hta.get(k, 0.0) for k in SPLIT]
    if _close(sum(split), hta["idle"]):  # one busy stream at a time: HTA's split is the GPU's
        for key, value in zip(SPLIT, split, strict=True):
            assert _close(mine[key], value), f"{where} {key}: tcreport {mine[key]} HTA {value}"
