"""The facade's files half: the ingest folder, the Perfetto export, and the guard every command's
output passes before anything is read.

:mod:`tcreport.api` re-exports every function here (``api.ingest``, ``api.guard_output``), so the
CLI and Python users call them as before; they live apart to keep each module of the facade short,
as :mod:`tcreport.api_jobs` does for jobs. Every import of the pipeline is deferred to the call
that needs it (``tcreport --help`` imports this module).
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, TYPE_CHECKING

from tcreport import _fs
from tcreport._fs import write_atomic
from tcreport.errors import OptionError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from tcreport.analysis.slicing import Slice
    from tcreport.model import Run


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


def check_ingest_output(
    out_dir: str | Path, *, force: bool = False, inputs: Iterable[Path | None] = ()
) -> None:
    """Refuse an ``ingest`` target before any parsing: one tcreport did not write, or without
    ``force`` one that exists (``ingest`` re-checks when it writes), or one that is or holds one
    of the command's ``inputs``."""
    from tcreport.ingest.parquet import reader as parquet

    parquet.check_target(Path(out_dir), force=force)
    _fs.refuse_inputs(Path(out_dir), inputs)


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
    from tcreport.analysis.sections import verdict
    from tcreport.analysis.slicing import WHOLE
    from tcreport.render import perfetto

    try:
        classified = result.classified_run(run, slc if slc is not None else WHOLE)
    except OptionError as exc:
        raise exc.at(source or run.meta.path) from None
    words = verdict.words_for(result.run_vendor(run))  # the report's words for its matrix unit
    count = 0

    def writer(fh: IO[bytes]) -> None:
        nonlocal count
        count = perfetto.write(classified, fh, words.unit_one, words.key)

    if not isinstance(out_path, str | Path):
        writer(out_path)
        return Path("-"), count
    target = write_atomic(
        Path(out_path), writer, follow_link=follow_link, replace_read_only=replace_read_only
    )
    return target, count


# -- outputs: one guard for every command ------------------------------------------------------


def guard_output(
    output: Path,
    inputs: Iterable[Path | None],
    *,
    follow_link: bool = False,
    replace_read_only: bool = False,
    folder_made_later: bool = False,
) -> None:
    """Refuse, before any reading, an output that would destroy an input of the command (itself,
    a file in an input folder, a folder holding an input) or that is not a plain file to replace
    (a link or read-only file unless allowed, a FIFO, a device, a folder). With
    ``folder_made_later`` (``profile`` creates its output folder), a missing folder is fine."""
    _fs.refuse_inputs(output, inputs)
    if not folder_made_later or output.parent.is_dir():
        _fs.check_file_target(output, follow_link=follow_link, replace_read_only=replace_read_only)


def guard_sidecars(output: Path, source: Path, run: Run) -> None:
    """Refuse an output that is a file the reader of ``source`` read beside it (a sidecar such
    as the xplane reader's ``tcreport-capture.json``), once the read says which those are."""
    _fs.refuse_read(output, source, run.meta.files)
