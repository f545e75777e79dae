"""Readers: one package per input format, each turning a profiler's output into a :class:`Run`.

Every format package (``nsys/``, ``kineto/``, ``xplane/``, ``dlprof/``, ``ncu/``, ``parquet/``) has
reader modules that implement :class:`Reader`: ``sniff(path) -> bool`` (cheap, content-based, never
raises for a readable file) and ``read(path) -> Run``. :func:`detect` asks them in a fixed order;
suffixes are never trusted because DLProf, nsys and the framework profilers all let users rename
outputs. A new format is one new package plus one line in :data:`READERS`. Readers are imported only
when asked for, so ``tcreport --help`` stays light.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from tcreport.errors import InputError, UnsupportedFormatError
from tcreport.model import SourceFormat

if TYPE_CHECKING:
    from tcreport.model import Run


class Reader(Protocol):
    """What every input format implements (as module-level functions of its reader module)."""

    def sniff(self, path: Path) -> bool:
        """Whether ``path`` holds this format, judged from its content; never raises for a file
        that can be read."""
        ...

    def read(self, path: Path) -> Run:
        """The canonical tables; a :class:`~tcreport.errors.TcreportError` for bad input."""
        ...


#: Sniffing order matters where a directory holds several things: a DLProf result folder has its
#: CSV reports, JSON, the Viewer database and the raw nsys export side by side; the CSV reports are
#: what DLProf users know, so they win.
READERS: tuple[tuple[SourceFormat, str], ...] = (
    (SourceFormat.TCREPORT_PARQUET, "tcreport.ingest.parquet.reader"),
    (SourceFormat.DLPROF_CSV, "tcreport.ingest.dlprof.csv_reader"),
    (SourceFormat.DLPROF_JSON, "tcreport.ingest.dlprof.json_reader"),
    (SourceFormat.DLPROF_SQLITE, "tcreport.ingest.dlprof.viewer_db"),
    (SourceFormat.NSYS_SQLITE, "tcreport.ingest.nsys.reader"),
    (SourceFormat.KINETO_JSON, "tcreport.ingest.kineto.reader"),
    (SourceFormat.TF_XPLANE, "tcreport.ingest.xplane.reader"),
    (SourceFormat.NCU_CSV, "tcreport.ingest.ncu.reader"),
)


if TYPE_CHECKING:  # mypy checks every registered reader module against the protocol
    from tcreport.ingest.dlprof import csv_reader, json_reader, viewer_db
    from tcreport.ingest.kineto import reader as kineto_reader
    from tcreport.ingest.ncu import reader as ncu_reader
    from tcreport.ingest.nsys import reader as nsys_reader
    from tcreport.ingest.parquet import reader as parquet_reader
    from tcreport.ingest.xplane import reader as xplane_reader

    _CHECKED: tuple[Reader, ...] = (
        parquet_reader,
        csv_reader,
        json_reader,
        viewer_db,
        nsys_reader,
        kineto_reader,
        xplane_reader,
        ncu_reader,
    )


def reader(fmt: SourceFormat) -> Reader:
    """The reader of ``fmt``, imported on first use."""
    return cast("Reader", importlib.import_module(dict(READERS)[fmt]))


def _check_readable(path: Path) -> None:
    if not path.exists():
        raise InputError("no such file or directory", path)
    if path.is_file():
        try:
            with path.open("rb") as fh:
                head = fh.read(1)
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", path) from exc
        if not head:
            raise InputError("file is empty", path)


def detect(path: Path) -> SourceFormat:
    """The format of ``path``, judged by content."""
    _check_readable(path)
    for fmt, _ in READERS:
        if reader(fmt).sniff(path):
            return fmt
    if path.is_dir():
        raise UnsupportedFormatError(
            "no supported trace in this directory (looked for DLProf CSV/JSON reports, "
            "dlprof_dldb.sqlite, Nsight Systems SQLite exports, PyTorch profiler (Kineto) JSON, "
            "TensorFlow profiler xplane.pb, Nsight Compute CSV, a tcreport ingest folder)",
            path,
        )
    raise UnsupportedFormatError(
        "not a trace tcreport can read (DLProf CSV/JSON/SQLite, Nsight Systems SQLite, "
        "PyTorch profiler (Kineto) JSON, TensorFlow profiler xplane.pb, Nsight Compute CSV)",
        path,
    )


def load(path: Path, fmt: SourceFormat | None = None) -> Run:
    """Read ``path`` into a :class:`Run`; ``fmt`` skips detection."""
    fmt = fmt or detect(path)
    return reader(fmt).read(path)
