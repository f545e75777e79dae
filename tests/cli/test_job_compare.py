"""``diff`` and ``check`` of distributed jobs: the job's own figures, rank by rank, with the noise
rule of the diff; synthetic jobs (a rank that sleeps 20 ms before its backward, then not)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from job_synthetic import write_job
from typer.testing import CliRunner

from tcreport.cli.app import app

runner = CliRunner()


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("synthetic-jobs")
    write_job(root / "before", 4, slow=(2,))
    write_job(root / "after", 4)
    return root / "before", root / "after"


def test_diff_of_two_jobs_gives_the_job_figures_and_the_ranks(jobs: tuple[Path, Path]) -> None:
    before, after = jobs
    result = runner.invoke(app, ["diff", str(before), str(after), "-f", "json"])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == "tcreport.job-diff/1"
    figures = {f["key"]: f for f in doc["job"]["figures"]}
    assert figures["step_ns"]["delta"] == pytest.approx(-20e6, rel=0.01)
    assert figures["wait_ns"]["verdict"] == "improved" and figures["wait_ns"]["head"] == 0
    slow = next(r for r in doc["job"]["ranks"] if r["rank"] == 2)
    assert slow["base_own_ns"] - slow["head_own_ns"] == pytest.approx(20e6, rel=0.01)
    assert doc["detail"]["schema"] == "tcreport.diff/1"
    md = runner.invoke(app, ["diff", str(before), str(after)])
    assert md.exit_code == 0 and "| Collective wait (median rank) | 20.0 ms | 0 ns |" in md.stdout


def test_diff_refuses_a_job_against_one_trace(jobs: tuple[Path, Path]) -> None:
    before, after = jobs
    one = next(after.glob("*rank-0*"))
    result = runner.invoke(app, ["diff", str(before), str(one)])
    assert result.exit_code == 2 and "compares like with like" in result.stderr


def test_check_gates_the_job_figures(jobs: tuple[Path, Path]) -> None:
    before, after = jobs
    ok = runner.invoke(app, ["check", str(after), "--min-tc-share", "0.8"])
    assert ok.exit_code == 0 and "OK: 1 gate passed" in ok.stdout
    low = runner.invoke(app, ["check", str(before), "--min-tc-share", "0.8"])
    assert low.exit_code == 1
    assert "job TC share 60.0 % < minimum 80.0 %; lowest rank 0 at 54.5 %" in low.stdout
    worse = runner.invoke(app, ["check", str(before), "--baseline", str(after)])
    assert (
        worse.exit_code == 1
        and "FAIL max-regression: job step time 35.1 ms -> 55.1 ms" in worse.stdout
    )
    one = next(after.glob("*rank-0*"))
    mixed = runner.invoke(app, ["check", str(before), "--baseline", str(one)])
    assert mixed.exit_code == 2 and "must be a job too" in mixed.stderr


def _break_rank_kernels(path: Path) -> None:
    """Every kernel of one rank ends before it starts: the reader skips them (a damaged rank)."""
    import gzip

    with gzip.open(path, "rt") as fh:
        doc = json.load(fh)
    for e in doc["traceEvents"]:
        if e["cat"] == "kernel":
            e["dur"] = -5
    with gzip.open(path, "wt") as fh:
        json.dump(doc, fh)


def test_job_diff_compares_the_ranks_timed_on_both_sides(tmp_path: Path) -> None:
    """Base's straggler (rank 2) is damaged in base: the job figures are ranks 0 and 1's on both
    sides, rank 2 is 'unknown' (present, untimed on one side), and rank 0 is diffed in full."""
    base_paths = write_job(tmp_path / "base", 3, slow=(2,))
    _break_rank_kernels(base_paths[2])
    write_job(tmp_path / "head", 3, slow=(2,))
    result = runner.invoke(
        app, ["diff", str(tmp_path / "base"), str(tmp_path / "head"), "-f", "json"]
    )
    assert result.exit_code == 0, result.stderr
    job = json.loads(result.stdout)["job"]
    figures = {f["key"]: f for f in job["figures"]}
    assert figures["gpu_kernel_ns"]["base"] == figures["gpu_kernel_ns"]["head"]
    assert {r["rank"]: r["verdict"] for r in job["ranks"]}[2] == "unknown"
    notes = " ".join(job["notes"])
    assert "rank 2 in base" in notes and "(ranks 0, 1)" in notes
    assert "rank 0 is diffed in full" in notes


def test_a_job_gate_at_its_limit_shows_the_digits_that_tell_them_apart() -> None:
    """A newcomer read "job TC share 60.0 % < minimum 60.0 %" for the bundled 2-rank export
    (59.97 %): the job gates now word their figures as a single run's gates do (gates.apart)."""
    from trace_paths import SAMPLES

    job = SAMPLES / "nsys-h100x2-bf16"
    failed = runner.invoke(app, ["check", str(job), "--min-tc-share", "0.6"])
    assert failed.exit_code == 1
    assert "job TC share 59.97 % < minimum 60.00 %" in failed.stdout
    passed = runner.invoke(app, ["check", str(job), "--min-tc-share", "0.5997"])
    assert passed.exit_code == 0 and "59.973 % >= minimum 59.970 %" in passed.stdout


def test_a_jobs_tiny_miss_gate_reads_under_0_1_percent_as_a_runs_does() -> None:
    """hostile18: the run's gate says "under 0.1 %" for a miss that rounds to 0.0 %; the job's
    printed "0.0 %" (gates.miss_apart, one wording for both)."""
    from tcreport.compare import gates

    assert gates.miss_apart(0.0001, 0.1) == ("under 0.1 %", "10.0 %")
    assert gates.miss_apart(0.0, 0.1) == ("0.0 %", "10.0 %")  # none missed: a measured zero
    assert gates.miss_apart(0.05, 0.1) == ("5.0 %", "10.0 %")
