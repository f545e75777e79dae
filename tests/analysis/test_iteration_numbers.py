"""Iteration numbers mean what the command the user would type means (issue 25, a newcomer's
round). The report counts a trace's iterations from 0 (``report --iter-start``), while
``profile --iter-start`` counts the script's steps, which ``ProfilerStep#N`` labels carry: the
warm-up finding names both, flags the same row the iteration table flags, and a ``profile`` run's
trailing ``ProfilerStep#N`` stub past the steps it kept is not counted as a step. Synthetic
Kineto traces (CPU-only, as a GPU-less ``profile`` writes them) with the step numbers a
``profile --iter-start 10`` run leaves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import tcreport
from tcreport import api
from tcreport.analysis import result
from tcreport.rules import evaluate


def _steps_trace_synthetic(path: Path, durations_us: list[float], first: int) -> Path:
    """``ProfilerStep#first``... one per duration, each holding one ``aten::mm`` of 80 % of it."""
    events: list[dict[str, Any]] = []
    t = 1000.0
    for i, dur in enumerate(durations_us):
        events.append(
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{first + i}", "pid": 1,
             "tid": 1, "ts": t, "dur": dur}
        )  # fmt: skip
        events.append(
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t + 1,
             "dur": dur * 0.8, "args": {"Input type": ["float", "float"]}}
        )  # fmt: skip
        t += dur + 5
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}), encoding="utf-8")
    return path


def _it002(path: Path, **opts: Any) -> list[Any]:
    a = result.compute(api.load(path), api.Slice(**opts))
    return [f for f in evaluate(a) if f.id == "IT002"]


def test_warmup_names_the_trace_index_and_the_scripts_step(tmp_path: Path) -> None:
    trace = _steps_trace_synthetic(tmp_path / "w.pt.trace.json", [5000, 500, 520, 510], first=10)
    (f,) = _it002(trace)
    assert f.title.startswith("Iteration 0 (ProfilerStep#10) is ")
    fix = f.fix or ""
    assert "--iter-start 1 when re-reading this trace (`tcreport report`)" in fix
    assert "`tcreport profile --iter-start 11` to record from the script's step 11" in fix
    # the trace's index is what `report --iter-start` means: from 1 the warm-up is gone
    assert not _it002(trace, iter_start=1)


def test_warmup_without_step_labels_keeps_the_plain_index(tmp_path: Path) -> None:
    trace = _steps_trace_synthetic(tmp_path / "w.pt.trace.json", [5000, 500, 520, 510], first=0)
    (f,) = _it002(trace)
    assert f.title.startswith("Iteration 0 is ")
    assert "--iter-start 1 (or profile" in (f.fix or "")


def test_the_warmup_iteration_is_the_tables_outlier_too(tmp_path: Path) -> None:
    """Three iterations: enough for the warm-up rule, too few for the table's median rule; the
    newcomer saw IT002 name iteration 0 while ``.iterations`` said outlier=False."""
    trace = _steps_trace_synthetic(tmp_path / "w.pt.trace.json", [5000, 500, 520], first=10)
    (f,) = _it002(trace)
    table = tcreport.open(trace).iterations
    flagged = table.loc[table["outlier"].astype(bool), "iteration"].tolist()
    assert flagged == [int(f.evidence[0].key)] == [0]


def test_a_profile_runs_trailing_step_stub_is_not_a_step(tmp_path: Path) -> None:
    """``profile --iter-start 25`` on a 30-step script keeps steps 25-29 (its sidecar's window);
    torch.profiler still opens a ``ProfilerStep#30`` as the script ends: a stub, not a step."""
    trace = _steps_trace_synthetic(
        tmp_path / "train.pt.trace.json", [900, 880, 910, 905, 890, 300], first=25
    )
    assert result.compute(api.load(trace)).iterations.info.total == 6  # no sidecar: the trace's
    sidecar = {"format": 1, "backend": "torch", "trace": trace.name, "window": [25, 29]}
    (tmp_path / "tcreport-capture.json").write_text(json.dumps(sidecar), encoding="utf-8")
    info = result.compute(api.load(trace)).iterations.info
    assert (info.total, info.aggregated) == (5, 5)
    hostile = {**sidecar, "window": "25-29"}  # tcreport's own file, but input: ignored if odd
    (tmp_path / "tcreport-capture.json").write_text(json.dumps(hostile), encoding="utf-8")
    assert result.compute(api.load(trace)).iterations.info.total == 6
