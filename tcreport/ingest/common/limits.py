"""Bounds that keep a damaged or hostile input from exhausting memory, each with an override.

A 4 MB gzip file can hold a 4 GiB string; a sparse file can claim 5 GB of NUL bytes after a valid
``{"traceEvents":[``. Without bounds the readers buffer all of it before deciding, and the machine
(a CI runner, a batch worker) runs out of memory instead of getting a one-line error. The limits are
far above any real trace, and each can be raised from the environment:

==============================  =======  ==========================================================
``TCREPORT_MAX_INPUT_MB``       16384    decompressed text of one trace file
``TCREPORT_MAX_GZIP_RATIO``     200      decompressed / compressed size, checked past 256 MiB of text
                                         (real Kineto traces compress 10-30x)
``TCREPORT_MAX_VALUE_MB``       256      one JSON value (an event, the text before ``traceEvents``)
``TCREPORT_MAX_REPORT_MB``      2048     a DLProf / Nsight Compute report read whole (CSV, JSON)
``TCREPORT_MAX_QUERY_S``        600      one SQLite query's run time (nsys exports, DLProf database)
``TCREPORT_MAX_QUERY_STEPS``    (size)   one SQLite query's VM steps; by default 64 per byte of
                                         the file plus 16 M (the real exports need under one)
==============================  =======  ==========================================================

A value of 0 turns that limit off. JSON text can never hold a NUL byte (control characters in
strings must be escaped), so a NUL in a JSON input ends the read at once: a sparse or binary file
fails within its first read instead of after gigabytes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO, Protocol

from tcreport.errors import InputError

MIB = 1 << 20
RATIO_AFTER = 256 * MIB


class TooLargeError(InputError):
    """An input past one of the limits above; the message names the variable that raises it."""


def _env(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    try:
        return int(raw) if raw.strip() else default
    except ValueError:
        return default


def max_input() -> int:
    return _env("TCREPORT_MAX_INPUT_MB", 16384) * MIB


def max_ratio() -> int:
    return _env("TCREPORT_MAX_GZIP_RATIO", 200)


def max_value() -> int:
    return _env("TCREPORT_MAX_VALUE_MB", 256) * MIB


def max_report() -> int:
    return _env("TCREPORT_MAX_REPORT_MB", 2048) * MIB


def max_query_seconds() -> float:
    return float(_env("TCREPORT_MAX_QUERY_S", 600))


def max_query_steps(file_size: int) -> int:
    return _env("TCREPORT_MAX_QUERY_STEPS", 64 * file_size + 16_000_000)


def value_too_large(size: int, offset: int, path: Path) -> TooLargeError:
    mb = max_value() // MIB
    return TooLargeError(
        f"one JSON value of more than {size // MIB} MiB at byte {offset} (limit {mb} MiB); "
        "damaged or not a trace (raise TCREPORT_MAX_VALUE_MB to read it anyway)",
        path,
    )


def check_report_size(path: Path) -> None:
    """A report that is read whole: refuse one whose size alone is absurd, before reading it."""
    limit = max_report()
    try:
        size = path.stat().st_size
    except OSError:
        return  # the read itself reports it
    if limit and size > limit:
        raise TooLargeError(
            f"{size // MIB} MiB, more than any profiler report (limit {limit // MIB} MiB; "
            "raise TCREPORT_MAX_REPORT_MB to read it anyway)",
            path,
        )


class _Readable(Protocol):
    def read(self, n: int = -1, /) -> bytes: ...


class GuardedText:
    """Wraps a (possibly decompressing) binary stream: counts what it yields, refuses NUL bytes,
    more text than ``TCREPORT_MAX_INPUT_MB`` and, for gzip, a ratio past ``TCREPORT_MAX_GZIP_RATIO``.
    """

    def __init__(self, src: _Readable | BinaryIO, path: Path, raw: BinaryIO | None) -> None:
        """``raw``: the compressed file under ``src`` when it decompresses (its position is how
        much compressed data has been consumed), else None."""
        self._src = src
        self._path = path
        self._raw = raw
        self.total = 0
        self._max = max_input()
        self._ratio = max_ratio()

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            raise ValueError("GuardedText reads in chunks")
        chunk = self._src.read(n)
        if not chunk:
            return chunk
        nul = chunk.find(b"\0")
        if nul >= 0:
            raise InputError(
                f"NUL byte at offset {self.total + nul}: not JSON text (a binary or sparse file?)",
                self._path,
            )
        self.total += len(chunk)
        if self._max and self.total > self._max:
            raise TooLargeError(
                f"more than {self._max // MIB} MiB of text (raise TCREPORT_MAX_INPUT_MB "
                "to read it anyway)",
                self._path,
            )
        if self._raw is not None and self._ratio and self.total > RATIO_AFTER:
            used = max(1, self._raw.tell())
            if self.total > self._ratio * used:
                raise TooLargeError(
                    f"{used // 1024} KiB of gzip data decompressed to {self.total // MIB} MiB "
                    f"({self.total // used}x): a gzip bomb or not a trace "
                    "(raise TCREPORT_MAX_GZIP_RATIO to read it anyway)",
                    self._path,
                )
        return chunk
