"""What identifies an input in the dataset: the hash of its bytes and its date.

Split from :mod:`tcreport.batch.runner`, which finds the inputs and schedules the work.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

HASH_CHUNK = 1 << 20


def _files(path: Path) -> Iterator[tuple[str, Path]]:
    if path.is_file():
        yield path.name, path
        return
    for p in sorted(path.rglob("*")):
        if p.is_file():
            yield p.relative_to(path).as_posix(), p


def content_hash(path: Path) -> str:
    """sha256 of the bytes; for a folder, of its files' sorted (relative name, bytes)."""
    h = hashlib.sha256()
    folder = path.is_dir()
    for name, file in _files(path):
        if folder:
            h.update(name.encode("utf-8") + b"\0" + str(file.stat().st_size).encode() + b"\0")
        with file.open("rb") as fh:
            while chunk := fh.read(HASH_CHUNK):
                h.update(chunk)
    return h.hexdigest()


def mtime(path: Path) -> float:
    """The newest file's modification time: the run's date when the trace gives none."""
    try:
        return max((f.stat().st_mtime for _, f in _files(path)), default=path.stat().st_mtime)
    except OSError:  # unreadable or a dangling link: the link itself still has a date
        return path.lstat().st_mtime
