"""The step counter ``tcreport profile`` shows on a terminal while the script trains.

One line on stderr, rewritten in place (``step 12/40, recording 15-34``), at most ten times a
second, so a long warm-up does not look like a hang. It is shown only when stderr is a terminal:
a CI log or a pipe gets nothing extra, and the line is erased before tcreport's own output.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

_INTERVAL_NS = 100_000_000


class StepCounter:
    def __init__(self, start: int, stop: int, stream: TextIO | None = None) -> None:
        self.start, self.stop = start, stop
        self.total: int | None = None  # known when the framework says (Keras fit: epochs x steps)
        self.stream = stream if stream is not None else sys.stderr
        self._last = 0
        self._shown = False

    def __call__(self, step: int, recording: bool) -> None:
        """Step ``step`` (0-based) has just ended."""
        now = time.monotonic_ns()
        if now - self._last < _INTERVAL_NS and step not in (self.start, self.stop):
            return
        self._last = now
        total = f"/{self.total}" if self.total else ""
        self.stream.write(
            f"\r\x1b[2Ktcreport: step {step}{total}, recording {self.start}–{self.stop}"
        )
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self._shown = False


def counter(start: int, stop: int, enabled: bool) -> StepCounter | None:
    return StepCounter(start, stop) if enabled else None
