"""Hostile reproductions (branch hostile11) against the changes since f64a199: the quick exit and
``say()``, the NVTX text CAST, ``diff``'s terminal tables, ``check``'s gate lines, the idle the
findings claim, and the ``tcreport.api`` split. Each is marked xfail(strict=True) until its fix
flips it. Inputs are the bundled H200 and A100 samples and the real traces beside the checkout;
mutated copies of them are named *synthetic*."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from trace_paths import H200_NCU, REALTRACES, SAMPLES

from tcreport import api
from tcreport.compare import diff as compare
from tcreport.ingest.nsys import db as _nsys_db
from tcreport.ingest.nsys import reader as nsys_sqlite
from tcreport.render import diff_terminal
from tcreport.render.diff_markdown import row_delta, side_ns
from tcreport.rules import IDLE_SAVINGS
from tcreport.schema import TableKind

FP16, BF16 = H200_NCU / "cnn_fp16", H200_NCU / "cnn_bf16fixed"
ALEXNET = SAMPLES / "kineto-a100-tf32-alexnet" / "benchmark_result_2869224_1695835535_trace.json.gz"
BERT = (
    REALTRACES
    / "kineto"
    / "h100-bf16-bert-small"
    / "gaunernst_bert-small-uncased__1016001.redacted.json.gz"
)
CNN_NSYS = REALTRACES / "dlprof" / "v1.8-pytorch-cnn" / "nsys_profile.sqlite"
SGEMM = "ampere_sgemm_32x32_sliced1x4_tn"  # 6 launches in the A100 AlexNet trace


def _diff_text(base: Path, head: Path) -> tuple[compare.Diff, str]:
    d = compare.diff(
        api.analyze(api.load(base), source_path=str(base)),
        api.analyze(api.load(head), source_path=str(head)),
    )
    return d, diff_terminal.render(d, "0.1.0")


def _renamed_alexnet_synthetic(path: Path, name: str, scale: float) -> Path:
    """The A100 AlexNet trace with its sgemm kernel renamed and its durations scaled."""
    with gzip.open(ALEXNET, "rt") as fh:
        doc = json.load(fh)
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel" and e.get("name") == SGEMM:
            e["name"] = name
            e["dur"] = e["dur"] * scale
    path.write_text(json.dumps(doc))
    return path


def _command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tcreport", *args],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=300,
        check=False,
    )


# --- diff -f terminal --------------------------------------------------------------------------


def _renamed_pair(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """The AlexNet trace with its heaviest kernel renamed, as base and as a head twice as fast."""
    base = _renamed_alexnet_synthetic(tmp_path / "base_synthetic.json", name, 1.0)
    return base, _renamed_alexnet_synthetic(tmp_path / "head_synthetic.json", name, 0.5)


def _figures_whole(row: Any, text: str) -> None:
    """A changed row's base, head and delta cells appear whole in the terminal text."""
    for cell in (side_ns(row, "base"), side_ns(row, "head"), row_delta(row)):
        assert cell in text, cell


def test_diff_terminal_keeps_figures_whole_at_80_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    d, text = _diff_text(FP16, BF16)
    kernels = [r for r in d.kernels if r.verdict.value not in ("noise", "no change")][:5]
    assert kernels
    for r in kernels:
        _figures_whole(r, text)


def test_diff_terminal_wide_name_keeps_figures_whole_synthetic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    name = "核心" + "核" * 60
    d, text = _diff_text(*_renamed_pair(tmp_path, name))
    (row,) = (r for r in d.kernels if r.key == name)
    _figures_whole(row, text)


def test_diff_terminal_line_separator_in_a_name_keeps_one_row_synthetic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    name = "ampere\u2028INJECTED_sgemm"
    _, text = _diff_text(*_renamed_pair(tmp_path, name))
    rows = [ln for ln in text.splitlines() if ln.startswith("ampere")]
    assert rows and all("present" in ln for ln in rows), rows  # name and figures on one line


def test_job_diff_terminal_keeps_rank_figures_whole_at_80_columns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from typer.testing import CliRunner

    import tcreport.cli.compare_cmds  # noqa: F401  registers diff on the app
    from tcreport.cli.app import app

    monkeypatch.setenv("COLUMNS", "80")
    job = SAMPLES / "nsys-h100x2-bf16"
    result = CliRunner().invoke(app, ["diff", str(job), str(job), "-f", "terminal"])
    assert result.exit_code == 0, result.output
    assert "299.3 ms → 299.3 ms" in result.stdout
    assert "61.7 % → 61.7 %" in result.stdout


# --- check's gate lines ------------------------------------------------------------------------


