"""The facade the CLI and Python users call: load -> analyze -> render.

>>> from tcreport import api
>>> run = api.load("dlprof_results/")
>>> view = api.analyze(run, source_path="dlprof_results/")
>>> html = api.render_html(view)

Output files are written atomically (temporary name, then rename) so a failure never leaves a
half-written report behind.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tcreport._fs import current_umask
from tcreport.errors import OutputError

if TYPE_CHECKING:
    import pandas as pd

    from tcreport.model import Run, SourceFormat
    from tcreport.notebook import AnalysedRun
    from tcreport.report import Report


def load(path: str | Path, fmt: SourceFormat | None = None) -> Run:
    """Read any supported trace (or a ``tcreport ingest`` folder) into canonical tables."""
    from tcreport import ingest

    return ingest.load(Path(path), fmt)


def attach_counters(run: Run, ncu_path: str | Path) -> Run:
    """Give ``run``'s kernels the Tensor Core verdicts Nsight Compute measured (``ncu --csv``)."""
    from tcreport import ingest
    from tcreport.analysis import counters
    from tcreport.errors import UsageError
    from tcreport.model import SourceFormat

    p = Path(ncu_path)
    fmt = ingest.detect(p)
    if fmt is not SourceFormat.NCU_CSV:
        raise UsageError(
            f"--counters wants an Nsight Compute CSV (ncu --csv); this is {fmt.value}", p
        )
    return counters.merge(run, ingest.load(p, fmt))


def analyze(
    run: Run,
    *,
    source_path: str | None = None,
    key_node: str | None = None,
    iter_start: int | None = None,
    iter_stop: int | None = None,
    timestamp: str | None = None,
) -> Report:
    """Classify, slice iterations, compute figures and findings; returns the renderers' view."""
    view, _ = analyze_run(
        run,
        source_path=source_path,
        key_node=key_node,
        iter_start=iter_start,
        iter_stop=iter_stop,
        timestamp=timestamp,
    )
    return view


def analyze_run(
    run: Run,
    *,
    source_path: str | None = None,
    key_node: str | None = None,
    iter_start: int | None = None,
    iter_stop: int | None = None,
    timestamp: str | None = None,
) -> tuple[Report, Run]:
    """:func:`analyze`, plus the classified, iteration-sliced canonical tables it was computed
    from (what the notebook API shows row by row)."""
    from tcreport import rules
    from tcreport.analysis import result
    from tcreport.report import Report

    analysis, sliced = result.compute(
        run, key_node=key_node, iter_start=iter_start, iter_stop=iter_stop
    )
    findings = rules.evaluate(analysis)
    view = Report(
        analysis=analysis,
        findings=findings,
        source_path=source_path if source_path is not None else run.meta.path,
        generated_at=timestamp,
    )
    return view, sliced


def open(  # tcreport.open(path): the notebook entry point (shadows the builtin here only)
    path: str | Path,
    *,
    key_node: str | None = None,
    iter_start: int | None = None,
    iter_stop: int | None = None,
    counters: str | Path | None = None,
) -> AnalysedRun:
    """Read and analyse one trace for a notebook: DataFrames, the summary dict, inline HTML."""
    from tcreport.notebook import open_run

    return open_run(
        path, key_node=key_node, iter_start=iter_start, iter_stop=iter_stop, counters=counters
    )


def read_dataset(out: str | Path) -> dict[str, pd.DataFrame]:
    """A ``tcreport batch`` dataset's tables (runs, ops, kernels, findings) as DataFrames."""
    from tcreport.notebook import read_dataset as read

    return read(Path(out))


def render_json(view: Report) -> str:
    from tcreport.render import summary_json

    return summary_json.render(view)


def render_html(view: Report) -> str:
    from tcreport.render import html

    return html.render(view)


def render_markdown(view: Report) -> str:
    from tcreport.render import markdown

    return markdown.render(view)


def ingest(run: Run, out_dir: str | Path) -> Path:
    """Persist the canonical tables as Parquet so ``report``/``summary`` skip re-parsing."""
    from tcreport.ingest.parquet import reader as parquet

    return parquet.write(run, Path(out_dir))


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` via a temporary file in the same directory, then rename."""
    return _write_atomic(Path(path), lambda fh: fh.write(text.encode("utf-8")))


def _write_atomic(
    path: Path, writer: Callable[[tempfile._TemporaryFileWrapper[bytes]], object]
) -> Path:
    target = path.resolve()
    if target.is_dir():
        raise OutputError("is a directory; give a file name", path)
    if not target.parent.is_dir():
        raise OutputError("parent directory does not exist", path)
    try:
        with tempfile.NamedTemporaryFile(
            dir=target.parent, prefix=f".{target.name}.", suffix=".tmp", delete=False
        ) as fh:
            tmp = Path(fh.name)
            try:
                writer(fh)
            except BaseException:
                fh.close()
                tmp.unlink(missing_ok=True)
                raise
        os.chmod(tmp, 0o666 & ~current_umask())  # tempfile makes 0600; a report is for sharing
        os.replace(tmp, target)
    except OSError as exc:
        raise OutputError(f"cannot write: {exc.strerror or exc}", path) from exc
    return target
