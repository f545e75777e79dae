"""HTA's step figures and the tolerance tcreport's must meet (tests/realtraces/test_hta_oracle.py for one
rank, tests/analysis/test_jobs.py for the ranks of a job): shared here so neither test imports the other."""

from __future__ import annotations

#: Figures must equal HTA 0.5's within 0.5 % (1 ns for zeros).
TOLERANCE = 0.005
FIGURES = ("span", "idle", "compute_union", "comm_union", "mem_union")
SPLIT = ("idle_host_wait", "idle_kernel_wait", "idle_other")


def _close(mine: float, hta: float) -> bool:
    return abs(mine - hta) <= max(TOLERANCE * abs(hta), 1e-3)  # 1 ns for zeros


def _hta(ranks: dict[str, dict[str, float]], key: str) -> dict[str, float]:
    """HTA's figures for a key, without Kineto's cuda_sync events where the trace has them."""
    return ranks.get(f"{key}_without_cuda_sync", ranks[key])
