"""The step analysis runs in a second thread on big runs and in the caller's thread on small ones
(``analysis.result.SMALL_RUN``): both give the same analysis, field for field.

The real traces in the tests are all below the threshold, so the threaded path is forced here."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from trace_paths import SAMPLES

from tcreport import ingest
from tcreport.analysis import result

NSYS_SAMPLE = SAMPLES / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"
KINETO_SAMPLE = next((SAMPLES / "kineto-a100-tf32-alexnet").glob("*.json.gz"))


@pytest.mark.parametrize("path", [NSYS_SAMPLE, KINETO_SAMPLE], ids=["nsys", "kineto"])
def test_the_threaded_and_the_inline_step_analysis_agree(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = ingest.load(path)
    assert run.kernels is not None and 0 < run.kernels.num_rows < result.SMALL_RUN
    threads: list[str] = []
    steps = result._steps

    def spied(*args: object, **kwargs: object) -> object:
        threads.append(threading.current_thread().name)
        return steps(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(result, "_steps", spied)
    inline = result.compute(run, with_timeline=True)
    monkeypatch.setattr(result, "SMALL_RUN", 0)
    threaded = result.compute(run, with_timeline=True)
    assert threads[0] == "MainThread" and threads[1].startswith("tcreport-steps")
    assert threaded == inline
