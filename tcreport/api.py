"""The facade the CLI and Python users call: load -> analyze -> render.

>>> from tcreport import api
>>> run = api.load("dlprof_results/")
>>> view = api.analyze(run, source_path="dlprof_results/")
>>> html = api.render_html(view)

Output files are written atomically (:func:`write_text_atomic`: temporary name, then rename) so a
failure never leaves a half-written report behind.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, TYPE_CHECKING

from tcreport._fs import write_atomic, write_text_atomic
from tcreport.analysis.slicing import Slice
from tcreport.errors import OptionError

if TYPE_CHECKING:
    from collections.abc import Callable

    import pandas as pd

    from tcreport.model import Run, SourceFormat
    from tcreport.notebook import AnalysedRun
    from tcreport.report import Report

__all__ = [
    "Slice",
    "analyze",
    "attach_counters",
    "check_ingest_output",
    "ingest",
    "load",
    "open",
    "read_dataset",
    "render_html",
    "render_json",
    "render_markdown",
    "write_text_atomic",
]


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
    slc: Slice | None = None,
    *,
    source_path: str | None = None,
    timestamp: str | None = None,
    with_timeline: bool = False,
) -> Report:
    """Classify, slice iterations, compute figures and findings; returns the renderers' view.

    ``slc`` (:class:`Slice`) says which part of the run to analyse (default: all of it, split
    wherever iteration markers are found); one that would select nothing is refused with an
    :class:`~tcreport.errors.OptionError` unless ``slc.allow_empty``."""
    from tcreport import report

    return report.build(
        run,
        slc if slc is not None else Slice(),
        source_path=source_path,
        timestamp=timestamp,
        with_timeline=with_timeline,
    )


def open(  # tcreport.open(path): the notebook entry point (shadows the builtin here only)
    path: str | Path,
    *,
    key_node: str | None = None,
    iter_start: int | None = None,
    iter_stop: int | None = None,
    counters: str | Path | None = None,
    allow_empty: bool = False,
) -> AnalysedRun:
    """Read and analyse one trace for a notebook: DataFrames, the summary dict, inline HTML
    (``docs/python-api.md``); the options are those of ``tcreport report`` (a :class:`Slice`)."""
    from tcreport.notebook import AnalysedRun

    slc = Slice(key_node, iter_start, iter_stop, allow_empty)  # refused before the long read
    path = Path(path)  # "dir/" and "dir" name the same source, as on the command line
    run = load(path)
    if counters is not None:
        run = attach_counters(run, counters)
    # with the timeline: .to_html() gives the same report as `tcreport report`
    view = analyze(run, slc, source_path=str(path), with_timeline=True)
    return AnalysedRun(report=view, run=run, slice=slc)


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


def ingest(
    run: Run,
    out_dir: str | Path,
    *,
    force: bool = False,
    on_kept: Callable[[Path], None] | None = None,
) -> Path:
    """Persist the canonical tables as Parquet so ``report``/``summary`` skip re-parsing.

    ``out_dir`` must not exist, or (with ``force``) be an ingest folder tcreport wrote. Files a
    user added to it while it was being replaced are kept in a folder passed to ``on_kept``.
    """
    from tcreport.ingest.parquet import reader as parquet

    return parquet.write(run, Path(out_dir), force=force, on_kept=on_kept)


def check_ingest_output(out_dir: str | Path, *, force: bool = False) -> None:
    """Refuse an ``ingest`` target before any parsing: one tcreport did not write, or without
    ``force`` one that exists (``ingest`` re-checks when it writes)."""
    from tcreport.ingest.parquet import reader as parquet

    parquet.check_target(Path(out_dir), force=force)


def export_perfetto(
    run: Run,
    out_path: str | Path | IO[bytes],
    slc: Slice | None = None,
    *,
    source: str | Path = "",
    follow_link: bool = False,
    replace_read_only: bool = False,
) -> tuple[Path, int]:
    """Write the analysed run as Chrome/Perfetto trace JSON (every kernel with its verdict and
    rule); returns the file and the number of kernel events. A binary stream (stdout for
    ``-o -``) is written as is, and the returned path is then ``-``. A slice that selects nothing
    is refused as by ``report``; ``source`` names the input in that message. A symbolic link or
    read-only file at ``out_path`` is refused unless ``follow_link`` / ``replace_read_only``, as
    for every output."""
    from tcreport.analysis import result
    from tcreport.render import perfetto

    try:
        classified = result.classified_run(run, slc if slc is not None else Slice())
    except OptionError as exc:
        raise exc.at(source or run.meta.path) from None
    count = 0

    def writer(fh: IO[bytes]) -> None:
        nonlocal count
        count = perfetto.write(classified, fh)

    if not isinstance(out_path, str | Path):
        writer(out_path)
        return Path("-"), count
    target = write_atomic(
        Path(out_path), writer, follow_link=follow_link, replace_read_only=replace_read_only
    )
    return target, count
