"""Counting a PyTorch script's training steps and turning them into ``torch.profiler`` steps.

The profiler is driven by a schedule (a function of the step number), so it records nothing until
the step before the window (warm-up, which readies the tracer) and stops after the window's last
step; ``ProfilerStep#N`` in the trace then carries the script's own step numbers. A step ends when
the step source reports one: ``optimizer.step()`` of the first optimizer that stepped (a GAN's
second optimizer does not count twice), or the key node the user named.

A key node that has not occurred once by one optimizer step after the window should have opened is
taken as a typo or a name that never runs: the window opens then, as long as asked, counting
``optimizer.step()`` calls, so the run is still recorded, and the command then stops with exit 2
naming the candidates and the report it kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

OPTIMIZER = "optimizer.step() calls"


def schedule(torch: Any, window: Callable[[], tuple[int, int]]) -> Callable[[int], Any]:
    """``torch.profiler``'s action for each step number: nothing, warm-up just before the
    window's start, record the window, save after its last step. ``window`` is asked at every
    step, so a window that moves (a key node that never ran) moves the recording with it."""
    action = torch.profiler.ProfilerAction

    def act(step: int) -> Any:
        start, stop = window()
        if step < start - 1 or step > stop:
            return action.NONE
        if step == start - 1:
            return action.WARMUP
        return action.RECORD_AND_SAVE if step == stop else action.RECORD

    return act


@dataclass
class TorchWindow:
    start: int
    stop: int
    key_node: str | None
    key_source: str | None  # how the key node is counted ("record_function ranges", ...)
    advance: Callable[[], None]  # the profiler's step()
    on_step: Callable[[int, bool], None] = lambda step, recording: None  # progress
    on_window: Callable[[], None] = lambda: None  # just before and just after the window
    steps_seen: int = 0  # steps completed by the source that owns the count
    optimizer_steps: int = 0
    key_hits: int = 0
    fell_back: bool = False
    step_ns: list[int] = field(default_factory=list)  # durations of the recorded steps
    _lead: int | None = None  # id() of the optimizer whose steps are counted
    _t0: int = 0

    @property
    def source(self) -> str:
        if self.key_node is None or self.fell_back:
            return OPTIMIZER
        return f"{self.key_source} named {self.key_node!r}"

    def began(self) -> None:
        """The profiler started: step 0 runs from here to the first step's end."""
        self._t0 = time.perf_counter_ns()

    def optimizer_stepped(self, optimizer: object) -> None:
        if self._lead is None:
            self._lead = id(optimizer)
        if id(optimizer) != self._lead:
            return
        self.optimizer_steps += 1
        if self.key_node is None or self.fell_back:
            self._ended()
        elif self.key_hits == 0 and self.optimizer_steps > max(self.start, 1):
            # One optimizer step past where the window opens (a key node that wraps the
            # optimizer step ends just after it) and the key node never ran.
            self._fall_back()

    def _fall_back(self) -> None:
        """Count optimizer steps from here and open the window now, as long as asked."""
        self.fell_back = True
        length = self.stop - self.start
        self.start = self.optimizer_steps
        self.stop = self.start + length
        self.on_window()  # before recording starts, as in _ended
        while self.steps_seen < self.optimizer_steps:
            self.steps_seen += 1
            self.advance()
        self._t0 = time.perf_counter_ns()

    def key_ended(self) -> None:
        self.key_hits += 1
        if not self.fell_back:
            self._ended()

    def _ended(self) -> None:
        step = self.steps_seen
        now = time.perf_counter_ns()
        if self.start <= step <= self.stop and self._t0:
            self.step_ns.append(now - self._t0)
        self.steps_seen += 1
        if step == self.start - 1:
            self.on_window()  # before recording starts: its cost stays out of the window
        if self.steps_seen <= self.stop + 1:
            self.advance()  # the profiler moves to step ``steps_seen``
        if step == self.stop:
            self.on_window()  # after recording stopped
        self.on_step(step, self.start <= step <= self.stop)
        self._t0 = time.perf_counter_ns()

    @property
    def recorded(self) -> int:
        return len(self.step_ns)
