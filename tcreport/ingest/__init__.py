"""Readers: one package per input format, each turning a profiler's output into a :class:`Run`.

Every format package (``nsys/``, ``kineto/``, ``xplane/``, ``dlprof/``, ``ncu/``, ``parquet/``) has
reader modules that implement :class:`Reader`: ``sniff(path) -> bool`` (cheap, content-based, never
raises for a readable file) and ``read(path) -> Run``. :func:`detect` asks them in a fixed order;
suffixes are never trusted because DLProf, nsys and the framework profilers all let users rename
outputs. A new format is one new package plus one line in :data:`READERS`. Readers are imported only
when asked for, so ``tcreport --help`` stays light.
"""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, Protocol, cast

from tcreport.errors import InputError, UnsupportedFormatError
from tcreport.ingest.nsys import rep as nsys_rep
from tcreport.model import SourceFormat

if TYPE_CHECKING:
    from tcreport.ingest.job import Job, RankTrace
    from tcreport.ingest.nsys.processes import Export
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


#: Readers that recognise a directory themselves (a DLProf result folder, an ingest folder, a TF
#: profile run); any other directory is read through the one trace file it holds.
_DIRECTORY_FORMATS = (
    SourceFormat.TCREPORT_PARQUET,
    SourceFormat.DLPROF_CSV,
    SourceFormat.DLPROF_JSON,
    SourceFormat.TF_XPLANE,
)


def _sniff(path: Path, formats: tuple[SourceFormat, ...] | None = None) -> SourceFormat | None:
    for fmt, _ in READERS:
        if (formats is None or fmt in formats) and reader(fmt).sniff(path):
            return fmt
    if nsys_rep.is_report(path):
        return SourceFormat.NSYS_SQLITE  # read through `nsys export` (see nsys/rep.py)
    return None


def _traces_in(directory: Path) -> list[tuple[SourceFormat, Path]]:
    """The traces directly inside ``directory`` (not hidden), each with its format."""
    try:
        children = sorted(p for p in directory.iterdir() if not p.name.startswith("."))
    except OSError as exc:
        raise InputError(f"cannot list: {exc.strerror}", directory) from exc
    found = []
    for child in children:
        fmt = _sniff(child) if child.is_file() else None
        if fmt is not None:
            found.append((fmt, child))
    return found


def _ingest_folders_in(directory: Path) -> list[tuple[SourceFormat, Path]]:
    """``tcreport ingest`` folders directly inside ``directory`` (each may be a job's rank)."""
    fmt = SourceFormat.TCREPORT_PARQUET
    try:
        children = sorted(p for p in directory.iterdir() if not p.name.startswith("."))
    except OSError as exc:
        raise InputError(f"cannot list: {exc.strerror}", directory) from exc
    return [(fmt, c) for c in children if c.is_dir() and reader(fmt).sniff(c)]


def _traces_below(directory: Path) -> list[tuple[SourceFormat, Path]]:
    """The traces one level down: each subfolder that is a trace itself (a DLProf result folder,
    an ingest folder, a TF profile run), else the trace files directly inside it."""
    found: list[tuple[SourceFormat, Path]] = []
    try:
        children = sorted(p for p in directory.iterdir() if not p.name.startswith("."))
    except OSError:
        return found
    for child in children:
        if not child.is_dir():
            continue
        fmt = _sniff(child, _DIRECTORY_FORMATS)
        if fmt is not None:
            found.append((fmt, child))
            continue
        try:
            found += _traces_in(child)
        except InputError:  # a subfolder we may not list is not a trace to offer
            continue
    return found


#: How many traces an error lists before "and N more".
_LISTED = 12


def _choose_one(
    path: Path, found: list[tuple[SourceFormat, Path]], where: str, unsearched: str = ""
) -> NoReturn:
    shown = [f"{p.relative_to(path).as_posix()} ({f.value})" for f, p in found[:_LISTED]]
    more = f" and {len(found) - _LISTED} more" if len(found) > _LISTED else ""
    which = "give one of them" if len(found) > 1 else "give its path"
    # Nsight Compute CSVs are mostly given to --counters, which reads one beside its trace
    ncu = all(f is SourceFormat.NCU_CSV for f, _ in found)
    many = (
        "`--counters` takes one; `tcreport batch` reads many"
        if ncu
        else "`tcreport batch` reads many"
    )
    raise UnsupportedFormatError(
        f"holds {len(found)} trace{'s' if len(found) > 1 else ''}{where}: {', '.join(shown)}"
        f"{more}; {which} ({many}){unsearched}",
        path,
    )


def _has_subfolders(d: Path) -> bool:
    try:
        return any(c.is_dir() and not c.name.startswith(".") for c in d.iterdir())
    except OSError:
        return False


