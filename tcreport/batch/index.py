"""The batch index: the dataset's ``runs`` table turned into what ``index.html`` shows.

Arrow stays here; the renderer (:mod:`tcreport.render.index_html`) gets small frozen rows and only
lays them out. The index is rebuilt from the whole dataset on every batch, so it lists every run
ever archived under ``OUT`` (failed ones with their error), newest first, and is written
atomically, last. Each run's verdict (sentence, tone, matrix-unit words) is the one its analysis
decided and the dataset kept (``runs.verdict``, ``verdict_tone``, ``matrix_unit``).

Trends: a chart per GPU model only where it has :data:`MIN_TREND_RUNS` or more successful runs
dated by the trace itself. With fewer, a line is no trend (one dot per chart was what an archive
of eight runs on seven GPUs used to open with); a file's modification time says when it was
copied, not when it was profiled; and runs on an unknown GPU may be on different hardware.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tcreport import __version__
from tcreport._fs import write_text_atomic
from tcreport.render import index_html
from tcreport.render.index_html import IndexPage, IndexRow
from tcreport.rules import NO_FIX_FIRST

#: Fewest dated runs of one GPU model that make a trend chart.
MIN_TREND_RUNS = 3
#: The column heads' name for the matrix units when the archive's runs name them differently
#: (NVIDIA's Tensor Cores beside AMD's Matrix Cores): each run's own words are in its verdict.
GENERIC_UNIT = "matrix units"
TREND_RULE = (
    f"one chart per GPU model with {MIN_TREND_RUNS} or more runs dated by the trace itself, all "
    "on one time axis; runs on different GPU models are never one series"
)


def rows(runs: pa.Table) -> tuple[IndexRow, ...]:
    cols = [
        "run_id",
        "status",
        "error",
        "source",
        "format",
        "gpu_model",
        "date",
        "date_source",
        "tc_share",
        "eligible_not_tc_share",
        "eligible_not_using_per_iteration_ns",
        "fix_first_id",
        "fix_first_title",
        "report",
        "verdict",
        "verdict_tone",
        "matrix_unit",
    ]
    if "rank" in runs.column_names:  # a job's per-rank rows: the index lists the job once
        runs = runs.filter(pc.is_null(runs.column("rank")))
    data = runs.select(cols).sort_by([("date", "descending"), ("source", "ascending")])
    return tuple(_row(r) for r in data.to_pylist())  # one row per run: small


def _row(r: dict[str, Any]) -> IndexRow:
    date = r["date"]
    first = f"{r['fix_first_id']}: {r['fix_first_title']}" if r["fix_first_id"] else None
    if first is None and r["status"] == "ok":  # what its report's "Fix first" line begins with
        first = NO_FIX_FIRST
    return IndexRow(
        run_id=r["run_id"],
        ok=r["status"] == "ok",
        error=r["error"],
        source=r["source"],
        format=r["format"],
        gpu=r["gpu_model"],
        date=date.strftime("%Y-%m-%d") if date is not None else None,
        timestamp=date.timestamp() if date is not None else None,
        tc_share=r["tc_share"],
        miss_share=r["eligible_not_tc_share"],
        # the report card's figure (per aggregated iteration), as the analysis decided it
        miss_ns=r["eligible_not_using_per_iteration_ns"],
        fix_first=first,
        report=r["report"],
        date_from_mtime=(r["date_source"] or "").startswith("file mtime"),
        verdict=r["verdict"],
        tone=r["verdict_tone"],
        unit=r["matrix_unit"],
    )


def series(rows: tuple[IndexRow, ...]) -> tuple[tuple[str, tuple[IndexRow, ...]], ...]:
    """The GPU models that get a trend and their runs, models in name order."""
    by_gpu: dict[str, list[IndexRow]] = {}
    for r in rows:
        dated = r.timestamp is not None and not r.date_from_mtime
        if r.ok and r.gpu and r.tc_share is not None and dated:
            by_gpu.setdefault(r.gpu, []).append(r)
    return tuple(
        (gpu, tuple(runs)) for gpu, runs in sorted(by_gpu.items()) if len(runs) >= MIN_TREND_RUNS
    )


def unit(rows: tuple[IndexRow, ...]) -> str:
    units = {r.unit for r in rows if r.ok and r.unit}
    return units.pop() if len(units) == 1 else GENERIC_UNIT


def page(runs: pa.Table) -> IndexPage:
    rs = rows(runs)
    return IndexPage(rows=rs, unit=unit(rs), series=series(rs), trend_rule=TREND_RULE)


def write(out: Path, runs: pa.Table) -> Path:
    html = index_html.render(page(runs), __version__)
    return write_text_atomic(out / "index.html", html)
