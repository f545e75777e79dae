"""The straggler's line: the kernel named beside the compute part it explains is stated on the
part's basis (per iteration, against the other ranks' per-iteration median) and is never said to
"lead" a part smaller than itself.

Hand-built rank figures (``synthetic``): three ranks of one iteration whose straggler computes
4 ms more outside collectives in net while one kernel of its own runs 30 ms longer than the others'
(the rest of its compute ran shorter). The real two-rank job checks the same on a real file.
"""

from __future__ import annotations

import re

import pytest
from trace_paths import REALTRACES

from tcreport import api
from tcreport.analysis.job_cells import aligned, cells
from tcreport.analysis.job_ranks import NameTime, RankFigures, RankStep
from tcreport.analysis.job_straggler import Straggler, straggler

MS = 1_000_000
SAMPLED = REALTRACES / "kineto" / "two-rank-sampled"


def _step(i: int, compute_ms: int) -> RankStep:
    """One aggregated iteration: ``compute_ms`` of compute, then a 10 ms collective."""
    c = compute_ms * MS
    return RankStep(i, None, True, c + 10 * MS, None, c, c, 10 * MS, 10 * MS, 0, 0, 0, 0, None)


def _rank(rank: int, compute_ms: list[int], kernels: dict[str, int]) -> RankFigures:
    steps = tuple(_step(i, ms) for i, ms in enumerate(compute_ms))
    names = tuple(NameTime(n, ms * MS) for n, ms in kernels.items())
    return RankFigures(
        rank, f"rank{rank}.json", None, "NVIDIA H100", 0, 1, "Tensor Cores", 0, 0, 0, 0, 0,
        None, len(steps), steps, names, (), None,
    )  # fmt: skip


def _straggler(ranks: list[RankFigures]) -> Straggler:
    order, keyed, _ = aligned(ranks)
    cs, rows = cells(order, keyed)
    s = straggler(ranks, cs, rows)
    assert s is not None
    return s


def _led(text: str) -> float | None:
    """The figure of ``led by NAME (+X ms)``, in ms; None where no kernel is said to lead."""
    m = re.search(r"led by .+ \(\+([\d.]+) ms\)", text)
    return float(m.group(1)) if m else None


def test_a_kernel_beyond_the_compute_part_is_not_said_to_lead_it_synthetic() -> None:
    others = [_rank(r, [20], {"gemm": 20}) for r in (0, 2)]
    slow = _rank(1, [24], {"gemm": 0, "renamed_gemm": 24})  # its kernel: +24 ms, its compute: +4
    s = _straggler([others[0], slow, others[1]])
    (compute,) = [p for p in s.parts if p.name.startswith("compute")]
    assert s.rank == 1 and compute.excess_ns == 4 * MS
    assert s.kernels[0].name == "renamed_gemm" and s.kernels[0].excess_ns == 24 * MS
    assert _led(s.text) is None, s.text
    assert "renamed_gemm alone +24.0 ms, more than the part" in s.text


def test_a_kernel_within_the_compute_part_leads_it_synthetic() -> None:
    others = [_rank(r, [20], {"gemm": 20}) for r in (0, 2)]
    slow = _rank(1, [26], {"gemm": 20, "extra": 6})
    s = _straggler([others[0], slow, others[1]])
    assert _led(s.text) == 6.0, s.text


def test_kernel_excess_is_per_iteration_of_each_rank_synthetic() -> None:
    """The straggler aggregated two iterations and the others one: the same 20 ms of GEMM per
    iteration is no excess, though its total is twice theirs."""
    others = [_rank(r, [20], {"gemm": 20}) for r in (0, 2)]
    slow = _rank(1, [20, 20], {"gemm": 40, "extra": 4})
    slow = RankFigures(**{**slow.__dict__, "steps": (_step(0, 24), _step(1, 20))})
    s = _straggler([others[0], slow, others[1]])
    assert [k.name for k in s.kernels] == ["extra"]
    assert s.kernels[0].excess_ns == 2 * MS  # 4 ms over two iterations


@pytest.mark.skipif(not SAMPLED.exists(), reason="needs ../shared/realtraces")
def test_the_real_stragglers_lead_kernel_fits_in_its_part() -> None:
    s = api.analyze_job(SAMPLED).section.straggler
    assert s is not None
    (compute,) = [p for p in s.parts if p.name.startswith("compute")]
    led = _led(s.text)
    assert led is not None and led * MS <= compute.excess_ns + 0.05 * MS, s.text
