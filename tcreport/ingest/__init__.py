"""Readers: one module per input format, each turning a profiler's output into a :class:`Run`.

Every reader module exposes ``sniff(path) -> bool`` (cheap, content-based, never raises for a
readable file) and ``read(path) -> Run``. :func:`detect` asks them in a fixed order; suffixes are
never trusted because DLProf, nsys and the framework profilers all let users rename outputs.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from tcreport.errors import InputError, UnsupportedFormatError
from tcreport.model import SourceFormat

if TYPE_CHECKING:
    from tcreport.model import Run

#: Sniffing order matters where a directory holds several things: a DLProf result folder has its
#: CSV reports, JSON, the Viewer database and the raw nsys export side by side; the CSV reports are
#: what DLProf users know, so they win.
_READERS: tuple[tuple[SourceFormat, str], ...] = (
    (SourceFormat.TCREPORT_PARQUET, "tcreport.ingest.parquet.reader"),
    (SourceFormat.DLPROF_CSV, "tcreport.ingest.dlprof.csv_reader"),
    (SourceFormat.DLPROF_JSON, "tcreport.ingest.dlprof.json_reader"),
    (SourceFormat.DLPROF_SQLITE, "tcreport.ingest.dlprof.viewer_db"),
    (SourceFormat.NSYS_SQLITE, "tcreport.ingest.nsys.reader"),
    (SourceFormat.KINETO_JSON, "tcreport.ingest.kineto.reader"),
    (SourceFormat.TF_XPLANE, "tcreport.ingest.xplane.reader"),
    (SourceFormat.NCU_CSV, "tcreport.ingest.ncu.reader"),
)


def _module(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:  # reader not written yet; any other missing import is a real bug
            return None
        raise


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
    for fmt, modname in _READERS:
        mod = _module(modname)
        if mod is not None and mod.sniff(path):
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
    modname = dict(_READERS)[fmt]
    mod = _module(modname)
    if mod is None:
        raise UnsupportedFormatError(f"no reader for {fmt.value} in this build", path)
    run: Run = mod.read(path)
    return run
