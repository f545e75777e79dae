"""What a profiling run is asked to do, and what it produced.

Small frozen records so the CLI, the backends and the tests agree on one shape; the exact
command lines are part of the result because a user re-running DLProf or nsys by hand (or a test)
needs to see precisely what tcreport ran.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path


class Backend(StrEnum):
    AUTO = "auto"
    DLPROF = "dlprof"
    NSYS = "nsys"
    TF = "tf"
    TORCH = "torch"


class Framework(StrEnum):
    PYTORCH = "pytorch"
    TENSORFLOW = "tensorflow"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class ProfileRequest:
    script: Path
    script_args: tuple[str, ...] = ()
    backend: Backend = Backend.AUTO
    out_dir: Path = Path(".")
    key_node: str | None = None
    iter_start: int | None = None
    iter_stop: int | None = None
    delay_s: float | None = None  # DLProf --delay
    duration_s: float | None = None  # DLProf --duration
    python: str = field(default_factory=lambda: sys.executable)
    verbose: bool = False  # let the framework's own logging through (--verbose)
    progress: bool = False  # a step counter on stderr (the CLI sets it when stderr is a terminal)
    # Called with what was recorded when the script ends the process with os._exit (in-process
    # backends): the last chance to write the report; the process ends when it returns.
    on_hard_exit: Callable[[CaptureResult], None] | None = field(default=None, compare=False)

    @property
    def profile_name(self) -> str:
        """Base name of the profiler's files: the script's stem, as DLProf users would pick."""
        return self.script.stem or "profile"


@dataclass(frozen=True)
class CaptureResult:
    backend: Backend
    framework: Framework
    trace_path: Path  # what ``tcreport.api.load`` should read
    script_exit_code: int  # 0 when the script finished
    commands: tuple[tuple[str, ...], ...] = ()  # every external command run, exactly
    notes: tuple[str, ...] = ()  # remarks for the report (partial capture, window truncated...)
    # True when the profiler itself kept only the requested iterations (DLProf, the TF window):
    # tcreport must not slice again by key node / iteration numbers.
    sliced_by_profiler: bool = False
    # Why ``--backend auto`` chose this backend ("the script imports torch"); None when asked for.
    chosen_because: str | None = None
    # A --key-node that never ran: the run was recorded by the default step source instead, and
    # the command reports the names that did run (exit 2, the report kept).
    key_node_missing: str | None = None
    key_node_candidates: tuple[str, ...] = ()
