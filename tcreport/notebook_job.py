"""The notebook face of a distributed job: ``tcreport.open(job_folder)``.

The job section's rows as DataFrames (one per rank, per rank and iteration, per iteration, per
collective size), its findings, the ``tcreport.job/1`` dict, the HTML report, and the rank shown
in full as an :class:`~tcreport.notebook.AnalysedRun` (its trace is read again only when asked
for, so opening a 64-rank job keeps one rank's tables in memory at most).
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from tcreport.analysis.slicing import WHOLE, Slice
from tcreport.ingest.job import Job
from tcreport.job_report import JobReport
from tcreport.notebook import AnalysedRun, to_pandas


def _records(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return to_pandas(pa.Table.from_pylist(rows)) if rows else pd.DataFrame()


@dataclass(frozen=True)
class AnalysedJob:
    """One distributed job, analysed: what ``tcreport.open`` returns for a job folder."""

    report: JobReport
    slice: Slice = WHOLE  # the part of every rank analysed (tcreport.open's options)
    job: Job | None = None  # where its ranks are (a process of one export: its part of it)

    @cached_property
    def _doc(self) -> dict[str, Any]:
        from tcreport.render import job_json

        return job_json.job_dict(self.report)

    @cached_property
    def ranks(self) -> pd.DataFrame:
        """One row per rank: TC share, mean step time and its parts, collective wait."""
        rows = [{**r, "findings": ",".join(r["findings"])} for r in self._doc["job"]["ranks"]]
        return _records(rows)

    @cached_property
    def steps(self) -> pd.DataFrame:
        """One row per rank and compared iteration (the heatmap's cells)."""
        return _records(self._doc["job"]["cells"])

    @cached_property
    def iterations(self) -> pd.DataFrame:
        """One row per compared iteration: the job's step, its straggler and the wait."""
        return _records(self._doc["job"]["iterations"])

    @cached_property
    def bandwidth(self) -> pd.DataFrame:
        """One row per collective, element type and message size (empty: sizes not recorded)."""
        return _records(self._doc["job"]["bandwidth"]["rows"])

    @cached_property
    def findings(self) -> pd.DataFrame:
        return _records(self._doc["job"]["findings"])

    @cached_property
    def detail(self) -> AnalysedRun:
        """The rank shown in full (the straggler unless ``rank=`` chose one)."""
        from tcreport import ingest

        rank = self.report.detail_rank
        if self.job is not None:
            run = ingest.load_rank(self.job.rank_trace(rank))
            ingest.forget_ranks()
        else:
            run = ingest.load(Path(dict(self.report.rank_files)[rank]))
        return AnalysedRun(self.report.detail, run, self.slice)

    def summary(self) -> dict[str, Any]:
        """The ``tcreport summary --json`` document of the job (schema ``tcreport.job/1``)."""
        parsed: dict[str, Any] = json.loads(json.dumps(self._doc))
        return parsed

    def to_html(self, path: str | Path | None = None) -> str:
        """The job's self-contained HTML report; written atomically to ``path`` when given."""
        from tcreport._fs import write_text_atomic
        from tcreport.render import html as html_render

        text = html_render.render(self.report.detail, job=self.report)
        if path is not None:
            write_text_atomic(path, text)
        return text

    def _repr_html_(self) -> str:
        """The job verdict and straggler, then the detail rank's inline summary; no script, no
        style sheet (see :mod:`tcreport.notebook`)."""
        from tcreport.render import notebook_html

        sec = self.report.section
        lines = [
            f"<p><strong>{html.escape(sec.identity.presence)}</strong>: {html.escape(sec.verdict.text)}</p>"
        ]
        if sec.straggler is not None:
            lines.append(f"<p>Straggler: {html.escape(sec.straggler.text)}</p>")
        lines += [
            f"<p>{html.escape(f.id)}: {html.escape(f.title)}</p>" for f in self.report.findings
        ]
        lines.append(
            f"<p>Rank {self.report.detail_rank} ({html.escape(self.report.detail_why)}):</p>"
        )
        return "\n".join(lines) + notebook_html.render(self.report.detail)

    def __repr__(self) -> str:
        sec = self.report.section
        return f"<tcreport job {self.report.source_path!r}: {sec.identity.presence}, {sec.verdict.text}>"
