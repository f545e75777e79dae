"""Hooks that tell a :class:`~tcreport.capture.torch_window.TorchWindow` where steps end.

``optimizer.step()`` is PyTorch's own global hook (``register_optimizer_step_post_hook``), the
counterpart of DLProf's ``AssignAddVariableOp`` key node. A key node is whatever the user named:
a function the script defines (counted by a decorator added to its definition), an ``nn.Module``
class (global forward hooks, outermost call only), or else a ``record_function`` / NVTX range.
The names of the ranges that did run are kept, so a key node that never occurs is answered with
the ones that did. Everything is removed when the script ends.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from tcreport.capture.torch_window import TorchWindow

FUNCTION = "calls of the function"
MODULE = "forward calls of nn.Module"
RANGE = "record_function/NVTX ranges"


def key_kind(torch: Any, key: str, functions: list[str], classes: list[str]) -> str:
    """How ``key`` is counted: a function the script defines, a module class, or a range."""
    if key in functions:
        return FUNCTION
    nn_class = getattr(torch.nn, key, None)
    if key in classes or (isinstance(nn_class, type) and issubclass(nn_class, torch.nn.Module)):
        return MODULE
    return RANGE


@dataclass
class Seen:
    """Names that could have been key nodes, for the message when the asked one never ran."""

    ranges: dict[str, int] = field(default_factory=dict)

    def add(self, name: str) -> None:
        if len(self.ranges) < 1000 or name in self.ranges:
            self.ranges[name] = self.ranges.get(name, 0) + 1


def _counted(win: TorchWindow) -> Callable[[Any], Any]:
    def decorate(fn: Any) -> Any:
        depth = 0

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            nonlocal depth
            depth += 1
            try:
                return fn(*args, **kwargs)
            finally:
                depth -= 1
                if depth == 0:
                    win.key_ended()

        return wrapper

    return decorate


@contextmanager
def _ranges(torch: Any, win: TorchWindow, seen: Seen, count: bool) -> Iterator[None]:
    rf = torch.autograd.profiler.record_function
    exit_ = rf.__exit__
    nvtx = torch.cuda.nvtx
    push, pop = nvtx.range_push, nvtx.range_pop
    stack: list[str] = []

    def rf_exit(self: Any, *exc: Any) -> Any:
        result = exit_(self, *exc)
        name = str(getattr(self, "name", ""))
        if not name.startswith("ProfilerStep#"):  # the profiler's own step marks
            seen.add(name)
        if count and name == win.key_node:
            win.key_ended()
        return result

    def nv_push(msg: Any) -> Any:
        result = push(msg)
        stack.append(str(msg))
        return result

    def nv_pop() -> Any:
        result = pop()
        if stack:
            name = stack.pop()
            seen.add(name)
            if count and name == win.key_node:
                win.key_ended()
        return result

    rf.__exit__ = rf_exit
    nvtx.range_push, nvtx.range_pop = nv_push, nv_pop
    try:
        yield
    finally:
        rf.__exit__ = exit_
        nvtx.range_push, nvtx.range_pop = push, pop


@contextmanager
def _modules(torch: Any, win: TorchWindow) -> Iterator[None]:
    hooks = torch.nn.modules.module
    depth = 0

    def pre(module: Any, args: Any) -> None:
        nonlocal depth
        if type(module).__name__ == win.key_node:
            depth += 1

    def post(module: Any, args: Any, output: Any) -> None:
        nonlocal depth
        if type(module).__name__ == win.key_node and depth:
            depth -= 1
            if depth == 0:
                win.key_ended()

    handles = [
        hooks.register_module_forward_pre_hook(pre),
        hooks.register_module_forward_hook(post),
    ]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


@contextmanager
def installed(torch: Any, win: TorchWindow, seen: Seen) -> Iterator[dict[str, Any]]:
    """Install the step hooks; yields the decorators :func:`tcreport.capture.script.run` adds
    to the script's functions (only for a function key node)."""
    optim = importlib.import_module("torch.optim.optimizer")  # the hook registry

    decorators: dict[str, Any] = {}
    with ExitStack() as stack:
        handle = optim.register_optimizer_step_post_hook(
            lambda opt, args, kwargs: win.optimizer_stepped(opt)
        )
        stack.callback(handle.remove)
        if win.key_node is not None:
            stack.enter_context(_ranges(torch, win, seen, count=win.key_source == RANGE))
            if win.key_source == MODULE:
                stack.enter_context(_modules(torch, win))
            elif win.key_source == FUNCTION:
                decorators[win.key_node] = _counted(win)
        yield decorators


OWN_PROFILER = (
    "{script} runs its own torch.profiler, and one thread can hold only one: remove it (or its "
    "`with torch.profiler.profile(...)` block) to profile with tcreport, or run the script as it "
    "is and read the trace it writes with `tcreport report TRACE`"
)


@contextmanager
def one_profiler(torch: Any, script: str) -> Iterator[None]:
    """Refuse, before it starts, a second profiler the script opens while tcreport's runs (a
    ``torch.profiler.profile`` or the older ``torch.autograd.profiler.profile``): PyTorch allows
    one per thread, and the clash otherwise surfaces at tcreport's next step as "Profiler is
    already enabled on this thread" and can end in a crash. Installed after tcreport's own
    profiler started, so only the script's is refused."""
    from tcreport.errors import UsageError

    targets = [
        (torch.profiler.profile, "start"),
        (importlib.import_module("torch.profiler.profiler")._KinetoProfile, "start"),
        (torch.autograd.profiler.profile, "__enter__"),
    ]
    saved = [(cls, name, cls.__dict__[name]) for cls, name in targets if name in cls.__dict__]

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise UsageError(OWN_PROFILER.format(script=script))

    for cls, name, _ in saved:
        setattr(cls, name, refuse)
    try:
        yield
    finally:
        for cls, name, original in saved:
            setattr(cls, name, original)
