"""Reading a profiler's text report: the checks every CSV/JSON reader needs, in one place.

Empty files, a byte-order mark alone and bytes that are not UTF-8 are the commonest damaged inputs;
each becomes the same one-line :class:`InputError` naming the file, whichever reader met it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tcreport.errors import InputError
from tcreport.ingest.common import limits


def read_text(path: Path, what: str) -> str:
    """The file as text (UTF-8, a leading BOM dropped); ``what`` names the expected format."""
    limits.check_report_size(path)  # read whole: refuse an absurd size before reading it
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


def report_files(path: Path, is_report: Callable[[Path], bool]) -> list[Path]:
    """The files of a folder that ``is_report`` recognises, sorted (none if it cannot be listed)."""
    try:
        return sorted(p for p in path.iterdir() if p.is_file() and is_report(p))
    except OSError:
        return []


def sniff_reports(path: Path, is_report: Callable[[Path], bool]) -> bool:
    """True for a report file, or a folder holding at least one."""
    try:
        return (
            bool(report_files(path, is_report))
            if path.is_dir()
            else path.is_file() and is_report(path)
        )
    except OSError:
        return False
