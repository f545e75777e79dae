"""Reading a profiler's text report: the checks every CSV/JSON reader needs, in one place.

Empty files, a byte-order mark alone and bytes that are not UTF-8 are the commonest damaged inputs;
each becomes the same one-line :class:`InputError` naming the file, whichever reader met it.
"""

from __future__ import annotations

from pathlib import Path

from tcreport.errors import InputError


def read_text(path: Path, what: str) -> str:
    """The file as text (UTF-8, a leading BOM dropped); ``what`` names the expected format."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path) from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"byte {exc.start}: not UTF-8 text; is this {what}?", path) from exc
    if not text.strip():
        raise InputError("file is empty", path)
    return text
