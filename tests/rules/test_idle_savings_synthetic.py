"""Findings that give GPU idle back never claim more idle than the steps had.

GP001 (low utilisation, naming the host work the GPU waited for) and the stall findings
(ST001-ST003) can see the same gap: one that opens when a readback lands (the host waited for the
GPU: ST001's) and that the host then spends drawing the next batch (its midpoint under
``aten::normal_``: GP001's named host work). The analysis gives that gap to the stall
(:attr:`tcreport.analysis.host_wait.HostWait.claim_ns`); GP001 claims only the named idle left.
Checked on a synthetic trace built to overlap, and on every real trace."""

from __future__ import annotations

from pathlib import Path

import pytest
from kineto_synthetic import KERNEL, Trace
from trace_paths import H200_NCU, REALTRACES

from tcreport import api
from tcreport.report import Report
from tcreport.rules import IDLE_SAVINGS

STEP = 4000  # µs
READBACK = "Memcpy DtoH (Device -> Pageable)"


def _readback_then_random_batch(path: Path, steps: int = 5) -> Path:
    """Each step: a 500 µs matmul, ``loss.item()`` reading 4 bytes back (the host waits for the
    GPU to drain), then 3.2 ms in ``aten::normal_`` drawing the next batch on the CPU while the GPU
    idles until the next step's matmul."""
    t = Trace()
    for k in range(steps):
        b = k * STEP
        t.step(k + 1, b, STEP)
        mm = t.op("aten::mm", b + 10, 30)
        t.launch("cudaLaunchKernel", b + 20, "kernel", KERNEL, b + 100, 500, eid=mm)
        t.op("aten::item", b + 60, 570)
        dense = t.op("aten::_local_scalar_dense", b + 70, 555)
        t.launch("cudaMemcpyAsync", b + 80, "gpu_memcpy", READBACK, b + 610, 5, eid=dense,
                 nbytes=4)  # fmt: skip
        t.op("aten::normal_", b + 700, 3250)
    return t.write(path)


def _idle_per_device(report: Report) -> float:
    """The aggregated steps' GPU idle, per GPU: inside each step's span (launch- and host-bound)
    and between it and the next step."""
    a = report.analysis
    info = a.iterations.info
    lo, hi = info.start or 0, info.stop if info.stop is not None else 1 << 31
    rows = [s for s in a.steps.rows if lo <= s.iteration <= hi]
    idle = sum(
        s.idle_launch_ns + s.idle_host_ns + (s.between.idle_ns if s.between else 0) for s in rows
    )
    return idle / max(1, len({s.device_id for s in rows}))


def _idle_wall(report: Report) -> float:
    """The wall time of the aggregated range in which an average GPU computed nothing: the idle
    that exists (the data-loader form of GP001 claims up to it; it holds the steps' leading and
    trailing idle too, so it can be more than the steps' own)."""
    busy = report.analysis.time.busy
    if busy is None or busy.idle_wall_ns is None:
        return _idle_per_device(report)
    return max(busy.idle_wall_ns, _idle_per_device(report))


def _claimed(report: Report) -> int:
    return sum(f.estimated_saving_ns or 0 for f in report.findings if f.id in IDLE_SAVINGS)


def test_gp001_leaves_the_readbacks_idle_to_st001_synthetic(tmp_path: Path) -> None:
    report = api.analyze(api.load(_readback_then_random_batch(tmp_path / "sync_synthetic.json.gz")))
    found = {f.id: f for f in report.findings}
    gp, st = found["GP001"], found["ST001"]
    hw = report.analysis.steps.host_wait
    assert hw is not None and hw.causes[0].name == "aten::normal_"
    assert hw.stalled_ns > 0 and hw.claim_ns < hw.named_idle_ns
    assert gp.estimated_saving_ns == hw.claim_ns
    assert "left to them" in (gp.assumptions or "")
    assert (gp.estimated_saving_ns or 0) + (st.estimated_saving_ns or 0) <= _idle_per_device(report)
    assert _claimed(report) <= _idle_wall(report)


def _real_traces() -> list[Path]:
    found = sorted(p for p in REALTRACES.rglob("*.json.gz"))
    found += sorted(REALTRACES.rglob("*.sqlite"))
    found += [H200_NCU / f for f in ("cnn_fp32", "cnn_fp16", "cnn_bf16fixed")]
    return [p for p in found if p.exists()]


@pytest.mark.slow
@pytest.mark.parametrize("path", _real_traces(), ids=lambda p: p.name)
def test_idle_savings_never_sum_past_the_idle_on_real_traces(path: Path) -> None:
    report = api.analyze(api.load(path))
    if not report.analysis.steps.rows:
        pytest.skip("no step breakdown: no idle is measured")
    assert _claimed(report) <= _idle_wall(report) + 1
