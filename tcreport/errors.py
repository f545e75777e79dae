"""One exception tree for everything a user can get wrong.

The CLI is the only place that turns these into a one-line message and an exit code; library code
raises them with a message that names the file and the reason, never a traceback for bad input.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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


class EmptyInputError(InputError):
    """``batch`` found nothing to archive: a warning and a non-zero exit, not an empty index."""


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


#: The options that shape an analysis (:class:`tcreport.analysis.slicing.Slice`), as the Python
#: API spells them. Messages about them name them through :class:`OptionText`, so the CLI can
#: say ``--iter-start`` where the API says ``iter_start``.
OPTIONS = ("key_node", "iter_start", "iter_stop", "allow_empty", "timeline_iter")
API_WORDS: Mapping[str, str] = {name: name for name in OPTIONS}


@dataclass(frozen=True)
class OptionText:
    """A sentence about options, spelt for its reader: ``template`` names each option as
    ``{iter_start}`` and each value as ``{name}`` from ``values``. Values are substituted once, as
    data, so a key node called ``{iter_start}`` stays what it is."""

    template: str
    values: tuple[tuple[str, object], ...] = ()

    @classmethod
    def of(cls, template: str, **values: object) -> OptionText:
        return cls(template, tuple(values.items()))

    def spelt(self, words: Mapping[str, str] = API_WORDS) -> str:
        """The sentence with each option spelt as ``words`` says (the API's names by default)."""
        return self.template.format_map({**words, **dict(self.values)})

    def __str__(self) -> str:
        return self.spelt()


class OptionError(UsageError):
    """An analysis option that cannot apply to this run (or to itself: ``iter_stop`` before
    ``iter_start``). The message names options in the API's words; :meth:`spelt` gives it in
    another's (the CLI's flags)."""

    def __init__(self, text: OptionText, path: str | Path | None = None) -> None:
        self.text = text
        super().__init__(text.spelt(), path)

    def spelt(self, words: Mapping[str, str]) -> str:
        return self.text.spelt(words)

    def at(self, path: str | Path) -> OptionError:
        """The same error, naming the input it is about."""
        return OptionError(self.text, path)


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
