"""A CPU-only PyTorch run's host shares: one definition for the headline and the rows. PyTorch
records an op's time with its callees (``aten::linear`` holds ``aten::addmm``), so the rows used to
sum to several times the headline and a row's share was of that sum, not of the host time shown
above it. A row's host time is now its self time, checked against PyTorch's own
``key_averages()`` self CPU time (the oracle), and the rows add up to the headline exactly.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

try:
    import torch
except ImportError:
    if os.environ.get("TCREPORT_REQUIRE_TORCH") == "1":
        raise
    pytest.skip("needs PyTorch (pip install torch==2.13.0)", allow_module_level=True)

from tcreport import api  # noqa: E402
from tcreport.analysis import result  # noqa: E402


def _profile(path: Path) -> dict[str, float]:
    """A tiny MLP trained 4 steps under torch.profiler (CPU); the profiler's self CPU time per
    op name in µs. Each step is a ``train_step`` range, so the analysis cuts the run at the
    steps' starts and aggregates every op the oracle counts: without it, on a loaded machine,
    a repeating range that opens after the first forward (``Optimizer.zero_grad``) could qualify
    as the iteration marker, and the first forward (its slow first addmm) fell before
    iteration 0 (a flaky 6 of 8 calls)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 96), torch.nn.ReLU(), torch.nn.Linear(96, 8))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 64)
    acts = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(4):
            with torch.profiler.record_function("train_step"):
                loss = model(x).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
    prof.export_chrome_trace(str(path))
    return {e.key: float(e.self_cpu_time_total) for e in prof.key_averages()}


def test_host_rows_are_self_time_and_sum_to_the_headline(tmp_path: Path) -> None:
    oracle = _profile(tmp_path / "mlp.pt.trace.json")
    a = result.compute(api.load(tmp_path / "mlp.pt.trace.json"))
    host = a.host
    assert a.iterations.info.aggregated == 4  # every step, each opened by its train_step range
    assert host.cpu_only and host.total is not None
    assert sum(r.cpu_ns for r in host.ops) == host.total.ns  # every row, nested time once
    assert sum(r.cpu_ns for r in host.op_types) == host.total.ns
    assert abs(sum(r.share or 0 for r in host.ops) - 1) < 1e-9
    for r in host.ops:
        assert r.share == pytest.approx(r.cpu_ns / host.total.ns)
        assert r.cpu_ns <= r.inclusive_ns
    # the wrapper holds its callee: its inclusive time is the larger, its self time the smaller
    rows = {r.name: r for r in host.ops}
    assert rows["aten::linear"].inclusive_ns >= rows["aten::addmm"].inclusive_ns
    assert rows["aten::linear"].cpu_ns < rows["aten::addmm"].cpu_ns
    # the oracle: PyTorch's own self CPU time per op (µs in the trace: a µs per call, rounded)
    checked = 0
    for r in host.ops[:8]:
        if r.name in oracle:
            assert r.cpu_ns / 1000 == pytest.approx(oracle[r.name], rel=0.02, abs=2 * r.calls), r
            checked += 1
    assert checked >= 5
