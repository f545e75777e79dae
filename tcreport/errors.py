"""One exception tree for everything a user can get wrong.

The CLI is the only place that turns these into a one-line message and an exit code; library code
raises them with a message that names the file and the reason, never a traceback for bad input.
"""

from __future__ import annotations

from pathlib import Path


class TcreportError(Exception):
    """Base of every error tcreport reports to a user."""

    exit_code = 1

    def __init__(self, message: str, path: str | Path | None = None) -> None:
        self.path = None if path is None else str(path)
        self.reason = message
        super().__init__(f"{self.path}: {message}" if self.path else message)


class InputError(TcreportError):
    """The input is not something tcreport can read (wrong format, corrupt, empty)."""

    exit_code = 2


class UnsupportedFormatError(InputError):
    """No reader recognises the content."""


class MissingExtraError(InputError):
    """Reading this input needs an optional extra that is not installed (``tf`` for xplane).

    ``extra`` names it, so ``batch`` records which environment failed and retries the run once
    the extra is installed, instead of counting the trace as broken.
    """

    def __init__(self, message: str, path: str | Path | None = None, *, extra: str) -> None:
        super().__init__(message, path)
        self.extra = extra


class SchemaError(TcreportError):
    """A table does not conform to the canonical schema (a reader bug or a damaged dataset)."""

    exit_code = 3


class UsageError(TcreportError):
    """Options that contradict each other or the input."""

    exit_code = 2


class OutputError(TcreportError):
    """An output file or directory could not be written."""

    exit_code = 4


class CaptureError(TcreportError):
    """A profiler could not be run, or the profiled script failed."""

    exit_code = 5


class ScriptFailedError(CaptureError):
    """The profiled script itself failed before anything could be captured: tcreport exits with
    the script's own exit code, so ``tcreport profile`` fails the way ``python script.py`` would."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code if 0 < exit_code < 256 else 1
