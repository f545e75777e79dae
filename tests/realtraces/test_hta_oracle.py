"""The step breakdown against HolisticTraceAnalysis on every real Kineto trace in ../shared.

Per rank and per iteration, tcreport's span, idle, compute, communication and memory must equal
HTA 0.5's (``HTA_DISABLE_NS_ROUNDING=1``) within 0.5 %, and so must the idle split in HTA's
vocabulary (host wait, kernel wait, other) where HTA's per-stream split is the GPU's (one busy
stream at a time). HTA's figures come from ``hta-oracle.json`` beside the trace where ../shared
has one, else from ``tests/fixtures/hta_oracles/`` (computed once by ``make_hta_oracle.py`` there,
with HTA in a scratch environment: CI does not need HTA). Each definition that differs is in
docs/report.md ("Step time against HolisticTraceAnalysis") and is tested here as stated:

* HTA drops the last step of a trace; tcreport keeps it (only HTA's steps are compared);
* HTA counts Kineto's ``cuda_sync`` events as GPU activity; tcreport does not (compared with HTA's
  figures without them, ``*_without_cuda_sync``);
* HTA puts in a step only GPU events on a stream > 0; the ROCm trace runs on stream 0, so HTA
  has its whole-run figures only, compared with tcreport's whole-run breakdown.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hta_figures import _compare, _hta, _mine, _step_numbers
from trace_paths import REALTRACES, ROOT

from tcreport import api
from tcreport.analysis import activity, steps

FIXTURES = ROOT / "tests" / "fixtures" / "hta_oracles"
KINETO = sorted((REALTRACES / "kineto").glob("*/*.json.gz")) if REALTRACES.exists() else []

pytestmark = pytest.mark.skipif(not KINETO, reason="needs ../shared/realtraces/kineto")


def _fixture(path: Path) -> dict[str, Any]:
    name = f"{path.parent.name}__{path.name.removesuffix('.json.gz')}.json"
    loaded: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return loaded


def _ranks(path: Path) -> dict[str, dict[str, float]]:
    ranks: dict[str, dict[str, float]] = _fixture(path)["ranks"]
    return ranks


@pytest.mark.parametrize("path", KINETO, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_step_breakdown_equals_hta_per_rank_and_iteration(path: Path) -> None:
    ranks = _ranks(path)
    run = api.load(path)
    a = api.analyze(run).analysis
    numbers = _step_numbers(run)
    iters = {k: v for k, v in ranks.items() if re.fullmatch(r"rank\d+_iter\d+", k)}
    assert len({s.device_id for s in a.steps.rows}) == 1  # one rank, one GPU per trace
    if iters:
        # HTA drops the last step (the profiler stops inside it): tcreport has one more
        assert len(iters) == len(numbers) - 1 or len(numbers) == 1
        for key in iters:
            n = int(key.rsplit("iter", 1)[1])
            (row,) = [s for s in a.steps.rows if s.iteration == numbers.index(n)]
            _compare(_mine(row), _hta(ranks, key), f"{path.name} step #{n}")
        return
    # No step HTA could assign (no ProfilerStep, or GPU events on stream 0): the whole run
    (key,) = [k for k in ranks if re.fullmatch(r"rank\d+_all", k)]
    act = activity.collect(run.kernels, run.memory)
    (whole,) = steps.breakdown(act, whole_run=True)
    _compare(_mine(whole), _hta(ranks, key), f"{path.name} whole run")


@pytest.mark.parametrize(
    "path", [p for p in KINETO if (p.parent / "hta-oracle.json").exists()], ids=lambda p: p.name
)
def test_fixture_script_reproduces_the_shared_oracles(path: Path) -> None:
    """``make_hta_oracle.py`` gives the figures of the ``hta-oracle.json`` files in ../shared
    (computed by someone else with HTA 0.5.0): the fixtures of the other traces were made the
    same way."""
    shared = json.loads((path.parent / "hta-oracle.json").read_text())["ranks"]
    mine = _ranks(path)
    assert mine and set(mine) <= set(shared) | {k for k in mine if k.endswith("_cuda_sync")}
    for key, figures in mine.items():
        for name, value in figures.items():
            if name in shared[key]:
                assert value == pytest.approx(shared[key][name], abs=1e-3), (key, name)


def test_fixtures_name_the_hta_version_and_command() -> None:
    for path in sorted(FIXTURES.glob("*.json")):
        d = json.loads(path.read_text())
        assert d["versions"]["HolisticTraceAnalysis"] == "0.5.0"
        assert "HTA_DISABLE_NS_ROUNDING=1" in d["command"] and "make_hta_oracle.py" in d["command"]
        assert d["ranks"]


def test_hta_counts_cuda_sync_events_and_tcreport_does_not() -> None:
    """The documented difference, as measured on the A100 AlexNet trace: with HTA's
    ``cuda_sync`` events (41 Stream Sync / Context Sync / Stream Wait Event) the span is 0.58 %
    longer and compute 7 µs more (Stream Wait Event is compute to HTA's name rule)."""
    (path,) = [p for p in KINETO if p.parent.name == "a100-tf32-alexnet"]
    ranks = _ranks(path)
    with_sync, without = ranks["rank0_all"], ranks["rank0_all_without_cuda_sync"]
    assert with_sync["n"] - without["n"] == 41
    assert (
        with_sync["span"] > without["span"]
        and with_sync["compute_union"] > without["compute_union"]
    )
