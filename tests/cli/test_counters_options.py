"""The Nsight Compute counters options of every command: one CSV each, and one that matches no
kernel of the trace is refused the same way by ``report``, ``summary``, ``ingest``, ``check`` and
``diff``; a partial match stays a note."""

from __future__ import annotations

from pathlib import Path

import pytest
from trace_paths import H200_NCU, SAMPLES
from typer.testing import CliRunner

import tcreport.cli.compare_cmds  # noqa: F401  registers diff/check on the app
from tcreport.cli.app import app

runner = CliRunner()
#: A real A100 AlexNet trace and the real H200 CNN's ncu CSV: no kernel name in common.
ALEXNET = SAMPLES / "kineto-a100-tf32-alexnet"
CNN_CSV = H200_NCU / "ncu" / "ncu3_cnn_fp16.csv"
#: The real H200 CNN in fp16, and the ncu CSV of another program on the same GPU (mix.py): 3 of
#: the CNN's 29 kernel names are in it (elementwise kernels both ran).
CNN = H200_NCU / "cnn_fp16"
MIX_CSV = H200_NCU / "ncu" / "ncu3_mix.csv"
WRONG = (
    f"{CNN_CSV}: none of the trace's 16 kernel names is among the 29 this Nsight Compute CSV "
    "profiled (0 of 16 matched); is it from another run?"
)


def _commands(trace: Path, csv: Path, tmp: Path) -> dict[str, list[str]]:
    return {
        "summary": ["summary", str(trace), "--counters", str(csv)],
        "summary --json": ["summary", str(trace), "--json", "--counters", str(csv)],
        "report": ["report", str(trace), "-o", str(tmp / "r.html"), "--counters", str(csv)],
        "ingest": ["ingest", str(trace), "-o", str(tmp / "ingested"), "--counters", str(csv)],
        "check": ["check", str(trace), "--min-tc-share", "0", "--counters", str(csv)],
        "check --baseline": [
            *("check", str(trace), "--baseline", str(trace)),
            *("--counters", str(csv), "--baseline-counters", str(csv)),
        ],
        "diff": ["diff", str(trace), str(trace), "--head-counters", str(csv)],
        "diff base": ["diff", str(trace), str(trace), "--base-counters", str(csv)],
    }


@pytest.mark.parametrize(
    "name",
    [
        "summary",
        "summary --json",
        "report",
        "ingest",
        "check",
        "check --baseline",
        "diff",
        "diff base",
    ],
)
def test_a_csv_matching_no_kernel_is_refused_by_every_command(name: str, tmp_path: Path) -> None:
    result = runner.invoke(app, _commands(ALEXNET, CNN_CSV, tmp_path)[name])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [f"tcreport: error: {WRONG}"]
    assert result.stdout == ""
    assert list(tmp_path.iterdir()) == []  # nothing written, not even half


@pytest.mark.parametrize("name", ["summary", "check", "diff"])
def test_a_partial_match_stays_a_note(name: str, tmp_path: Path) -> None:
    result = runner.invoke(app, _commands(CNN, MIX_CSV, tmp_path)[name])
    assert result.exit_code == 0, result.output
    if name == "summary":
        assert "Nsight Compute counters from ncu3_mix.csv: 3 of 29 kernel names matched" in (
            result.stdout
        )


@pytest.mark.parametrize(
    ("command", "flag"),
    [
        (["summary", str(CNN)], "--counters"),
        (["report", str(CNN), "-o", "-"], "--counters"),
        (["ingest", str(CNN), "-o", "x"], "--counters"),
        (["check", str(CNN), "--min-tc-share", "0"], "--counters"),
        (["check", str(CNN), "--baseline", str(CNN)], "--baseline-counters"),
        (["diff", str(CNN), str(CNN)], "--base-counters"),
        (["diff", str(CNN), str(CNN)], "--head-counters"),
    ],
)
def test_a_counters_option_given_twice_is_refused_naming_it(
    command: list[str], flag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not merged: matching is one CSV's (its conflicting kernels stay unknown, launch i is its
    launch i), so across two files their order would decide; and not the last one kept silently."""
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, [*command, flag, str(MIX_CSV), flag, str(CNN_CSV)])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [
        f"tcreport: error: {flag} given 2 times: it takes one Nsight Compute CSV (profile the "
        "run once with ncu, every kernel in one CSV)"
    ]
    assert list(tmp_path.iterdir()) == []


def test_check_says_how_much_of_the_kernel_time_the_counters_decided() -> None:
    """A gate on a share that counters decided in part is read with their coverage: ``check``
    printed nothing of a CSV that matched 3 of the trace's 29 kernel names (a newcomer's find);
    it prints the run's counters note, as ``summary`` does, and the baseline's, named so."""
    result = runner.invoke(
        app,
        ["check", str(CNN), "--counters", str(MIX_CSV), "--min-tc-share", "0.1"],
    )
    assert result.exit_code == 0, result.output
    notes = [ln for ln in result.stdout.splitlines() if ln.startswith("tcreport check: note: ")]
    assert len(notes) == 1
    assert "Nsight Compute counters from ncu3_mix.csv: 3 of 29 kernel names matched" in notes[0]
    both = runner.invoke(
        app,
        ["check", str(CNN), "--counters", str(CNN_CSV), "--baseline", str(CNN),
         "--baseline-counters", str(MIX_CSV)],
    )  # fmt: skip
    assert both.exit_code == 0, both.output
    assert "tcreport check: note: Nsight Compute counters from ncu3_cnn_fp16.csv" in both.stdout
    assert "note: baseline: Nsight Compute counters from ncu3_mix.csv: 3 of 29" in both.stdout
    plain = runner.invoke(app, ["check", str(CNN), "--min-tc-share", "0.1"])
    assert "note:" not in plain.stdout  # no counters, no note
