"""Hostile tests of what landed on main after 01ab7dd's parents (hostile17).

* ingest folders' manifest checks (7b33032): a damaged manifest is one ``InputError`` naming the
  file, never a traceback;
* the share gates' words (b70083e, ``gates.apart``): the figure and the limit are told apart
  whenever they differ, for a run and for the real two-rank job;
* the diff's terminal tables (6f46f5a, ``fmt.middles``): look-alike names kept apart fit their
  column in cells, wide (CJK) names too.

Real traces first: the bundled H200 CNN run (its ingest folder holds a model audit) and the bundled
2x H100 Nsight Systems job; damaged manifests and limits are ``*synthetic*``.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest
from trace_paths import H200_NCU, SAMPLES
from typer.testing import CliRunner

import tcreport.cli.compare_cmds  # noqa: F401  registers diff on the app
from tcreport import api, fmt
from tcreport.cli.app import app
from tcreport.errors import InputError

JOB = SAMPLES / "nsys-h100x2-bf16"
ALEXNET = next((SAMPLES / "kineto-a100-tf32-alexnet").glob("*.json.gz"))

# -- 1. a manifest nested past Python's recursion limit -------------------------------------------


def test_a_deeply_nested_manifest_is_an_input_error_synthetic(tmp_path: Path) -> None:
    """The real CNN run's ingest folder with its first layer's ``dims`` nested 100,000 lists deep:
    ``json.loads`` raised RecursionError, a traceback out of ``summary``, where every other
    unreadable manifest is one line naming the file."""
    out = api.ingest(api.load(H200_NCU / "cnn_fp16"), tmp_path / "run")
    manifest = out / "tcreport-run.json"
    doc = json.loads(manifest.read_text(encoding="utf-8"))
    doc["meta"]["audit"]["layers"][0]["dims"] = "@@deep@@"
    text = json.dumps(doc).replace('"@@deep@@"', "[" * 100_000 + "]" * 100_000)
    manifest.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        api.load(out)
    msg = str(info.value)
    assert "tcreport-run.json" in msg and "\n" not in msg


# -- 2. the share gates tell the figure and its limit apart -------------------------------------


def _limits(share: float) -> list[float]:
    """Limits a hair above and below ``share``: a copied figure, a nudged one (``*synthetic*``)."""
    return [
        math.nextafter(share, 1.0),
        math.nextafter(share, 0.0),
        share + 1e-7,
        share - 1e-7,
        share + 1e-9,
        share - 1e-9,
    ]


def _told_apart(message: str, rel: str) -> None:
    """``message`` holds 'X % <rel> (minimum|maximum) Y %' with X and Y different."""
    head, _, tail = message.partition(f" {rel} ")
    shown = head.rsplit(" ", 2)[-2]
    bound = tail.split(" ")[1]
    assert shown != bound, message


@pytest.mark.parametrize("limit_of", range(6))
def test_the_jobs_share_gate_tells_a_limit_beside_its_share_apart_synthetic(limit_of: int) -> None:
    """The real job's TC share (59.9727...%) against a limit a hair away: 'job TC share 59.9727 %
    < minimum 59.9727 %' contradicted the verdict it explains, which gates.apart exists to stop."""
    jr = api.analyze_job(JOB)
    share = jr.section.verdict.tc_share
    assert share is not None
    limit = _limits(share)[limit_of]
    (r,) = api.check_job(jr, min_tc_share=limit).results
    assert r.passed is (share >= limit)
    _told_apart(r.message, ">=" if r.passed else "<")


@pytest.mark.parametrize("limit_of", range(6))
def test_a_runs_share_gate_tells_a_limit_beside_its_share_apart_synthetic(limit_of: int) -> None:
    """The same for a run (the real A100 AlexNet trace): its gates share gates.apart."""
    view = api.analyze(api.load(ALEXNET))
    share = view.analysis.verdict.tc_share
    assert share is not None
    limit = _limits(share)[limit_of]
    (r,) = api.check(view, min_tc_share=limit).results
    assert r.passed is (share >= limit)
    _told_apart(r.message, ">=" if r.passed else "<")


# -- 3. names windowed apart fit their column in cells, wide (CJK) names too ---------------------


def test_wide_names_kept_apart_fit_their_column_synthetic() -> None:
    """fmt.middles keeps look-alike names apart with a window on where they differ; it cut the
    window by characters, so two CJK names that differ in one character came out at twice the
    column's cells (the terminal then cuts off the end) and lost the character between them."""
    a, b = "层" * 30 + "甲" + "层" * 30, "层" * 30 + "乙" + "层" * 30
    for width in (10, 20, 30, 40, 57):
        short = fmt.middles([a, b], width)
        assert all(fmt.cells(s) <= width for s in short), (width, short)
        assert "甲" in short[0] and "乙" in short[1], (width, short)
    c = "x" * 5 + "层" * 40
    for width in range(8, 60):
        short = fmt.middles([c + "1" + c, c + "2" + c, c + "1" + c + "z"], width)
        assert all(fmt.cells(s) <= width for s in short), (width, short)
        assert len(set(short)) == 3, (width, short)


def _cjk_kernels(src: Path, dst: Path) -> Path:
    """The real H200 CNN Kineto trace with each kernel named '层' * 30 + its first 12 characters +
    '层' * 30 (``*synthetic*``): names that shorten alike, of wide characters."""
    doc = json.loads(gzip.decompress(src.read_bytes()))
    pad = "层" * 30
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            e["name"] = pad + e["name"][:12] + pad
    dst.write_text(json.dumps(doc), encoding="utf-8")
    return dst


@pytest.mark.parametrize("columns", [120, 160, 200])  # at 80 the figures alone are wider
def test_a_diffs_kernel_table_of_wide_names_fits_the_terminal_synthetic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    """The real fp32 -> mixed-precision CNN diff with CJK-padded kernel names: at 120 columns its
    kernel rows ran to 144-150 cells."""
    base = _cjk_kernels(
        H200_NCU / "cnn_fp32" / "torch_cnn.pt.trace.json.gz", tmp_path / "b_synthetic.json"
    )
    head = _cjk_kernels(H200_NCU / "mix" / "kineto_mix_h.json.gz", tmp_path / "h_synthetic.json")
    monkeypatch.setenv("COLUMNS", str(columns))
    result = CliRunner().invoke(app, ["diff", str(base), str(head), "-f", "terminal"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Kernels: "))
    rows = lines[start + 2 : lines.index("", start) if "" in lines[start:] else None]
    assert len(rows) >= 10
    assert all(fmt.cells(r) <= columns for r in rows), max(fmt.cells(r) for r in rows)
    names = [r.split("  ")[0] for r in rows]
    assert len(set(names)) == len(names), names
