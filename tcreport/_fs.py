"""File-system helpers shared by every writer (reports, ingest folders, batch datasets)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from tcreport.errors import OutputError


def current_umask() -> int:
    """The process umask, read by setting and restoring it (tcreport writes from one thread).

    Atomic writes go through ``tempfile``, which creates 0600 files and 0700 folders; outputs meant
    for sharing get the permissions a plain ``open`` would have given them.
    """
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


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
