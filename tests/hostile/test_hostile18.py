"""Hostile tests of what landed on main up to d6d16b7 (hostile18).

* compute capabilities in any plain spelling (a57ed06): the device table read ``" 8.00 "`` and
  ``"9"`` as Ampere and Hopper, but every output still carried the raw spelling (a heading
  "Ampere (compute capability  8.00 )", ``summary --json``'s ``compute_capability``), and the
  counters compared spellings, not capabilities ("measured on compute capability 9.0, the trace
  ran on 9: kernels may differ");
* ``check``'s counters notes (d6d16b7): the note that the counters were measured on another GPU
  generation than the trace's stayed out of ``check``, though ``summary`` prints it.

Real traces first: the bundled H200 CNN run (fp32, with its own Nsight Compute CSV) and the A100
AlexNet Kineto trace, ingested, their manifest's capability respelt (``*synthetic*`` spellings of a
real run).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trace_paths import H200_NCU, SAMPLES
from typer.testing import CliRunner

import tcreport.cli.compare_cmds  # noqa: F401  registers check on the app
from tcreport import api
from tcreport.cli.app import app

ALEXNET = next((SAMPLES / "kineto-a100-tf32-alexnet").glob("*.json.gz"))
CNN_CSV = H200_NCU / "ncu" / "ncu3_cnn_fp32.csv"
runner = CliRunner()


def _respelt(src: Path, out: Path, cc: str, name: str | None) -> Path:
    """``src`` ingested to ``out`` with every GPU's capability spelt ``cc`` and named ``name``."""
    folder = api.ingest(api.load(src), out)
    manifest = folder / "tcreport-run.json"
    doc = json.loads(manifest.read_text(encoding="utf-8"))
    for g in doc["meta"]["gpus"]:
        g["compute_capability"], g["name"] = cc, name
    manifest.write_text(json.dumps(doc), encoding="utf-8")
    return folder


# -- 1. one capability, one spelling in every output ---------------------------------------------


@pytest.mark.parametrize(("spelt", "canonical"), [(" 8.00 ", "8.0"), ("8", "8.0"), ("08.0", "8.0")])
def test_a_respelt_capability_reads_as_its_plain_spelling_synthetic(
    tmp_path: Path, spelt: str, canonical: str
) -> None:
    """The AlexNet run with no GPU name and its capability respelt: the heading said "Ampere
    (compute capability  8.00 )" (two spaces), the JSON ``" 8.00 "``, where the device table reads
    the capability as 8.0; every output names it as the readers write it."""
    run = _respelt(ALEXNET, tmp_path / "run", spelt, None)
    doc = json.loads(api.render_json(api.analyze(api.load(run))))
    assert doc["system"]["gpu_label"] == f"Ampere (compute capability {canonical})"
    assert [g["compute_capability"] for g in doc["system"]["gpus"]] == [canonical]
    terminal = runner.invoke(app, ["summary", str(run)])
    assert f"Ampere (compute capability {canonical}))" in terminal.stdout


# -- 2. the counters' GPU note -------------------------------------------------------------------


def test_counters_of_the_same_capability_spelt_otherwise_are_no_gpu_mismatch_synthetic(
    tmp_path: Path,
) -> None:
    """The H200 CNN run's manifest saying ``"9"`` for its Hopper, with the counters ncu measured on
    that H200 ("9.0"): the note said "counters were measured on compute capability 9.0, the trace
    ran on 9: kernels may differ"."""
    run = _respelt(H200_NCU / "cnn_fp32", tmp_path / "run", "9", "NVIDIA H200")
    view = api.analyze(api.attach_counters(api.load(run), CNN_CSV))
    assert not [n for n in view.analysis.meta.notes if "kernels may differ" in n]


def test_check_prints_the_counters_gpu_mismatch_as_summary_does_synthetic(tmp_path: Path) -> None:
    """The H200 CNN run relabelled an A100 (8.0), with the H200's counters (9.0): ``summary`` notes
    "counters were measured on compute capability 9.0, the trace ran on 8.0: kernels may differ";
    ``check`` printed the counters' coverage note and not this one, so a gate on counters of
    another GPU read as measured on this one."""
    run = _respelt(H200_NCU / "cnn_fp32", tmp_path / "run", "8.0", "NVIDIA A100-SXM4-80GB")
    args = ["--counters", str(CNN_CSV)]
    summary = runner.invoke(app, ["summary", str(run), *args])
    assert "counters were measured on compute capability 9.0" in summary.stdout
    check = runner.invoke(app, ["check", str(run), *args, "--min-tc-share", "0.1"])
    assert check.exit_code == 0, check.output
    notes = [line for line in check.stdout.splitlines() if line.startswith("tcreport check: note:")]
    assert any("counters were measured on compute capability 9.0" in n for n in notes), notes


# -- 3. a miss under 0.05 % of kernel time, in the words every output uses -----------------------


def test_the_miss_gate_calls_a_tiny_miss_under_0_1_percent_as_summary_does_synthetic() -> None:
    """The real CNN fp16 run with its missed share set to 0.01 % (as the lead's own test of
    ``miss_share_words`` does): ``summary`` says "under 0.1 % of kernel time" (5d1b608), the gate
    said "eligible GPU time not on TC 0.0 % of kernel time", the "0.0 %" that fix removed."""
    import dataclasses

    from tcreport.compare import gates

    view = api.analyze(api.load(H200_NCU / "cnn_fp16"))
    tiny = dataclasses.replace(view.analysis.verdict, eligible_not_tc_share=0.0001)
    view = dataclasses.replace(view, analysis=dataclasses.replace(view.analysis, verdict=tiny))
    assert tiny.miss_share_words == "under 0.1 % of kernel time"
    result = gates.check(view, gates.Gates(max_eligible_not_tc_share=0.1))
    (miss,) = [r for r in result.results if r.name == "max-eligible-not-tc-share"]
    assert "under 0.1 % of kernel time <= maximum 10.0 %" in miss.message, miss.message


def test_the_miss_card_calls_a_tiny_miss_under_0_1_percent_synthetic() -> None:
    """The HTML's miss card read "0.0 % of kernel time; 1 of 4 eligible ops" beside a nonzero
    missed time, where the terminal and Markdown say "under 0.1 % of kernel time"."""
    from tcreport.analysis.sections import verdict
    from tcreport.analysis.vendor import Vendor

    e = verdict._Eligibility(4, 3, 1, 1, 0, 10_000_000, 1_000, 0)
    card = verdict._miss_card(verdict.words_for(Vendor.NVIDIA), e, 0.0001, None, False)
    assert card.detail.startswith("under 0.1 % of kernel time; "), card.detail


# -- 4. a zero regression limit spelt "-0" -------------------------------------------------------


@pytest.mark.parametrize("limit", ["-0", "-0.0"])
def test_a_zero_regression_limit_spelt_minus_zero_reads_0_0(tmp_path: Path, limit: str) -> None:
    """``--max-regression -0`` on the real CNN run against itself: the option's ``>= 0`` check lets
    -0.0 through, and the lines read "limit +-0.0%" and "limit -0.0 points", what a642348 removed
    for "0"."""
    run = api.ingest(api.load(H200_NCU / "cnn_fp32"), tmp_path / "run")
    done = runner.invoke(
        app, ["check", str(run), "--baseline", str(run), "--max-regression", limit]
    )
    assert done.exit_code == 0, done.output
    assert "limit +0.0%" in done.stdout and "limit 0.0 points" in done.stdout, done.stdout
    assert "-0.0" not in done.stdout
