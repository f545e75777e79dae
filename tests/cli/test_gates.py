"""``tcreport check``: CI gates, an OK (exit 0) or FAILED (exit 1) line, then one line per gate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from synthetic import synthetic_run
from trace_paths import DLPROF_CNN, H200_NCU, SAMPLES, need
from typer.testing import CliRunner

import tcreport.cli.compare_cmds  # noqa: F401  registers diff/check on the app
from tcreport import api
from tcreport.cli.app import app
from tcreport.compare import gates

runner = CliRunner()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The synthetic fp32 and bf16 runs as 'tcreport ingest' folders, so the CLI can read them."""
    root = tmp_path_factory.mktemp("gates")
    return {p: api.ingest(synthetic_run(p), root / p) for p in ("fp32", "bf16")}


def _lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip()]


def test_passing_gates_print_ok_then_each_gate_with_its_figure_and_limit(
    runs: dict[str, Path],
) -> None:
    result = runner.invoke(
        app,
        [
            "check",
            str(runs["bf16"]),
            "--min-tc-share",
            "0.5",
            "--max-eligible-not-tc-share",
            "0.1",
            "--baseline",
            str(runs["fp32"]),
            "--max-regression",
            "0.05",
        ],
    )
    assert result.exit_code == 0, result.output
    assert _lines(result.stdout) == [
        "tcreport check: OK: 6 gates passed",
        "tcreport check: pass min-tc-share: TC share 92.3 % >= minimum 50.0 %",
        "tcreport check: pass max-eligible-not-tc-share: eligible GPU time not on TC 0.0 % of "
        "kernel time <= maximum 10.0 %",
        "tcreport check: pass max-regression: GPU kernel time per iteration 155.0 µs -> 65.0 µs "
        "(-58.1%; limit +5.0%)",
        "tcreport check: pass max-regression: wall time per iteration 304.0 µs -> 304.0 µs "
        "(+0.0%; limit +5.0%)",
        "tcreport check: pass max-regression: TC share 0.0 % -> 92.3 % (+92.3 points; "
        "limit -5.0 points)",
        "tcreport check: pass max-regression: no op that ran on Tensor Cores in the baseline "
        "lost them",
    ]


def test_failed_gates_print_failed_then_each_gate_and_exit_1(runs: dict[str, Path]) -> None:
    result = runner.invoke(
        app,
        [
            "check",
            str(runs["fp32"]),
            "--min-tc-share",
            "0.5",
            "--max-eligible-not-tc-share",
            "0.1",
            "--baseline",
            str(runs["bf16"]),
            "--max-regression",
            "0.05",
        ],
    )
    assert result.exit_code == 1
    head, *lines = _lines(result.stdout)
    assert head == "tcreport check: FAILED: 5 of 6 gates failed"
    assert len(lines) == 6, lines
    assert lines[0] == "tcreport check: FAIL min-tc-share: TC share 0.0 % < minimum 50.0 %"
    assert lines[1].startswith("tcreport check: FAIL max-eligible-not-tc-share: ")
    assert "+138.5%" in lines[2] and "limit +5.0%" in lines[2]
    assert lines[3].startswith("tcreport check: pass max-regression: wall time per iteration")
    assert "-92.3 points" in lines[4]
    assert lines[5] == (
        "tcreport check: FAIL max-regression: 2 ops ran on Tensor Cores in the baseline and "
        "no longer do: model/fc1/linear, model/fc2/linear"
    )


def test_a_failed_run_names_the_gates_it_passed_too(runs: dict[str, Path]) -> None:
    result = runner.invoke(
        app,
        ["check", str(runs["fp32"]), "--min-tc-share", "0", "--max-eligible-not-tc-share", "0.5"],
    )
    assert result.exit_code == 1
    assert _lines(result.stdout) == [
        "tcreport check: FAILED: 1 of 2 gates failed",
        "tcreport check: pass min-tc-share: TC share 0.0 % >= minimum 0.0 %",
        "tcreport check: FAIL max-eligible-not-tc-share: eligible GPU time not on TC 96.8 % of "
        "kernel time > maximum 50.0 %",
    ]


def test_a_job_names_its_gates_as_a_trace_does() -> None:
    """The bundled 2-rank Nsight Systems job, gated on the job's own figures."""
    job = SAMPLES / "nsys-h100x2-bf16"
    args = ["check", str(job), "--min-tc-share", "0.1", "--max-eligible-not-tc-share", "0.01"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert _lines(result.stdout) == [
        "tcreport check: OK: 2 gates passed",
        "tcreport check: pass min-tc-share: job TC share 60.0 % >= minimum 10.0 %; "
        "lowest rank 1 at 58.3 %",
        "tcreport check: pass max-eligible-not-tc-share: eligible GPU time not on TC 0.0 % of "
        "all ranks' kernel time <= maximum 1.0 %",
    ]


def test_baseline_alone_gates_any_regression_beyond_noise(runs: dict[str, Path]) -> None:
    same = runner.invoke(app, ["check", str(runs["fp32"]), "--baseline", str(runs["fp32"])])
    assert same.exit_code == 0, same.output
    worse = runner.invoke(app, ["check", str(runs["fp32"]), "--baseline", str(runs["bf16"])])
    assert worse.exit_code == 1


def test_unknown_share_fails_the_gate() -> None:
    view = api.analyze(synthetic_run("fp32").replace(kernels=None, ops=None))
    result = gates.check(view, gates.Gates(min_tc_share=0.1))
    assert not result.passed
    assert "unknown" in result.failures[0].message


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-regression", "0.1"], "--max-regression needs --baseline"),
        ([], "no gate given"),
    ],
)
def test_usage_errors_exit_2(runs: dict[str, Path], args: list[str], message: str) -> None:
    result = runner.invoke(app, ["check", str(runs["fp32"]), *args])
    assert result.exit_code == 2
    assert message in result.stderr


