"""The step breakdown against HolisticTraceAnalysis on the H200 traces of the project's own.

``sample_traces/h200-torch-cnn-ncu`` holds PyTorch profiler traces recorded by this project on
an H200; the ``hta-oracle.json`` beside each is HTA 0.5.0's figures (``HTA_DISABLE_NS_ROUNDING=1``,
``tests/fixtures/hta_oracles/make_hta_oracle.py --without-gpu-step-annotations``; the folder's
README says how and when). Same figures, same tolerance as ``test_hta_oracle.py``, with one more
definition that differs (docs/report.md, "Step time against HolisticTraceAnalysis"):

* Kineto wrote a GPU-side copy of the first step annotation (``gpu_user_annotation``
  ``ProfilerStep#2``, 50 ms) that covers the GPU work of every later step. HTA cuts iterations at
  every event named ``ProfilerStep#N``, that one included, so on the trace as recorded it sees one
  iteration, #2, holding the GPU events of steps #2-#4; tcreport cuts at the host's steps only.
  So tcreport's steps #2-#4 taken as one equal HTA's iteration #2 as recorded, and each step equals
  HTA's figures of the trace without those GPU-side copies (``*_without_gpu_step_annotation``).
* The ``mix`` trace has no ``ProfilerStep``: HTA's whole-run figures, tcreport's whole run.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hta_figures import _compare, _mine, _step_numbers
from trace_paths import H200_NCU

from tcreport import api
from tcreport.analysis import activity, steps

CNN = ("cnn_fp32", "cnn_fp16", "cnn_bf16fixed")
EDITED = "_without_gpu_step_annotation"
STEP_KEY = re.compile(r"rank0_iter(\d+)")


def _trace(folder: str) -> Path:
    (path,) = (H200_NCU / folder).glob("*.json.gz")
    return path


def _oracle(folder: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((H200_NCU / folder / "hta-oracle.json").read_text())
    return loaded


def _steps_of(ranks: dict[str, dict[str, float]], suffix: str) -> list[int]:
    """The ProfilerStep numbers HTA gave figures for, under keys ending in ``suffix``."""
    found = (STEP_KEY.fullmatch(k.removesuffix(suffix)) for k in ranks if k.endswith(suffix))
    return sorted(int(m.group(1)) for m in found if m)


@pytest.mark.parametrize("folder", CNN)
def test_each_step_equals_hta_without_the_gpu_step_annotations(folder: str) -> None:
    """Per step: span, idle, compute, communication, memory and the idle split of each of HTA's
    steps (all but the last) equal tcreport's within 0.5 %."""
    ranks = _oracle(folder)["ranks"]
    run = api.load(_trace(folder))
    rows = api.analyze(run).analysis.steps.rows
    numbers = _step_numbers(run)
    assert numbers == [2, 3, 4, 5]
    assert _steps_of(ranks, EDITED) == numbers[:-1]  # HTA drops the last step
    for n in numbers[:-1]:
        (row,) = [s for s in rows if s.iteration == numbers.index(n)]
        _compare(_mine(row), ranks[f"rank0_iter{n}{EDITED}"], f"{folder} step #{n}")


@pytest.mark.parametrize("folder", CNN)
def test_htas_one_iteration_as_recorded_is_tcreports_steps_taken_together(folder: str) -> None:
    """As recorded, HTA has one iteration (#2) holding every GPU event of steps #2-#4; tcreport's
    breakdown of those steps relabelled as one step gives HTA's figures."""
    ranks = _oracle(folder)["ranks"]
    assert _steps_of(ranks, "") == [2]
    merged = ranks["rank0_iter2"]
    per_step = _steps_of(ranks, EDITED)
    assert merged["n"] == sum(ranks[f"rank0_iter{n}{EDITED}"]["n"] for n in per_step)
    run = api.load(_trace(folder))
    act = activity.collect(run.kernels, run.memory)
    assert act is not None
    inside = np.isin(act.iteration, per_step)  # activity carries the ProfilerStep number
    act = dataclasses.replace(act, iteration=np.where(inside, 0, -1).astype(np.int32))
    (one,) = steps.breakdown(act, run.ranges, run.ops)
    _compare(_mine(one), merged, f"{folder} steps #{per_step[0]}-#{per_step[-1]} as one")
    assert len(api.analyze(run).analysis.steps.rows) == len(per_step) + 1


def test_the_mix_trace_without_steps_equals_htas_whole_run() -> None:
    ranks = _oracle("mix")["ranks"]
    assert list(ranks) == ["rank0_all"]  # no ProfilerStep: HTA has no iteration
    run = api.load(_trace("mix"))
    act = activity.collect(run.kernels, run.memory)
    (whole,) = steps.breakdown(act, whole_run=True)
    _compare(_mine(whole), ranks["rank0_all"], "kineto_mix_h whole run")


@pytest.mark.parametrize("folder", (*CNN, "mix"))
def test_oracles_name_the_hta_version_command_and_trace(folder: str) -> None:
    d = _oracle(folder)
    assert d["versions"]["HolisticTraceAnalysis"] == "0.5.0"
    assert d["trace"] == _trace(folder).name
    assert d["command"].startswith("HTA_DISABLE_NS_ROUNDING=1 python tests/fixtures/hta_oracles/")
    assert d["command"].endswith(
        f"--without-gpu-step-annotations {_trace(folder).relative_to(H200_NCU.parents[1])}"
    )