def test_check_failing_gate_line_shows_why() -> None:
    share = api.analyze(api.load(FP16)).analysis.verdict.eligible_not_tc_share
    assert share is not None
    limit = share - 0.0002  # just below: the gate fails
    done = subprocess.run(
        [sys.executable, "-m", "tcreport", "check", "--max-eligible-not-tc-share", str(limit)]
        + [str(FP16)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stdout
    (line,) = (ln for ln in done.stdout.splitlines() if "FAIL max-eligible" in ln)
    measured, limit_text = line.split(" of kernel time > maximum ")
    assert measured.rsplit(" ", 2)[-2] != limit_text.split(" ")[0], line


# --- counters that match no kernel ------------------------------------------------------------


def test_a_csv_of_another_program_is_not_blamed_on_mangling_synthetic(tmp_path: Path) -> None:
    import csv

    src = H200_NCU / "ncu" / "ncu3_cnn_fp16.csv"
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    head = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    rows = list(csv.reader(lines[head:]))
    k = rows[0].index("Kernel Name")
    for r in rows[1:]:
        r[k] = "another_programs_kernel"  # every row another program's kernel
    path = tmp_path / "another_program_synthetic.csv"
    with path.open("w", encoding="utf-8", newline="") as fh:
        fh.writelines(lines[:head])
        csv.writer(fh, quoting=csv.QUOTE_ALL).writerows(rows)
    done = _command("summary", "--json", "--counters", str(path), str(FP16))
    assert done.returncode == 2
    assert "mangled" not in done.stderr and "another run" in done.stderr, done.stderr


# --- say() -------------------------------------------------------------------------------------


def test_query_error_keeps_its_exit_status_with_stderr_closed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    batch = subprocess.run(
        [sys.executable, "-m", "tcreport", "batch", str(SAMPLES / "kineto-a100-tf32-alexnet")]
        + ["-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert batch.returncode == 0, batch.stderr
    done = subprocess.run(
        [sys.executable, "-m", "tcreport", "query", str(out), "select nonsense"],
        stdout=subprocess.DEVNULL,
        stderr=None,
        timeout=300,
        check=False,
        preexec_fn=lambda: os.close(2),  # the child starts with fd 2 closed, as under `2>&-`
    )
    assert done.returncode == 2


def test_a_report_is_written_with_stderr_closed(tmp_path: Path) -> None:
    """status() asked sys.stderr.isatty() of a None stderr (fd 2 closed): every command with a
    spinner phase (report, summary) died with AttributeError (hostile11's note, also on
    f64a199); the report is written and the exit is 0."""
    out = tmp_path / "r.html"
    done = subprocess.run(
        [sys.executable, "-m", "tcreport", "report", str(SAMPLES / "kineto-a100-tf32-alexnet")]
        + ["-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=None,
        timeout=300,
        check=False,
        preexec_fn=lambda: os.close(2),
    )
    assert done.returncode == 0 and out.read_text().startswith("<!DOCTYPE html>")


# --- non-UTF-8 file names (pre-existing on f64a199, found while attacking say()) ------------------


def _undecodable_copy(tmp_path: Path) -> Path:
    """The bundled A100 AlexNet trace under a name that is not UTF-8 (byte 0xff), as Linux allows:
    Python holds it as the surrogate '\\udcff'."""
    folder = tmp_path / "traces"
    folder.mkdir()
    path = folder / os.fsdecode(b"\xffalexnet.pt.trace.json.gz")
    shutil.copyfile(ALEXNET, path)
    return path


def test_report_of_a_trace_with_an_undecodable_name_is_written(tmp_path: Path) -> None:
    trace = _undecodable_copy(tmp_path)
    done = _command("report", "-o", str(tmp_path / "r.html"), str(trace))
    assert done.returncode == 0, done.stderr[-300:]
    assert "Traceback" not in done.stderr


def test_batch_of_a_trace_with_an_undecodable_name_is_not_a_traceback(tmp_path: Path) -> None:
    trace = _undecodable_copy(tmp_path)
    done = _command("batch", str(trace.parent), "-o", str(tmp_path / "out"))
    assert "Traceback" not in done.stderr, done.stderr[-300:]
    assert done.returncode in (0, 1)


# --- NVTX text affinity ------------------------------------------------------------------------


def _same_tables(a: Any, b: Any) -> None:
    for kind in TableKind:
        x, y = getattr(a, kind.value), getattr(b, kind.value)
        assert (x is None and y is None) or (x is not None and y is not None and x.equals(y)), kind
    assert a.meta == b.meta


@pytest.mark.realtraces
def test_numeric_texts_in_a_charint_text_column_read_the_same_whatever_the_chunks_synthetic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not CNN_NSYS.exists():
        pytest.skip("needs ../shared/realtraces")
    path = tmp_path / "charint_synthetic.sqlite"
    shutil.copyfile(CNN_NSYS, path)
    path.chmod(0o644)
    con = sqlite3.connect(path)
    con.executescript(
        'CREATE TABLE t (start INTEGER, "end" INTEGER, eventType INTEGER, rangeId INTEGER,'
        " category INTEGER, color INTEGER, text CHARINT, globalTid INTEGER, endGlobalTid INTEGER,"
        " textId INTEGER, domainId INTEGER, uint64Value, int64Value, doubleValue, uint32Value,"
        " int32Value, floatValue, jsonTextId, jsonText);"
        " INSERT INTO t SELECT * FROM NVTX_EVENTS ORDER BY rowid; DROP TABLE NVTX_EVENTS;"
        " ALTER TABLE t RENAME TO NVTX_EVENTS;"
        "UPDATE NVTX_EVENTS SET text = 42 WHERE rowid % 4 = 0;"
        "UPDATE NVTX_EVENTS SET text = 1.5 WHERE rowid % 4 = 1;"
    )
    con.commit()
    con.close()
    whole = nsys_sqlite.read(path)
    monkeypatch.setattr(_nsys_db, "CHUNK_ROWS", 7)
    _same_tables(nsys_sqlite.read(path), whole)


# --- idle savings ------------------------------------------------------------------------------


@pytest.mark.realtraces
def test_data_loader_saving_leaves_launch_and_stall_idle_to_their_findings_synthetic(
    tmp_path: Path,
) -> None:
    if not BERT.exists():
        pytest.skip("needs ../shared/realtraces")
    with gzip.open(BERT, "rt") as fh:
        doc = json.load(fh)
    step = next(e for e in doc["traceEvents"] if e.get("cat") == "user_annotation")
    doc["traceEvents"].append(  # the step's host thread waits on the data loader
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
            "pid": step["pid"],
            "tid": step["tid"],
            "ts": step["ts"] + 1.0,
            "dur": step["dur"] - 2.0,
            "args": {},
        }
    )
    path = tmp_path / "bert_loader_synthetic.json"
    path.write_text(json.dumps(doc))
    report = api.analyze(api.load(path))
    busy = report.analysis.time.busy
    assert busy is not None and busy.idle_wall_ns
    claimed = {f.id: f.estimated_saving_ns or 0 for f in report.findings if f.id in IDLE_SAVINGS}
    assert {"GP001", "GP002", "ST001"} <= set(claimed)
    assert sum(claimed.values()) <= busy.idle_wall_ns, claimed


# --- precision mix by dtype --------------------------------------------------------------------


def test_precision_mode_follows_the_half_type_with_the_most_time() -> None:
    precision = api.analyze(api.load(H200_NCU / "mix")).analysis.precision
    time = {g.name: g.gpu_ns or 0 for g in precision.groups}
    assert time["float16"] > time["bfloat16"] > 0  # the trace's own figures
    assert precision.mode == "fp16 mixed"


# --- % of peak ------------------------------------------------------------------------------------

RESNET = REALTRACES / "kineto" / "v100-legacy-resnet50" / "worker0.1623143089861.pt.trace.json.gz"


@pytest.mark.realtraces
def test_a_convolution_far_above_any_algorithms_saving_breaks_the_peak_invariant_synthetic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not RESNET.exists():
        pytest.skip("needs ../shared/realtraces")
    import re

    from tcreport.analysis.invariants import STRICT_ENV
    from tcreport.analysis.violation import Invariant

    monkeypatch.delenv(STRICT_ENV, raising=False)  # the violation is noted on the analysis
    with gzip.open(RESNET, "rt") as fh:
        doc = json.load(fh)
    conv = re.compile(r"conv|winograd|implicit_gemm|scudnn|dgrad|wgrad", re.IGNORECASE)
    for e in doc["traceEvents"]:
        if e.get("cat") == "Kernel" and conv.search(e.get("name", "")):
            e["dur"] = max(1, e["dur"] / 1000)
    path = tmp_path / "resnet_conv_1000x_synthetic.json"
    path.write_text(json.dumps(doc))
    a = api.analyze(api.load(path)).analysis
    assert a.throughput is not None
    worst = max(o.peak_share or 0 for o in a.throughput.ops if o.kind == "conv")
    assert worst > 20  # 2,000 % of peak: no Winograd or FFT saves that much
    assert any(v.invariant is Invariant.WITHIN_PEAK for v in a.violations)


# --- tcreport.api ------------------------------------------------------------------------------


def test_every_old_api_name_still_resolves() -> None:
    for name in ("OptionError", "write_atomic"):
        assert hasattr(api, name), name
