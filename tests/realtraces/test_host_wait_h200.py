"""The GPU's wait for the host on the real H200 runs of examples/torch_cnn.py.

The script draws its synthetic batch with ``torch.randn`` on the CPU each step, so on every run of
``sample_traces/h200-torch-cnn-ncu`` the GPU idles most of each step between steps while the host
is in ``aten::normal_``; the step breakdown names it (``steps[].between``). Low utilisation (GP001)
must say so with the same figures, and point the fix at that host work, not at a DataLoader in
general. The figures are the steps' own, added up: each step's ``between`` over the steps with a
GPU step time (the last step's wait after its work is not in the trace).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from trace_paths import H200_NCU

from tcreport import api
from tcreport.report import Report

CNN = ("cnn_fp32", "cnn_fp16", "cnn_bf16fixed")


def _view(folder: str) -> Report:
    path: Path = H200_NCU / folder
    if not path.exists():
        pytest.skip(f"{path} is not in this checkout")
    return api.analyze(api.load(path), api.Slice())


@pytest.mark.parametrize("folder", CNN)
def test_the_wait_is_the_steps_between_idle_under_aten_normal(folder: str) -> None:
    view = _view(folder)
    hw = view.analysis.steps.host_wait
    assert hw is not None and hw.dominant
    top = hw.causes[0]
    assert (top.name, top.kind, top.work) == ("aten::normal_", "host range", "random data")
    measured = [r for r in view.analysis.steps.rows if r.window_ns is not None]
    assert hw.steps == len(measured) == 3
    under = [r.between.idle_ns for r in measured if r.between and r.between.name == top.name]
    under += [c.idle_ns for r in measured for c in r.host_causes if c.name == top.name]
    assert top.idle_ns == sum(under)
    assert top.idle_per_step_ns == pytest.approx(sum(under) / 3)
    assert top.step_share == pytest.approx(sum(under) / sum(r.window_ns or 0 for r in measured))


@pytest.mark.parametrize(
    ("folder", "per_step", "share", "step"),
    [("cnn_fp16", "11.0 ms", "68.0%", "16.2 ms"), ("cnn_bf16fixed", "24.0 ms", "72.0%", "33.4 ms")],
)
def test_gp001_names_the_host_op_with_its_idle_per_step(
    folder: str, per_step: str, share: str, step: str
) -> None:
    """~11 ms of each float16 step and ~24 ms of each bfloat16 one: the title says it, the detail
    names the step time, the saving is the measured wait, and the fix is about making the batch."""
    view = _view(folder)
    (gp,) = [f for f in view.findings if f.id == "GP001"]
    assert gp.title.startswith(
        f"The GPU waits for the host in aten::normal_ {per_step} per step ({share} of the step)"
    )
    assert f"GPU step time {step} each" in gp.detail
    hw = view.analysis.steps.host_wait
    assert hw is not None and gp.estimated_saving_ns == hw.causes[0].idle_ns
    assert "does not show what the GPU waited for" not in (gp.assumptions or "")
    fix = gp.fix or ""
    assert fix.startswith("Take aten::normal_ off the step's critical path.")
    assert "device='cuda'" in fix and "num_workers" in fix and "torch.cuda.Stream" in fix
    assert any(e.key == "aten::normal_" for e in gp.evidence)


def test_the_wait_is_what_to_fix_first_on_the_float16_run() -> None:
    """33 ms of the 69.5 ms range waits on the host's randn; the layout conversions (CV003) cost
    2.2 ms of GPU time: the headline's "fix first" is the wait."""
    view = _view("cnn_fp16")
    assert view.fix_first is not None and view.fix_first.id == "GP001"
