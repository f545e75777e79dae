"""What a folder holds, to prove a command left it as it was (the user's files are sacred)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: relative path -> (kind, permission bits, bytes or link target)
Snapshot = dict[str, tuple[str, int, bytes | str]]


def snapshot(root: Path) -> Snapshot:
    """Every entry under ``root`` (links not followed): kind, mode and bytes or link target.

    Contents, not just names: a command that rewrites a file in place, changes its mode or
    retargets a link is caught as surely as one that adds or removes a file."""
    out: Snapshot = {}
    for p in sorted([root, *root.rglob("*")]):
        st = p.lstat()
        key = p.relative_to(root).as_posix()
        if stat.S_ISLNK(st.st_mode):
            out[key] = ("link", 0, os.readlink(p))
        elif stat.S_ISDIR(st.st_mode):
            out[key] = ("dir", stat.S_IMODE(st.st_mode), b"")
        else:
            out[key] = ("file", stat.S_IMODE(st.st_mode), p.read_bytes())
    return out
