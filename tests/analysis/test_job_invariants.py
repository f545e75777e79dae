"""What must hold for every distributed job (tcreport.analysis.job_invariants): the job's own
figures on the real two-rank job and a synthetic four-rank one, the checker firing on a broken
section, and a rank whose analysis breaks an invariant named by every job output.

The suite runs strictly (tests/conftest.py): every rank's analysis and every job section is
checked inside ``api.analyze_job``; these tests make sure the check is there and is seen.
"""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest
from job_synthetic import write_job
from rich.console import Console
from trace_paths import REALTRACES, need

from tcreport import api
from tcreport.analysis import invariants, job_invariants
from tcreport.analysis.violation import Invariant
from tcreport.job_report import JobReport
from tcreport.model import IterationInfo, Run
from tcreport.render import job_json, job_markdown, terminal

SAMPLED = REALTRACES / "kineto" / "two-rank-sampled"


@pytest.fixture(scope="module")
def synthetic_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthetic 4-rank job whose rank 2 sleeps 20 ms before every backward."""
    folder = tmp_path_factory.mktemp("synthetic-job")
    write_job(folder, 4, slow=(2,), sleep_us=20_000)
    return folder


def _job(folder: Path) -> JobReport:
    job = api.find_job(folder)
    assert job is not None
    return api.analyze_job(job)


@pytest.mark.parametrize("which", ["synthetic", "two-rank-sampled"])
def test_the_synthetic_and_the_real_job_keep_the_job_invariants(
    which: str, synthetic_folder: Path
) -> None:
    """The real job is a case of its own that skips without ../shared, instead of being left out
    of a test that then passed on the synthetic job alone."""
    folder = synthetic_folder if which == "synthetic" else need(SAMPLED)
    jr = _job(folder)
    assert jr.section.cells, folder  # the cell checks had something to check
    assert job_invariants.check(jr.section) == () and jr.section.violations == ()
    assert json.loads(api.render_job_json(jr))["job"]["invariant_violations"] == []


def _broken(jr: JobReport) -> JobReport:
    """The first cell with 1 ns more compute than its span holds: what a bug would give."""
    c = jr.section.cells[0]
    step = dataclasses.replace(c.step, compute_ns=c.step.compute_ns + 1)
    cells = (dataclasses.replace(c, step=step), *jr.section.cells[1:])
    return dataclasses.replace(jr, section=dataclasses.replace(jr.section, cells=cells))


def _outputs(jr: JobReport) -> tuple[str, str, str]:
    console = Console(width=400, record=True, file=io.StringIO())
    terminal.render_job(jr, console)
    return console.export_text(), job_markdown.render(jr), api.render_job_html(jr)


def test_the_job_checker_fires_and_every_job_output_names_the_broken_cell(
    synthetic_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jr = _broken(_job(synthetic_folder))
    found = job_invariants.check(jr.section)
    c = jr.section.cells[0]
    where = f"job.cells[rank {c.rank}, {c.label}]"
    # the parts no longer sum to the span, nor the time outside collectives to its parts
    assert [(v.invariant, v.figure) for v in found] == [
        (Invariant.JOB_CELL_PARTS, where),
        (Invariant.JOB_OWN_TIME, where),
    ]
    with pytest.raises(invariants.InvariantError, match=r"parts sum to"):
        job_invariants.enforce(jr.section, (), jr.source_path)
    monkeypatch.delenv(invariants.STRICT_ENV)  # a user's run: a note in every output
    noted = dataclasses.replace(jr, section=job_invariants.enforce(jr.section, (), "x"))
    doc = json.loads(job_json.render(noted))
    assert doc["job"]["invariant_violations"] == [
        {"invariant": v.invariant.value, "figure": v.figure, "message": v.message} for v in found
    ]
    text, md, page = _outputs(noted)
    for v in found:
        assert f"check failed: {v}" in text
        assert "check failed:" in md and v.message.replace(",", "") in md.replace(",", "")
        assert "Check failed" in page and v.invariant.value in page


def test_a_rank_whose_analysis_breaks_an_invariant_fails_the_job_or_is_named_by_it(
    synthetic_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each rank's analysis runs the run's checker (result.compute); the job keeps what it found
    (only the figures of a rank are kept) and names the rank."""
    from tcreport.analysis import figures

    real = figures.time_figures

    def inflated(run: Run, info: IterationInfo) -> figures.TimeFigures:
        t = real(run, info)
        return dataclasses.replace(t, tc_kernel_ns=(t.gpu_kernel_ns or 0) + 1)

    monkeypatch.setattr(figures, "time_figures", inflated)
    with pytest.raises(invariants.InvariantError, match=r"time\.tc_kernel_ns"):
        _job(synthetic_folder)
    monkeypatch.delenv(invariants.STRICT_ENV)
    jr = _job(synthetic_folder)
    named = {v.figure for v in jr.section.violations if v.invariant is Invariant.TC_WITHIN_KERNEL}
    # each rank's, and the job's sum of them
    assert named == {f"rank {r}: time.tc_kernel_ns" for r in range(4)} | {
        "job.verdict.tc_kernel_ns"
    }
    doc = json.loads(job_json.render(jr))
    assert {v["figure"] for v in doc["job"]["invariant_violations"]} >= named
    text, md, _ = _outputs(jr)
    assert (
        "check failed: rank 2: time.tc_kernel_ns" in text and "rank 2: time.tc\\_kernel\\_ns" in md
    )
