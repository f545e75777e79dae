"""``tcreport diff`` on a terminal: plain tables of the diff model, no GitHub escaping, trace
strings shown and never sent; Markdown stays what a pipe gets."""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import pytest
from synthetic import TERMINAL_HOSTILE, synthetic_run
from trace_paths import H200_NCU, SAMPLES
from typer.testing import CliRunner

import tcreport.cli.compare_cmds  # noqa: F401  registers diff on the app
from tcreport import api
from tcreport.cli.app import app
from tcreport.compare import diff as compare
from tcreport.render import diff_terminal

runner = CliRunner()
FP16, BF16 = H200_NCU / "cnn_fp16", H200_NCU / "cnn_bf16fixed"


@pytest.fixture(autouse=True)
def _columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "120")


def test_real_diff_reads_as_plain_text_without_markdown_escapes() -> None:
    result = runner.invoke(app, ["diff", str(FP16), str(BF16), "-f", "terminal"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith(
        "Verdict: mixed: GPU kernel time per iteration -28.7% (2.0 ms → 1.4 ms); "
        "Wall time per iteration +101.4% (17.4 ms → 35.0 ms)"
    )
    assert re.search(r"^format +kineto-json +kineto-json$", result.stdout, re.MULTILINE)
    assert "Wall time                     17.4 ms   35.0 ms  +17.6 ms (+101.4%)  regressed" in lines
    assert "  added: [low] OP001 add_ takes 13.3% of GPU time and cannot use Tensor Cores" in lines
    assert "Kernels: 50 of 54 changed beyond noise, top 25 by |Δ|; 4 unchanged" in result.stdout
    assert "\\_" not in result.stdout and "&lt;" not in result.stdout and "**" not in result.stdout
    assert not [line for line in lines if line.startswith("|")]  # no Markdown table
    start = next(i for i, line in enumerate(lines) if line.startswith("Kernels: "))
    table = lines[start + 1 : lines.index("", start)]
    assert len(table) == 26 and max(len(line) for line in table) <= 120  # names cut to fit
    assert table[0].split() == ["kernel", "on", "base", "head", "Δ", "TC", "verdict"]


def test_markdown_stays_the_default_in_a_pipe() -> None:
    piped = runner.invoke(app, ["diff", str(FP16), str(BF16)])
    assert piped.exit_code == 0, piped.output
    assert piped.stdout.startswith("### tcreport diff\n")


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal is POSIX")
def test_a_terminal_gets_tables_by_default() -> None:
    """The real command with its stdout on a pseudo-terminal, as a person runs it."""
    import os
    import subprocess

    main, sub = os.openpty()
    env = {**os.environ, "COLUMNS": "120"}
    cmd = [sys.executable, "-m", "tcreport", "diff", str(FP16), str(BF16)]
    with subprocess.Popen(cmd, stdout=sub, stderr=subprocess.PIPE, env=env) as proc:
        os.close(sub)
        chunks = []
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the child closed its end (EIO on Linux)
                break
            if not chunk:
                break
            chunks.append(chunk)
        proc.wait(timeout=120)
    os.close(main)
    assert proc.returncode == 0
    text = b"".join(chunks).decode("utf-8")
    assert text.startswith("Verdict: mixed: GPU kernel time per iteration -28.7%"), text[:200]
    assert "### tcreport diff" not in text and "\\_" not in text


def test_terminal_format_writes_a_file_too(tmp_path: Path) -> None:
    out = tmp_path / "diff.txt"
    result = runner.invoke(app, ["diff", str(FP16), str(BF16), "-f", "terminal", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8").startswith("Verdict: mixed: ")


def test_hostile_names_are_shown_never_sent() -> None:
    base = api.analyze(synthetic_run("fp32"), source_path=TERMINAL_HOSTILE)
    a = base.analysis
    ops = (dataclasses.replace(a.breakdown.ops[0], name=TERMINAL_HOSTILE), *a.breakdown.ops[1:])
    base = dataclasses.replace(
        base, analysis=dataclasses.replace(a, breakdown=dataclasses.replace(a.breakdown, ops=ops))
    )
    head = api.analyze(synthetic_run("bf16"), source_path="head")
    text = diff_terminal.render(compare.diff(base, head), "0.1.0")
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text and "\x9b" not in text
    assert "\\x1b]0;pwned\\x07" in text  # the source path, shown escaped
    assert "[bold]b[/bold]" in text  # rich markup in a name is data, printed as is


def test_a_job_diff_has_a_terminal_form() -> None:
    job = SAMPLES / "nsys-h100x2-bf16"
    result = runner.invoke(app, ["diff", str(job), str(job), "-f", "terminal"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("tcreport job diff: ")
    assert any(line.startswith("rank ") for line in lines)
    assert "Verdict: no change beyond noise" in lines


def test_op_names_that_would_shorten_alike_stay_apart_at_80_columns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """XLA's framework-op names share long prefixes (``jit(train_step)/jit(main)/...``): at 80
    columns a newcomer saw five rows read ``jit(tra…, 1000]]``. The diff's tables keep names
    apart as the summary's do (fmt.middles)."""
    pytest.importorskip("xprof")
    monkeypatch.setenv("COLUMNS", "80")
    root = SAMPLES / "h200-jax-xla-ncu"
    args = ["diff", str(root / "fp32-highest"), str(root / "fp32"), "-f", "terminal"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Ops: "))
    rows = lines[start + 2 : lines.index("", start)]
    assert len(rows) >= 5
    names = [row.split()[0] for row in rows]
    assert len(set(names)) == len(names), names
