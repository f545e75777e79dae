"""The batch index: the dataset's ``runs`` table turned into the rows and trend of ``index.html``.

Arrow stays here; the renderer (:mod:`tcreport.render.index_html`) gets small frozen rows. The index
is rebuilt from the whole dataset on every batch, so it lists every run ever archived under ``OUT``
(failed ones with their error), newest first, and is written atomically, last.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from tcreport import __version__
from tcreport._fs import write_text_atomic
from tcreport.render import index_html
from tcreport.render.index_html import IndexRow


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
        "eligible_not_using_gpu_ns",
        "fix_first_id",
        "fix_first_title",
        "report",
    ]
    data = runs.select(cols).sort_by([("date", "descending"), ("source", "ascending")])
    return tuple(_row(r) for r in data.to_pylist())  # one row per run: small


def _row(r: dict[str, Any]) -> IndexRow:
    date = r["date"]
    first = f"{r['fix_first_id']}: {r['fix_first_title']}" if r["fix_first_id"] else None
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
        miss_ns=r["eligible_not_using_gpu_ns"],
        fix_first=first,
        report=r["report"],
        date_from_mtime=(r["date_source"] or "").startswith("file mtime"),
    )


def write(out: Path, runs: pa.Table) -> Path:
    html = index_html.render(rows(runs), __version__)
    return write_text_atomic(out / "index.html", html)
