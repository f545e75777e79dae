"""Distributed jobs in ``tcreport batch``: the ranks of one job found side by side are one run.

Discovery lists every trace of a folder; the ones that are ranks of one job (the rules of
:mod:`tcreport.ingest.job`: ``distributedInfo``, or ``rank-N`` file names) become one entry whose
``members`` are those traces, named after the folder (or, where the folder holds more than one
job, after the folder and the job's file names). Its run id is the hash of the members' names and
bytes, so adding a rank makes a new run, and re-running a batch skips a job it holds.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Protocol, TypeVar

from tcreport.ingest import job as jobs
from tcreport.model import SourceFormat

_CHUNK = 1 << 20


class _Entry(Protocol):
    @property
    def path(self) -> Path: ...

    @property
    def format(self) -> str | None: ...

    @property
    def error(self) -> str | None: ...


E = TypeVar("E", bound=_Entry)


def _relative(root: Path, path: Path) -> str:
    return (path.relative_to(root).as_posix() if path != root else path.name) or path.name


def regroup(root: Path, folder: Path, found: list[E], make: Any) -> list[E]:
    """``found`` (the entries directly in ``folder``) with each job's ranks replaced by one entry
    made by ``make(folder, format, None, members=..., source=...)``."""
    traces = [
        (SourceFormat(f.format), f.path)
        for f in found
        if f.format is not None and f.error is None and f.path.parent == folder
    ]
    if len(traces) < 2:
        return found
    groups, rest = jobs.group(folder, traces)
    if not groups:
        return found
    taken = {r.path for g in groups for r in g.ranks}
    out = [f for f in found if f.path not in taken]
    base = _relative(root, folder)
    for g in groups:
        alone = g.label == (folder.name or str(folder))
        source = base if alone else f"{base}/{g.label.split('/', 1)[-1]}"
        members = tuple(r.path for r in g.ranks)
        out.append(make(folder, g.ranks[0].format.value, None, members=members, source=source))
    return out


def members_hash(members: tuple[Path, ...]) -> str:
    """sha256 of the members' sorted (name, size, bytes), as a folder's content hash is made."""
    h = hashlib.sha256()
    for path in sorted(members, key=lambda p: p.name):
        h.update(path.name.encode("utf-8") + b"\0" + str(path.stat().st_size).encode() + b"\0")
        with path.open("rb") as fh:
            while chunk := fh.read(_CHUNK):
                h.update(chunk)
    return h.hexdigest()
