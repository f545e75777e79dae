"""The terminal summary and query tables fit the terminal: names shortened in the middle, small
columns whole, no column repeating another, wide query results laid out one record at a time."""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from trace_paths import REALTRACES, batch_samples, need
from typer.testing import CliRunner

from tcreport import api
from tcreport.cli import app
from tcreport.fmt import middle, middles
from tcreport.render import terminal

ROOT = Path(__file__).resolve().parents[2]
KINETO = ROOT / "sample_traces" / "kineto-a100-tf32-alexnet"
NSYS = ROOT / "sample_traces" / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"
runner = CliRunner()
H100 = (
    REALTRACES
    / "kineto"
    / "h100-bf16-bert-small"
    / "gaunernst_bert-small-uncased__1016001.redacted.json.gz"
)


def _summary(path: Path, width: int) -> str:
    buf = io.StringIO()
    terminal.render(api.analyze(api.load(path)), Console(file=buf, width=width, highlight=False))
    return buf.getvalue()


def test_middle_keeps_both_ends() -> None:
    name = "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN"
    short = middle(name, 24)
    assert len(short) == 24 and short.startswith("nvjet_tst_1") and short.endswith("bias_TNN")
    assert middle("short", 24) == "short"


@pytest.mark.parametrize("width", [80, 120, 200])
@pytest.mark.parametrize("path", [KINETO, NSYS], ids=["kineto", "nsys"])
def test_summary_tables_fit_and_keep_small_columns_whole(path: Path, width: int) -> None:
    text = _summary(path, width)
    table_lines = [ln for ln in text.splitlines() if ln.startswith(("│", "┃", "┏", "└"))]
    assert table_lines and all(len(ln) <= width for ln in table_lines)
    cells = [c.strip() for ln in table_lines if ln.startswith("│") for c in ln.split("│")]
    assert not any(c.endswith("…") or c.startswith("…") for c in cells)  # middle, not the ends
    for row in (ln for ln in table_lines if ln.startswith("│")):
        verdicts = [c.strip() for c in row.split("│")[1:-1]]
        assert any(v in ("yes", "no", "unknown") for v in verdicts), row  # the TC column whole


def test_nsys_kernel_names_keep_their_ends_at_80_columns() -> None:
    text = _summary(NSYS, 80)
    assert "nvjet_tst_1" in text and "opB_bias_TNN" in text


def test_no_type_column_when_it_repeats_the_op_name() -> None:
    header = next(ln for ln in _summary(NSYS, 120).splitlines() if "┃ op " in ln)
    assert "type" not in header


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("duckdb")
    out = tmp_path_factory.mktemp("q") / "out"
    samples = batch_samples(tmp_path_factory.mktemp("samples"))
    res = runner.invoke(app, ["batch", str(samples), "-o", str(out)])
    assert res.exit_code == 0, res.output
    return out


@pytest.mark.parametrize("width", [80, 200])
def test_query_select_star_is_readable(dataset: Path, width: int) -> None:
    res = runner.invoke(
        # one row per run: the nsys sample is a 2-rank job, whose ranks have rows of their own
        app,
        ["query", str(dataset), "select * from runs where rank is null"],
        env={"COLUMNS": str(width)},
    )
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert all(len(ln) <= width for ln in lines)
    for name in ("run_id", "gpu_model", "tc_share", "eligible_not_using_gpu_ns", "month"):
        assert any(ln.startswith(name + " ") for ln in lines), name  # one per line, whole
    # one record per run, each titled by its first column (run_id: unique and short)
    assert sum(ln.startswith("run_id ") and ln.rstrip().endswith("─") for ln in lines) == 2
    assert res.stderr.strip() == "2 rows"


def test_query_narrow_result_is_a_table(dataset: Path) -> None:
    res = runner.invoke(
        app,
        ["query", str(dataset), "select run_id, tc_share from runs order by run_id"],
        env={"COLUMNS": "80"},
    )
    assert res.stdout.splitlines()[1].startswith("┃ run_id")
    one = runner.invoke(app, ["query", str(dataset), "select 1 as x"])
    assert one.stderr.strip() == "1 row"


