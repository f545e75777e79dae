"""Counting training steps inside a running script and profiling only ``[start, stop]``.

The TensorFlow profiler is meant to be switched on around a few steps, after warm-up (tracing,
autotuning), not for a whole run; that is also DLProf's iteration window. A step is whatever the
script exposes first: a Keras ``fit`` batch, a ``tf.profiler.experimental.Trace(step_num=...)``
block, or a call of the ``tf.function`` named by ``--key-node``. The first source that reports a
step owns the count, so Keras 2 (whose ``fit`` also opens a ``Trace`` per batch) is not counted
twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tcreport.errors import UsageError

#: Default window when the user gives none: skip step 0 (tracing, autotuning), profile four steps.
DEFAULT_START = 1
DEFAULT_LENGTH = 4


def window(iter_start: int | None, iter_stop: int | None) -> tuple[int, int]:
    start = (
        iter_start if iter_start is not None else (0 if iter_stop is not None else DEFAULT_START)
    )
    stop = iter_stop if iter_stop is not None else start + DEFAULT_LENGTH - 1
    return start, max(start, stop)


@dataclass
class StepWindow:
    """Starts the profiler when step ``start`` begins and stops it when step ``stop`` ends."""

    start: int
    stop: int
    on_start: Callable[[], None]
    on_stop: Callable[[], None]
    on_step: Callable[[int, bool], None] = lambda step, recording: None  # progress
    # True when the script has one Model.fit and no loop around it: the step count fit announces
    # is the run's, so a window past it is refused before training starts.
    single_fit: bool = False
    total: int | None = None  # steps the run will take, when fit said so
    owner: str | None = None
    steps_seen: int = 0  # steps begun
    profiling: bool = False
    done: bool = False
    step_ns: list[int] = field(default_factory=list)  # durations of the profiled steps
    _t0: int = 0
    _depth: int = 0  # nested begin/end of the owner (a tf.function called inside a Trace block)

    def begin(self, source: str) -> None:
        if self.owner is None:
            self.owner = source
        if source != self.owner:
            return
        self._depth += 1
        if self._depth > 1:
            return
        step = self.steps_seen
        self.steps_seen += 1
        if step == self.start and not self.done and not self.profiling:
            self.on_start()
            self.profiling = True
        self._t0 = time.perf_counter_ns()

    def end(self, source: str) -> None:
        if source != self.owner or self._depth == 0:
            return
        self._depth -= 1
        if self._depth:
            return
        step = self.steps_seen - 1
        recording = self.profiling
        if self.profiling:
            self.step_ns.append(time.perf_counter_ns() - self._t0)
            if step >= self.stop:
                self.finish()
        self.on_step(step, recording)

    def planned(self, source: str, steps: int) -> None:
        """A Keras ``fit`` is about to run ``steps`` steps (epochs x steps per epoch)."""
        if self.owner not in (None, source) or steps <= 0:
            return
        self.total = self.steps_seen + steps
        if self.single_fit and self.start >= self.total and not self.done:
            raise UsageError(
                f"--iter-start {self.start} is past the last step: Model.fit will run "
                f"{self.total} steps (0 to {self.total - 1}); stopped before training"
            )

    def finish(self) -> None:
        """Stop the profiler if it runs (end of window, end of script, or the script failed)."""
        if self.profiling:
            self.profiling = False
            self.done = True
            self.on_stop()

    @property
    def profiled(self) -> int:
        return len(self.step_ns)