def _unsearched(path: Path, found: list[tuple[SourceFormat, Path]]) -> str:
    """The subfolders that gave no trace one level down but hold folders of their own, named so
    a list of the others is not read as all there is (a sample folder of folders of traces)."""
    try:
        dirs = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return ""
    gave = {p.relative_to(path).parts[0] for _, p in found}
    empty = [d.name for d in dirs if d.name not in gave and _has_subfolders(d)]
    if not empty:
        return ""
    shown = ", ".join(empty[:_LISTED]) + (
        f" and {len(empty) - _LISTED} more" if len(empty) > _LISTED else ""
    )
    return f"; not searched deeper than one level: {shown}"


def profile_runs(path: Path) -> list[Path]:
    """The run folders of a ``tcreport profile`` output (``plugins/profile/<run>/``, the layout
    TensorBoard reads), oldest first: their names are the local time the run started."""
    base = path / "plugins" / "profile"
    try:
        return sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []


def resolve(path: Path) -> tuple[SourceFormat, Path]:
    """The format of ``path`` and the file or folder to read: a folder that is not a trace itself
    but holds exactly one trace file is read through that file; a profile output folder holding
    several runs is read through the newest (:func:`load` says which); one holding several traces,
    or traces only one level down (in subfolders, DLProf result folders among them), lists them."""
    _check_readable(path)
    runs = profile_runs(path) if path.is_dir() else []
    if runs:
        return resolve(runs[-1])
    fmt = _sniff(path, _DIRECTORY_FORMATS if path.is_dir() else None)
    if fmt is not None:
        return fmt, path
    if path.is_dir():
        found = _traces_in(path)
        if len(found) == 1:
            return found[0]
        if found:
            _refuse_several(path, found, "")
        below = _traces_below(path)
        if below and all(f is SourceFormat.TCREPORT_PARQUET for f, _ in below):
            _refuse_several(path, below, " in its subfolders")  # ranks ingested one by one
        if below:
            _choose_one(path, below, " in its subfolders", _unsearched(path, below))
    _unsupported(path)


def _refuse_several(path: Path, found: list[tuple[SourceFormat, Path]], where: str) -> NoReturn:
    """A folder of several traces: name them, and the jobs among them (ingest.job)."""
    from tcreport.ingest import job

    jobs, rest = job.group(path, found)
    if len(jobs) == 1 and not rest:
        raise UnsupportedFormatError(
            f"holds the ranks of one distributed job ({jobs[0].describe()}): read it as a job "
            "(`tcreport report`, `summary`, `check`, `diff` and `tcreport.open` do; "
            "`tcreport.api.find_job`), not as one trace",
            path,
        )
    if not jobs:
        _choose_one(path, found, where)
    others = [(f, p) for f, p in found if p in set(rest)]
    raise UnsupportedFormatError(
        f"holds {len(jobs)} distributed job{'s' if len(jobs) > 1 else ''} and "
        f"{len(others)} other trace{'s' if len(others) != 1 else ''}: "
        f"{job.describe_contents(jobs, others)}; give a folder holding one job, or one trace "
        "(`tcreport batch` reads many)",
        path,
    )


def find_job(path: Path) -> Job | None:
    """The distributed job ``path`` holds when it is a folder of the ranks of one job and nothing
    else, or one Nsight Systems export of a multi-process launch (:mod:`tcreport.ingest.job`);
    None for anything else, which :func:`load` reads or refuses as before."""
    from tcreport.ingest import job

    _check_readable(path)
    if not path.is_dir():
        return _launch(path)
    if _sniff(path, _DIRECTORY_FORMATS) is not None:
        return None
    found = _traces_in(path) + _ingest_folders_in(path)
    if len(found) == 1:
        return _launch(found[0][1])  # a folder read through its one trace (resolve)
    if len(found) < 2:
        return None
    jobs, rest = job.group(path, found)
    if len(jobs) != 1 or rest:
        return None
    try:
        children = [c for c in path.iterdir() if c.is_file() and not c.name.startswith(".")]
    except OSError:  # listed a moment ago; gone or locked since: no names to add
        children = []
    return job.with_unreadable(jobs[0], children, {p for _, p in found})


def _launch(path: Path) -> Job | None:
    """The job of a multi-process nsys SQLite export (``.nsys-rep`` reports are read whole)."""
    from tcreport.ingest import job

    if _sniff(path) is not SourceFormat.NSYS_SQLITE or nsys_rep.is_report(path):
        return None
    return job.launch_job(path)


#: The last multi-process export read whole, kept while its ranks are taken off it one after the
#: other (one read per job instead of one per rank; the ranks together are the whole export, and
#: each rank's rows are moved out of it, so this keeps no more than reading it once does). Keyed
#: by path, size and mtime.
_WHOLE: dict[tuple[str, int, int], Export] = {}