def test_query_json_and_csv_end_with_a_newline(dataset: Path) -> None:
    for fmt in ("json", "csv"):
        res = runner.invoke(app, ["query", str(dataset), "select run_id from runs", "-f", fmt])
        assert res.stdout.endswith("\n") and not res.stdout.endswith("\n\n"), fmt
    rows = json.loads(
        runner.invoke(app, ["query", str(dataset), "select 1 as x", "-f", "json"]).stdout
    )
    assert rows == [{"x": 1}]


def _piped_summary(path: Path) -> str:
    """``tcreport summary PATH | cat``: stdout not a terminal and no COLUMNS, so rich's default
    80 columns apply (a newcomer's piped summary lost the host time and share columns)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    out = subprocess.run(
        [sys.executable, "-m", "tcreport", "summary", str(path)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return out.stdout


def _headers(text: str) -> list[list[str]]:
    rows = [ln for ln in text.splitlines() if ln.startswith("┃")]
    return [[c.strip() for c in ln.strip("┃").split("┃")] for ln in rows]


def test_piped_summary_keeps_every_figure_column() -> None:
    text = _piped_summary(next(KINETO.glob("*.json.gz")))
    assert all(len(ln) <= 80 for ln in text.splitlines() if ln[:1] in "┃│┏┡└")
    heads = _headers(text)
    assert ["op", "calls", "GPU time", "share", "elig.", "TC"] in heads
    assert ["kernel", "calls", "GPU time", "share", "TC", "rule"] in heads


def test_piped_cpu_only_summary_keeps_host_time_and_share(tmp_path: Path) -> None:
    """The H100 trace's host ops without its GPU events (a synthetic CPU-only run of real op
    names, long autograd types included)."""
    doc = json.loads(gzip.decompress(need(H100).read_bytes()))
    gpu = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "cuda_runtime", "ac2g"}
    doc["traceEvents"] = [
        e for e in doc["traceEvents"] if e.get("cat") not in gpu | {"cuda_driver"}
    ]
    path = tmp_path / "cpu_only_synthetic.pt.trace.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    text = _piped_summary(path)
    assert all(len(ln) <= 80 for ln in text.splitlines() if ln[:1] in "┃│┏┡└")
    heads = _headers(text)
    assert ["op", "type", "calls", "host time", "share"] in heads
    assert ["type", "ops", "calls", "host time", "share"] in heads
    cells = [ln for ln in text.splitlines() if ln.startswith("│")]
    assert cells and all(ln.rstrip("│ ").rsplit("│", 1)[-1].strip().endswith("%") for ln in cells)


BF16_CNN = (
    ROOT / "sample_traces" / "h200-torch-cnn-ncu" / "cnn_bf16fixed" / "torch_cnn.pt.trace.json.gz"
)


@pytest.mark.parametrize("width", [70, 80, 120])
def test_summary_tables_of_the_bf16_cnn_fit_and_keep_names_apart(width: int) -> None:
    """The H200 CNN's kernel table holds a 28-character rule and three elementwise kernels that
    differ only inside their template arguments: at 80 columns it ran past the edge (the rule
    column cut, no right border) with names of 16 characters, and the three read alike."""
    view = api.analyze(api.load(BF16_CNN))
    text = _summary(BF16_CNN, width)
    lines = text.splitlines()
    start = lines.index(next(ln for ln in lines if ln.startswith("Top kernels")))
    rows = [ln for ln in lines[start:] if ln.startswith("│")][:10]
    table = [ln for ln in lines if ln.startswith(("│", "┃", "┏", "┡", "└"))]
    assert all(len(ln) <= width and ln.endswith(("│", "┃", "┓", "┩", "┘")) for ln in table)
    names = [r.split("│")[1].strip() for r in rows]
    full = [k.name for k in view.analysis.breakdown.kernels[:10]]
    assert len(set(full)) == len(set(names)) == 10  # different kernels never read alike
    # the rule column gave the name room, not the other way round
    assert len(names[0]) >= (24 if width >= 80 else terminal.MIN_NAME)
    # the three elementwise kernels show where they differ: their functors
    elementwise = [
        n
        for n, f in zip(names, full, strict=True)
        if f.startswith("void at::native::elementwise_kernel<")
    ]
    assert len(set(elementwise)) == 3 and any("CUDAFun" in n for n in elementwise)
    for r in rows:  # the figures' columns whole, whatever the width
        assert re.search(r"│ \d+ +│ [\d.]+ (µs|ms) +│ [\d.]+ % +│ (yes|no) ", r), r


def test_middles_keep_different_names_apart() -> None:
    a = "void k<128, at::native::CUDAFunctor_add<float>>(int, float*)"
    b = "void k<128, at::native::BinaryFunctor_mul<float>>(int, float*)"
    c = "void k<128, at::native::BUnaryFunctor_mul<float>>(int, float*)"
    assert len({middle(n, 24) for n in (a, b, c)}) == 1  # the plain shortening loses them
    short = middles([a, b, c, a], 24)
    assert len(set(short[:3])) == 3 and short[3] == short[0]  # the same name reads the same
    assert all(len(s) <= 24 for s in short) and "CUDAFunc" in short[0] and "BUnary" in short[2]
    same_window = ["x" * 30 + "A" + "y" * 30, "x" * 30 + "B" + "y" * 30]
    assert len(set(middles(same_window, 8))) == 2  # too narrow for a window: keys
    assert middles(["short", "names"], 24) == ["short", "names"]


@pytest.mark.parametrize("width", [30, 50, 60])
def test_narrow_windows_give_up_columns_but_never_the_verdict(width: int) -> None:
    """Below the width every column needs, the rule, type, calls and share columns go (named under
    the table), never the GPU time, eligibility or Tensor Core columns; narrower still, the lines
    run past the edge whole instead of rich cropping the verdict off."""
    text = _summary(KINETO, width)
    heads = _headers(text)
    ops = next(h for h in heads if h[0] == "op")
    kernels = next(h for h in heads if h[0] == "kernel")
    assert {"GPU time", "elig.", "TC"} <= set(ops) and {"GPU time", "TC"} <= set(kernels)
    table = [ln.rstrip() for ln in text.splitlines() if ln.startswith(("│", "┃", "┏", "┡", "└"))]
    assert all(ln.endswith(("│", "┃", "┓", "┩", "┘")) for ln in table)  # whole, never cropped
    assert (max(len(ln) for ln in table) <= width) == (width >= 50)
    gone = [ln for ln in text.splitlines() if ln.startswith(f"not shown at {width} columns: ")]
    assert len(gone) == 2


def test_records_of_a_narrow_rows_table_are_titled_by_their_key() -> None:
    """A job's per-rank table in a window too narrow for it prints one record at a time; each was
    titled 'row 1', 'row 2' (a newcomer read them as rows of something else): a first column that
    names every record (unique, short) titles them 'rank 0', 'rank 1'."""
    out = Console(file=io.StringIO(), width=30, color_system=None)
    columns = ["rank", "TC share", "step time", "a very long figure name", "another one"]
    terminal.rows_table(
        columns, [["0", "61.7 %", "299 ms", "x", "y"], ["1", "58 %", "3 ms", "z", "w"]], out
    )
    text = out.file.getvalue()  # type: ignore[attr-defined]
    assert "rank 0 " in text and "rank 1 " in text and "row 1" not in text
    out = Console(file=io.StringIO(), width=30, color_system=None)
    terminal.rows_table(columns, [["0", "a", "b", "c", "d"], ["0", "e", "f", "g", "h"]], out)
    assert "row 2" in out.file.getvalue()  # type: ignore[attr-defined]
