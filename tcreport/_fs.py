"""File-system helpers shared by every writer (reports, ingest folders, batch datasets)."""

from __future__ import annotations

import os


def current_umask() -> int:
    """The process umask, read by setting and restoring it (tcreport writes from one thread).

    Atomic writes go through ``tempfile``, which creates 0600 files and 0700 folders; outputs meant
    for sharing get the permissions a plain ``open`` would have given them.
    """
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
