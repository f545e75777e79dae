"""Hooks that tell a :class:`StepWindow` where the script's training steps begin and end.

Installed for the duration of one script run and removed afterwards, so the interpreter is left as
it was. Each hook delegates to the original object; the script sees the same API.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tcreport.capture.tf_window import StepWindow

FIT = "Keras Model.fit batches"
TRACE = "tf.profiler.experimental.Trace(step_num=...) blocks"


def _fit_callback(tf: Any, steps: StepWindow) -> Any:
    class _StepCallback(tf.keras.callbacks.Callback):  # type: ignore[misc]
        """Keras resets the batch index every epoch; the window counts batches across epochs."""

        def on_train_begin(self, logs: Any = None) -> None:
            params = getattr(self, "params", None) or {}
            epochs, per_epoch = params.get("epochs"), params.get("steps")
            if isinstance(epochs, int) and isinstance(per_epoch, int):
                steps.planned(FIT, epochs * per_epoch)

        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            steps.begin(FIT)

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            steps.end(FIT)

    return _StepCallback()


def _trace_class(original: type, steps: StepWindow) -> type:
    class _Trace(original):  # type: ignore[misc]
        def __init__(self, name: str, **kwargs: Any) -> None:
            self._tcreport_step = "step_num" in kwargs
            super().__init__(name, **kwargs)

        def __enter__(self) -> Any:
            if self._tcreport_step:
                steps.begin(TRACE)  # may start the profiler: before the marker opens
            return super().__enter__()

        def __exit__(self, *exc: object) -> Any:
            result = super().__exit__(*exc)
            if self._tcreport_step:
                steps.end(TRACE)
            return result

    return _Trace


class _Counted:
    """A ``tf.function`` whose calls are steps; everything else is delegated."""

    def __init__(self, fn: Any, steps: StepWindow, source: str) -> None:
        self._fn, self._steps, self._source = fn, steps, source

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self._steps.begin(self._source)
        try:
            return self._fn(*args, **kwargs)
        finally:
            self._steps.end(self._source)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return _Counted(self._fn.__get__(obj, objtype), self._steps, self._source)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fn, name)


def _function_wrapper(original: Any, steps: StepWindow, key_node: str) -> Any:
    source = f"calls of tf.function {key_node!r}"

    def wrap(py: Any, fn: Any) -> Any:
        return _Counted(fn, steps, source) if getattr(py, "__name__", None) == key_node else fn

    def function(func: Any = None, *args: Any, **kwargs: Any) -> Any:
        if func is None:
            decorator = original(None, *args, **kwargs)
            return lambda f: wrap(f, decorator(f))
        return wrap(func, original(func, *args, **kwargs))

    return function


@contextmanager
def installed(tf: Any, steps: StepWindow, key_node: str | None) -> Iterator[None]:
    model_cls = tf.keras.Model
    original_fit = model_cls.fit
    callback = _fit_callback(tf, steps)

    def fit(self: Any, *args: Any, **kwargs: Any) -> Any:
        callbacks = list(kwargs.pop("callbacks", None) or [])
        return original_fit(self, *args, callbacks=[*callbacks, callback], **kwargs)

    experimental = tf.profiler.experimental
    original_trace = experimental.Trace
    original_function = tf.function
    model_cls.fit = fit
    experimental.Trace = _trace_class(original_trace, steps)
    if key_node:
        tf.function = _function_wrapper(original_function, steps, key_node)
    try:
        yield
    finally:
        model_cls.fit = original_fit
        experimental.Trace = original_trace
        tf.function = original_function
