"""The batch index: the runs table first, each run's verdict in its analysis' words and tone, units
in the column heads, trend charts only for GPU models with three or more dated runs, as small
multiples on one shared time axis.

The real archive (``../shared/realtraces``: eleven runs on eight GPU models, none with three dated
runs) shows the table and no chart; a synthetic ``runs`` table covers the charts, which no real
archive here has enough runs for.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from trace_paths import REALTRACES

from tcreport import api
from tcreport.batch import index, work
from tcreport.render import index_html


@pytest.fixture(scope="module")
def real_index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, object]]]:
    if not REALTRACES.exists():
        pytest.skip("real traces not available")
    out = tmp_path_factory.mktemp("index") / "out"
    api.batch(REALTRACES, out, jobs=2)
    table = ds.dataset(out / "dataset" / "runs", format="parquet", partitioning="hive").to_table()
    return out, table.to_pylist()


def _row_html(page: str, run_id: object) -> str:
    m = re.search(rf'<tr id="run-{run_id}">.*?</tr>', page, re.S)
    assert m is not None
    return m.group(0)


@pytest.mark.realtraces
def test_real_index_leads_with_the_runs_table_and_draws_no_lone_dots(
    real_index: tuple[Path, list[dict[str, object]]],
) -> None:
    out, runs = real_index
    page = (out / "index.html").read_text(encoding="utf-8")
    assert page.index('<section id="runs">') < page.index('<section id="trend"')
    assert '<table id="t-runs" class="sortable">' in page
    # no GPU model of the archive has three runs dated by the trace: no chart at all
    assert "<svg" not in page and "No trend to draw yet." in page
    # NVIDIA and AMD runs side by side: the heads use the generic words, and name their units
    assert "% = share of GPU kernel time" in page
    for head in (
        "on matrix units (%)",
        "eligible not on matrix units (%)",
        "eligible not on matrix units (ms / iteration)",
    ):
        assert f">{head}</th>" in page
    for r in runs:
        row = _row_html(page, r["run_id"])
        assert r["verdict"] and r["verdict_tone"] in ("good", "neutral", "bad", "unknown")
        assert f'<td class="v tone-{r["verdict_tone"]}">' in row
        assert f'href="{r["report"]}"' in row
    mi250 = next(r for r in runs if "mi250" in str(r["source"]))
    assert mi250["matrix_unit"] == "AMD Matrix Cores"
    assert "ran on AMD Matrix Cores" in _row_html(page, mi250["run_id"])
    assert "Tensor Core" not in _row_html(page, mi250["run_id"])


@pytest.mark.realtraces
def test_each_row_shows_the_verdict_its_report_shows(
    real_index: tuple[Path, list[dict[str, object]]],
) -> None:
    out, runs = real_index
    for r in runs:
        report = (out / str(r["report"])).read_text(encoding="utf-8")
        if r.get("rank") is not None:
            continue  # a job's per-rank rows: the index lists the job once, with the job's verdict
        # a distributed job's page states the job's verdict above the rank it shows in full
        vid = "job-verdict" if r["ranks"] is not None else "verdict"
        m = re.search(rf'<p class="verdict (\w+)" id="{vid}">(.*?)</p>', report, re.S)
        assert m is not None
        assert m.group(1) == r["verdict_tone"]
        assert re.sub(r"<[^>]+>", "", m.group(2)).strip() == r["verdict"]


def _synthetic_runs(specs: list[tuple[str, str | None, str, str]]) -> pa.Table:
    """(source, gpu, YYYY-MM-DD, date_source) -> a ``runs`` table as the batch writes it."""
    rows = []
    for i, (source, gpu, day, date_source) in enumerate(specs):
        row: dict[str, object] = dict.fromkeys(work.RUNS.names)
        row.update(
            run_id=f"synthetic{i}",
            status="ok",
            source=source,
            format="kineto-json",
            gpu_model=gpu,
            date=datetime.fromisoformat(day).replace(tzinfo=UTC),
            date_source=date_source,
            tc_share=0.1 * (i % 10),
            verdict=f"{10 * (i % 10)}.0 % of GPU kernel time ran on Tensor Cores.",
            verdict_tone="bad",
            matrix_unit="Tensor Cores",
            report=f"reports/r{i}.html",
        )
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=work.RUNS)


def test_synthetic_trends_are_small_multiples_on_one_time_axis() -> None:
    trace = "PyTorch profiler baseTimeNanoseconds"
    table = _synthetic_runs(
        [
            ("a1", "A100", "2024-01-01", trace),
            ("a2", "A100", "2024-06-01", trace),
            ("a3", "A100", "2025-01-01", trace),
            ("v1", "V100", "2023-01-01", trace),
            ("v2", "V100", "2024-06-01", trace),
            ("v3", "V100", "2024-09-01", trace),
            ("h1", "H100", "2024-01-01", trace),  # two dated runs and one dated by mtime: no
            ("h2", "H100", "2024-02-01", trace),
            ("h3", "H100", "2024-03-01", work.MTIME),
            ("u1", None, "2024-01-01", trace),  # unknown GPUs are not one series
            ("u2", None, "2024-02-01", trace),
            ("u3", None, "2024-03-01", trace),
        ]
    )
    page_model = index.page(table)
    assert [g for g, _ in page_model.series] == ["A100", "V100"]
    assert page_model.unit == "Tensor Cores"
    html = index_html.render(page_model, "0")
    assert html.index('<section id="runs">') < html.index('<section id="trend"')
    charts = re.findall(r"<h3>([^<]*)</h3>\s*<svg class=\"trend\"(.*?)</svg>", html, re.S)
    assert [g for g, _ in charts] == ["A100", "V100"]
    xs = {g: [float(x) for x in re.findall(r'cx="([\d.]+)"', body)] for g, body in charts}
    left, right = index_html.PAD_L, index_html.CHART_W - index_html.PAD_R
    # one axis: the oldest run of all (a V100's) is at the left edge, the newest (an A100's) at
    # the right, and the same day (2024-06-01) is at the same x in both charts
    assert xs["V100"][0] == left and xs["A100"][-1] == right
    assert xs["A100"][1] == xs["V100"][1]
    # the dates label the shared axis once, under the last chart
    assert html.count(">2023-01-01</text>") == 1 and html.count(">2025-01-01</text>") == 1
    assert ">on Tensor Cores (%)</th>" in html and "% = share of GPU kernel time" in html


def test_synthetic_archive_without_enough_runs_has_no_chart() -> None:
    trace = "Nsight Systems session start"
    table = _synthetic_runs(
        [("a1", "A100", "2024-01-01", trace), ("a2", "A100", "2024-02-01", trace)]
    )
    html = index_html.render(index.page(table), "0")
    assert "<svg" not in html and "No trend to draw yet." in html
