"""The terminal summary and query tables fit the terminal: names shortened in the middle, small
columns whole, no column repeating another, wide query results laid out one record at a time."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from tcreport import api
from tcreport.cli import app
from tcreport.fmt import middle
from tcreport.render import terminal

ROOT = Path(__file__).resolve().parents[2]
KINETO = ROOT / "sample_traces" / "kineto-a100-tf32-alexnet"
NSYS = ROOT / "sample_traces" / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"
runner = CliRunner()


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
    res = runner.invoke(app, ["batch", str(ROOT / "sample_traces"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    return out


@pytest.mark.parametrize("width", [80, 200])
def test_query_select_star_is_readable(dataset: Path, width: int) -> None:
    res = runner.invoke(
        app, ["query", str(dataset), "select * from runs"], env={"COLUMNS": str(width)}
    )
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert all(len(ln) <= width for ln in lines)
    for name in ("run_id", "gpu_model", "tc_share", "eligible_not_using_gpu_ns", "month"):
        assert any(ln.startswith(name + " ") for ln in lines), name  # one per line, whole
    assert sum(ln.startswith("row ") for ln in lines) == 2
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