MIX = H200_NCU / "mix" / "kineto_mix_h.json.gz"
MIX_NCU = H200_NCU / "ncu" / "ncu3_mix.csv"


def test_check_and_diff_take_counters_as_summary_does() -> None:
    """The real H200 mix trace: by kernel names 18.5 % on Tensor Cores (tile_product, a Triton
    tl.dot kernel, unknown); with its ncu CSV the counters decide it, 21.3 %. A gate at 20 %
    fails without the counters and passes with them; diff reads each side's CSV."""
    gate = ["check", str(MIX), "--min-tc-share", "0.2"]
    assert runner.invoke(app, gate).exit_code == 1
    with_counters = runner.invoke(app, [*gate, "--counters", str(MIX_NCU)])
    assert with_counters.exit_code == 0, with_counters.output
    both = ["--baseline", str(MIX), "--baseline-counters", str(MIX_NCU)]
    assert runner.invoke(app, [*gate, "--counters", str(MIX_NCU), *both]).exit_code == 0
    lone = runner.invoke(app, [*gate, "--baseline-counters", str(MIX_NCU)])
    assert lone.exit_code == 2 and "--baseline-counters needs --baseline" in lone.output
    diff = runner.invoke(
        app, ["diff", str(MIX), str(MIX), "-f", "json", "--head-counters", str(MIX_NCU)]
    )
    assert diff.exit_code == 0, diff.output
    share = {f["key"]: f for f in json.loads(diff.stdout)["figures"]}["tc_share"]
    assert share["base"] == pytest.approx(0.1853, abs=1e-4)
    assert share["head"] == pytest.approx(0.2131, abs=1e-4)


def test_regression_gate_does_not_judge_counters_against_names() -> None:
    """The same real trace, counters on the baseline only: the share moves 21.3 % -> 18.5 % by
    method alone, so the gate neither passes it nor calls it a regression; it says why."""
    args = ["check", str(MIX), "--baseline", str(MIX), "--max-regression", "0.01"]
    result = runner.invoke(app, [*args, "--baseline-counters", str(MIX_NCU)])
    assert result.exit_code == 1, result.output
    said = "FAIL max-regression: not judged: Tensor Core use measured by Nsight Compute counters"
    assert f"{said} in base" in result.output, result.output
    both = runner.invoke(
        app, [*args, "--baseline-counters", str(MIX_NCU), "--counters", str(MIX_NCU)]
    )
    assert both.exit_code == 0, both.output


def test_counters_of_a_job_are_refused_naming_the_flag() -> None:
    job = SAMPLES / "nsys-h100x2-bf16"
    r = runner.invoke(app, ["diff", str(job), str(job), "--base-counters", str(MIX_NCU)])
    assert r.exit_code == 2 and "--base-counters takes one trace's" in r.output


def test_faster_kernels_in_a_slower_step_fail_max_regression() -> None:
    """cnn_bf16fixed against cnn_fp16 (real H200 runs): kernel time per iteration fell 28.7 %
    but the step doubled (the host now waits on its own random batch); ``diff`` names it, and a
    CI gate that passed it would pass a run that trains at half the speed."""
    base, head = H200_NCU / "cnn_fp16", H200_NCU / "cnn_bf16fixed"
    args = ["check", str(head), "--baseline", str(base), "--max-regression", "0.05"]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert "FAIL max-regression: wall time per iteration 17.4 ms -> 35.0 ms (+101.4%" in (
        result.stdout
    )
    assert "pass max-regression: GPU kernel time per iteration 2.0 ms -> 1.4 ms" in result.stdout


@pytest.mark.realtraces
def test_wall_times_of_two_measures_are_shown_not_judged(tmp_path: Path) -> None:
    """The DLProf CNN's CSVs with and without dlprof_summary.csv: one run's wall time is DLProf's
    Wall Clock Time (2.8 s) on one side and its kernels' span (5.1 ms) on the other. The gate says
    it does not compare them and passes; diff shows both values with no verdict and a note."""
    full = need(DLPROF_CNN)
    partial = tmp_path / "no_summary_synthetic"
    partial.mkdir()
    for csv in full.glob("dlprof_*.csv"):
        if csv.name != "dlprof_summary.csv":
            (partial / csv.name).write_bytes(csv.read_bytes())
    args = ["check", str(partial), "--baseline", str(full), "--max-regression", "0.05"]
    result = runner.invoke(app, [*args, "--force"])
    assert result.exit_code == 0, result.output
    said = (
        "pass max-regression: wall time not compared: the base's is DLProf v1.8.0's own wall time"
    )
    assert said in result.stdout and "first to last GPU activity" in result.stdout
    base, head = (api.analyze(api.load(p)) for p in (full, partial))
    d = api.diff(base, head, force=True)
    wall = d.figure("wall_ns")
    assert (wall.base, wall.head) == (2_840_562_182, 5_090_959)
    assert wall.verdict.value == "unknown" and d.wall_not_judged in d.notes
    same = api.diff(head, head, force=True)  # one measure on both sides: judged as before
    assert same.figure("wall_ns").verdict.value == "no change" and not same.wall_not_judged


def test_a_zero_regression_limit_reads_0_0_points_not_minus_0_0() -> None:
    """``--baseline`` alone gates at 0: the share's limit read "limit -0.0 points" (hostile17)."""
    from trace_paths import SAMPLES

    job = SAMPLES / "nsys-h100x2-bf16"
    result = runner.invoke(app, ["check", str(job), "--baseline", str(job)])
    assert result.exit_code == 0, result.output
    assert "limit 0.0 points)" in result.stdout and "-0.0 points" not in result.stdout
