"""One writer per batch folder: an exclusive ``flock`` on ``OUT/.tcreport-batch.lock``.

Two ``tcreport batch`` runs into one folder would both read the dataset, both decide the same runs
are missing and race on the staging folder and the renames: a run could vanish while the survivor
reported success. The second writer therefore refuses at once with one line (it does not wait: a
CI job queued behind a stuck batch should fail visibly rather than hang). ``flock`` is released by
the kernel when the holder exits, even on SIGKILL, so a crashed batch never leaves a stale lock.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tcreport.errors import OutputError

LOCK_NAME = ".tcreport-batch.lock"


@contextmanager
def exclusive(out: Path) -> Iterator[None]:
    """Hold the folder's batch lock for the duration, or raise a one-line OutputError."""
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(out / LOCK_NAME, flags, 0o644)
    except OSError as exc:
        raise OutputError(f"cannot create the batch lock {LOCK_NAME}: {exc.strerror}", out) from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OutputError(
                "another tcreport batch is writing to this folder; "
                "run again when it has finished, or choose another -o",
                out,
            ) from None
        except OSError as exc:
            raise OutputError(f"cannot lock {LOCK_NAME}: {exc.strerror}", out) from exc
        yield
    finally:
        os.close(fd)
