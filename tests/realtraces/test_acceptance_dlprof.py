"""Issue #2 acceptance: DLProf's own figures for the v1.8 run, from every form of its output.

The CSV folder, the Viewer database and (once its reader lands) the raw Nsight Systems export of
the same run must give the numbers DLProf printed in dlprof_summary.csv / dlprof_tensor_core.csv.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tcreport.cli import app

runner = CliRunner()


def _summary(path: Path) -> dict[str, Any]:  # the summary JSON (docs: SUMMARY-JSON.md)
    result = runner.invoke(app, ["summary", str(path), "--json"])
    assert result.exit_code == 0, result.stderr
    summary: dict[str, Any] = json.loads(result.stdout)
    return summary


def _tc_report(folder: Path) -> dict[str, int]:
    with (folder / "dlprof_tensor_core.csv").open(newline="") as fh:
        rows = list(csv.reader(fh))[1:]
    header, body = rows[0], rows[1:]
    name, gpu = header.index("Op Name"), header.index("Total GPU Time (ns)")
    return {r[name]: int(r[gpu]) for r in body}


@pytest.mark.parametrize("form", ["csv-folder", "viewer-db"])
def test_dlprof_figures(dlprof_cnn: Path, form: str) -> None:
    path = dlprof_cnn if form == "csv-folder" else dlprof_cnn / "dlprof_dldb_7.sqlite"
    s = _summary(path)
    assert s["source"]["format"] == ("dlprof-csv" if form == "csv-folder" else "dlprof-sqlite")
    assert s["time"]["gpu_kernel_ns"] == 589147
    assert s["time"]["memory_ns"] == 66690
    assert s["time"]["tc_kernel_ns"] == 0
    assert s["time"]["wall_ns"] == 2840562182
    assert s["tensor_core"]["eligible_op_count"] == 5
    assert s["tensor_core"]["using_op_count"] == 0
    assert s["iterations"]["total"] == 1
    assert [g["name"] for g in s["system"]["gpus"]] == ["NVIDIA GeForce RTX 2070 SUPER"]
    ops = {o["name"]: o for o in s["ops"]}
    for name, gpu_ns in _tc_report(dlprof_cnn).items():
        assert ops[name]["gpu_ns"] == gpu_ns, name
        assert ops[name]["tc_eligible"] is True and ops[name]["uses_tc"] is False
    assert s["findings"][0]["id"] == "TC001"  # the AMP advice DLProf's expert system also gave
    assert "dlprof:amp_detector" in {f["id"] for f in s["findings"]}


def test_summary_only_folder_gives_what_the_summary_holds(dlprof_cnn: Path, tmp_path: Path) -> None:
    shutil.copy(dlprof_cnn / "dlprof_summary.csv", tmp_path)
    s = _summary(tmp_path)
    assert s["time"] == {
        "gpu_kernel_ns": 589147,
        "memory_ns": 66690,
        "tc_kernel_ns": 0,
        "wall_ns": 2840562182,
    }
    tc = s["tensor_core"]
    assert (tc["eligible_op_count"], tc["using_op_count"], tc["eligible_not_using_op_count"]) == (
        5,
        0,
        5,
    )
    assert tc["eligible_not_using_gpu_ns"] == 572668  # DLProf's own figure, as printed
    assert tc["kernel_time_share"] == 0.0
    assert tc["classified_kernel_time_share"] is None  # no kernel rows: unknown, not 0
    assert s["ops"] == [] and s["kernels"] == []
    assert s["iterations"]["total"] == 1


def test_report_renders_every_section(dlprof_cnn: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = runner.invoke(app, ["report", str(dlprof_cnn), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    html = out.read_text()
    for anchor in ('id="findings"', 'id="eligibility"', 'id="ops"', 'id="kernels"', 'id="system"'):
        assert anchor in html
    assert "NVIDIA GeForce RTX 2070 SUPER" in html
    assert "volta_sgemm_32x32_sliced1x4_tn" in html


def test_ingest_then_report_without_reparsing(dlprof_cnn: Path, tmp_path: Path) -> None:
    out = tmp_path / "ingested"
    result = runner.invoke(
        app, ["ingest", str(dlprof_cnn / "dlprof_dldb_7.sqlite"), "-o", str(out)]
    )
    assert result.exit_code == 0, result.stderr
    direct = _summary(dlprof_cnn / "dlprof_dldb_7.sqlite")
    again = _summary(out)
    assert again["source"]["format"] == "dlprof-sqlite"  # provenance survives the round trip
    for key in ("time", "tensor_core", "ops", "kernels", "findings", "iterations", "system"):
        assert again[key] == direct[key], key
