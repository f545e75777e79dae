"""The notebook face of tcreport: one analysed run as pandas DataFrames, the summary dict and HTML.

ML engineers live in notebooks; there ``tcreport.open(path)`` gives the same figures as the report
(the rows come from the one :class:`~tcreport.report.Report`, nothing is computed again) as
DataFrames with Arrow-backed dtypes (``pd.ArrowDtype``), so strings stay Arrow strings, missing
values stay ``<NA>`` in integer columns and ``to_pandas`` wraps Arrow buffers instead of copying
them where it can. ``_repr_html_`` shows the verdict and findings inline: notebook front ends drop
or sandbox a ``<meta>`` CSP inside an output cell, so that fragment carries no script, no style
sheet link, no image, nothing that could load: the CSP rule holds by construction.

pandas is imported here only, never by ``import tcreport`` or the CLI.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa

from tcreport import fmt
from tcreport._fs import write_text_atomic
from tcreport.analysis import result
from tcreport.analysis.derived import IterationRow
from tcreport.analysis.figures import KernelRow, OpRow
from tcreport.analysis.groups import OpTypeRow
from tcreport.analysis.slicing import WHOLE, Slice
from tcreport.batch.work import TABLES
from tcreport.errors import InputError
from tcreport.render import notebook_html, summary_json
from tcreport.rules.base import Finding

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tcreport.model import Run
    from tcreport.report import Report

#: Arrow type for a dataclass field's annotation (``from __future__ import annotations`` makes
#: them strings). Enums are written as their text value.
_ARROW_TYPES = (("bool", pa.bool_()), ("int", pa.int64()), ("float", pa.float64()))


def _arrow_type(annotation: str) -> pa.DataType:
    base = annotation.replace(" | None", "").strip()
    for name, typ in _ARROW_TYPES:
        if base == name:
            return typ
    return pa.string()


def _frame(rows: tuple[Any, ...], cls: type[Any], extra: dict[str, pa.Array] | None = None) -> Any:
    """A DataFrame of dataclass rows, one typed Arrow column per field (the rows are the report's
    aggregates, one per op/kernel/iteration/finding: small, so one pass over them is fine)."""
    fields = [f for f in dataclasses.fields(cls) if not str(f.type).startswith("tuple")]
    columns: dict[str, pa.Array] = {}
    for f in fields:
        typ = _arrow_type(str(f.type))
        values = [getattr(r, f.name) for r in rows]
        if typ == pa.string():
            values = [None if v is None else str(v) for v in values]
        columns[f.name] = pa.array(values, typ)
    columns.update(extra or {})
    return to_pandas(pa.table(columns))


#: The op rows' miss verdicts the analysis defines (properties of :class:`OpRow`), each under
#: the analysis' own name and meaning: ``missed_tc`` missed in every call with a verdict,
#: ``partly_missed`` in some only, ``has_misses`` in either; ``missed_ns`` the missed calls' time.
OP_VERDICTS = (("missed_tc", pa.bool_()), ("partly_missed", pa.bool_()),
               ("has_misses", pa.bool_()), ("missed_ns", pa.int64()))  # fmt: skip


def _op_verdicts(rows: Sequence[OpRow]) -> dict[str, pa.Array]:
    return {name: pa.array([getattr(r, name) for r in rows], t) for name, t in OP_VERDICTS}


def to_pandas(table: pa.Table) -> pd.DataFrame:
    """Arrow-backed dtypes throughout (``pd.ArrowDtype``): no object columns, no NaN for missing
    integers, and no copy of the column buffers where pandas can wrap them."""
    return table.to_pandas(types_mapper=pd.ArrowDtype)


@dataclass(frozen=True)
class AnalysedRun:
    """One trace, analysed: what ``tcreport.open`` returns.

    ``kernels``, ``ops``, ``op_types``, ``iterations`` and ``findings`` are DataFrames of the rows
    the report shows (all of them, not only the top ones); ``launches`` is the canonical kernel
    table itself, one row per launch (or per kernel where the profiler aggregated) of the whole run
    (its ``iteration`` column says which), with each kernel's matrix-unit verdict. Times are
    integer nanoseconds, shares fractions in [0, 1].
    """

    report: Report
    run: Run
    slice: Slice = WHOLE  # the cut the report was made with; ``launches`` is numbered by it

    @cached_property
    def kernels(self) -> pd.DataFrame:
        return _frame(self.report.analysis.breakdown.kernels, KernelRow)

    @cached_property
    def ops(self) -> pd.DataFrame:
        rows = self.report.analysis.breakdown.ops
        return _frame(rows, OpRow, _op_verdicts(rows))

    @cached_property
    def op_types(self) -> pd.DataFrame:
        return _frame(self.report.analysis.breakdown.op_types, OpTypeRow).rename(
            columns={"name": "type"}
        )

    @cached_property
    def iterations(self) -> pd.DataFrame:
        return _frame(self.report.analysis.iterations.rows, IterationRow)

    @cached_property
    def findings(self) -> pd.DataFrame:
        rows = self.report.findings
        evidence = pa.array(
            [[f"{e.kind.value}:{e.key}" for e in r.evidence] for r in rows], pa.list_(pa.string())
        )
        return _frame(rows, Finding, {"evidence": evidence})

    @cached_property
    def launches(self) -> pd.DataFrame:
        if self.run.kernels is None:
            raise InputError("this input has no kernel rows", self.report.source_path)
        # every iteration, numbered as .iterations numbers them (the reader's own numbers, e.g.
        # ProfilerStep#5, are not the analysis's)
        classified = result.classified_run(self.run, self.slice.every_iteration())
        assert classified.kernels is not None
        return to_pandas(classified.kernels)

    def summary(self) -> dict[str, Any]:
        """The ``tcreport summary --json`` document (schema ``tcreport.summary/1``) as a dict."""
        parsed: dict[str, Any] = json.loads(summary_json.render(self.report))
        return parsed

    def to_html(self, path: str | Path | None = None) -> str:
        """The full self-contained HTML report; written atomically to ``path`` when given."""
        from tcreport.render import html as html_render  # jinja2: on the first report only

        html = html_render.render(self.report)
        if path is not None:
            write_text_atomic(path, html)
        return html

    def _repr_html_(self) -> str:
        return notebook_html.render(self.report)

    def __repr__(self) -> str:
        v = self.report.analysis.verdict
        return (
            f"<tcreport run {self.report.source_path!r}: {v.words.unit_one} share "
            f"{fmt.pct(v.tc_share)}, "
            f"{len(self.report.findings)} finding{'' if len(self.report.findings) == 1 else 's'}>"
        )


def read_dataset(out: Path) -> dict[str, pd.DataFrame]:
    """Every table of a ``tcreport batch`` dataset, with its ``gpu`` and ``month`` partition
    columns, read by pyarrow (no DuckDB needed): ``{"runs": ..., "ops": ..., ...}``."""
    import pyarrow.dataset as ds

    root = out / "dataset"
    if not (root / "runs").is_dir():
        raise InputError("no tcreport batch dataset here (expected dataset/runs/)", out)
    partitioning = ds.partitioning(
        pa.schema([("gpu", pa.string()), ("month", pa.string())]), flavor="hive"
    )
    frames = {}
    for name, schema in TABLES.items():
        full = schema.append(pa.field("gpu", pa.string())).append(pa.field("month", pa.string()))
        files = sorted((root / name).glob("*/*/*.parquet")) if (root / name).is_dir() else []
        if files:
            table = ds.dataset(
                [str(f) for f in files],
                schema=full,
                format="parquet",
                partitioning=partitioning,
                partition_base_dir=str(root / name),
            ).to_table()
        else:
            table = full.empty_table()
        frames[name] = to_pandas(table)
    return frames