def load_rank(rank: RankTrace, *, geometry: bool = True) -> Run:
    """One rank of a job: its trace, or its process's part of a multi-process export.
    ``geometry=False`` (the job's analysis, which never reads it): such an export is read
    without its kernels' launch geometry (``nsys.reader.read``); a later call that wants it
    reads the export again."""
    from tcreport.ingest.nsys import processes

    if rank.process_id is None:
        return load(rank.path)
    try:  # found when the job was: gone or locked since is the user's error, not a traceback
        st = rank.path.stat()
    except OSError as exc:
        _check_readable(rank.path)
        raise InputError(f"cannot read: {exc.strerror}", rank.path) from exc
    key = (str(rank.path.resolve()), st.st_size, st.st_mtime_ns)
    export = _WHOLE.get(key)
    # read again for a rank let go, or for the geometry left out
    if export is None or not export.gives(rank.process_id) or (geometry and not export.geometry):
        _WHOLE.clear()  # before reading: never two exports at once
        # (no name for the whole run: the split frees its columns as it goes)
        export = _WHOLE[key] = processes.Export(
            load(rank.path) if geometry else _read(rank.format, rank.path, geometry=False),
            geometry=geometry,
        )
    return export.rank(rank.rank, rank.process_id)


def _held(rank: RankTrace) -> Export | None:
    if rank.process_id is None:
        return None
    try:
        st = rank.path.stat()
    except OSError:
        return None
    return _WHOLE.get((str(rank.path.resolve()), st.st_size, st.st_mtime_ns))


def release_rank(rank: RankTrace) -> None:
    """Let go of a multi-process export's rows of ``rank`` (analysed, never to be asked for
    again: :func:`load_rank` would read the export again)."""
    export = _held(rank)
    if export is not None and rank.process_id is not None:
        export.forget(rank.process_id)


def held_beside(rank: RankTrace) -> int:
    """Bytes of other ranks' rows :func:`load_rank` holds beside ``rank``'s (0: none)."""
    export = _held(rank)
    return 0 if export is None or rank.process_id is None else export.held_beside(rank.process_id)


def forget_ranks() -> None:
    """Drop the export :func:`load_rank` keeps (a job's ranks are all read)."""
    _WHOLE.clear()


def detect(path: Path) -> SourceFormat:
    """The format of ``path`` itself, judged by content: a plain folder is not a trace even when it
    holds one (batch discovery walks into it and finds the file; :func:`load` resolves it)."""
    _check_readable(path)
    fmt = _sniff(path)
    return fmt if fmt is not None else _unsupported(path)


def _unsupported(path: Path) -> NoReturn:
    if path.is_dir():
        raise UnsupportedFormatError(
            "no supported trace in this directory (looked for DLProf CSV/JSON reports, "
            "dlprof_dldb.sqlite, Nsight Systems SQLite exports or .nsys-rep reports, PyTorch "
            "profiler (Kineto) JSON, TensorFlow profiler xplane.pb, Nsight Compute CSV, a "
            "tcreport ingest folder; `tcreport batch` reads a tree of traces)",
            path,
        )
    raise UnsupportedFormatError(
        "not a trace tcreport can read (DLProf CSV/JSON/SQLite, Nsight Systems SQLite or "
        ".nsys-rep, PyTorch profiler (Kineto) JSON, TensorFlow profiler xplane.pb, Nsight "
        "Compute CSV)",
        path,
    )


def load(path: Path, fmt: SourceFormat | None = None) -> Run:
    """Read ``path`` into a :class:`Run`; ``fmt`` skips detection. A folder holding one trace is
    read through it; an ``.nsys-rep`` report through ``nsys export``. Every run leaves through
    :func:`tcreport.ingest.common.plausible.checked`: impossible rows dropped with a note, totals
    that would wrap int64 refused."""
    runs = profile_runs(path) if fmt is None and path.is_dir() else []
    if fmt is None:
        fmt, path = resolve(path)
    run = _read(fmt, path)
    if len(runs) > 1:
        note = (
            f"{len(runs)} profiling runs under plugins/profile; this is the newest, "
            f"{runs[-1].name} (give a run's folder to read another)."
        )
        run = run.replace(meta=dataclasses.replace(run.meta, notes=(*run.meta.notes, note)))
    return run


def _read(fmt: SourceFormat, path: Path, *, geometry: bool = True) -> Run:
    from tcreport.ingest.common import plausible
    from tcreport.ingest.common.memory import release_free_memory

    if not geometry:  # only asked of a multi-process export (load_rank): an nsys SQLite file
        from tcreport.ingest.nsys import reader as nsys_reader

        if fmt is not SourceFormat.NSYS_SQLITE or nsys_rep.is_report(path):
            raise ValueError(f"geometry=False reads an nsys SQLite export, not {fmt.value}")
        run = plausible.checked(nsys_reader.read(path, geometry=False))
    elif fmt is SourceFormat.NSYS_SQLITE and nsys_rep.is_report(path):
        with nsys_rep.exported(path) as sqlite:
            exported = reader(fmt).read(sqlite)
        meta = dataclasses.replace(exported.meta, path=str(path), files=(path.name,))
        run = plausible.checked(exported.replace(meta=meta))
    else:
        run = reader(fmt).read(path)
        # the net under every reader (an ingest folder's reader runs it itself, naming its files)
        if fmt is not SourceFormat.TCREPORT_PARQUET:
            run = plausible.checked(run)
    # What reading freed (a JSON trace's decoded events, a reader's temporaries) goes back to the
    # OS, so the analysis that follows starts from the tables alone: its peak adds to theirs.
    release_free_memory()
    return run
