"""A value worked out off the critical path, on a core the reader leaves idle.

A multi-process Nsight Systems export is a job, and the job says why it has no collective
message sizes (:func:`tcreport.ingest.nsys.processes.sizes_later`): a count over every NVTX row,
~1 s of SQLite on the 3.6 M-kernel export, which the job needs only once its ranks are analysed.
Run first, that second was on the critical path before the reader started. Run beside the
reader's scan, it would take a core from the scan, which keeps both busy. After the scan the
reader's own work (launch joins, the NVTX outline, attribution) runs mostly on one core, so the
nsys reader calls :func:`start_waiting` there, and the count costs no wall time at all.

A :class:`Later` that nobody started is worked out by :meth:`Later.value` in the caller's
thread, exactly as before. Only work that never holds the GIL for long goes to a thread
(the ADBC driver runs SQLite in C): a ``sqlite3`` query's progress handler is Python, and under
a main thread running Python each of its calls waited for the GIL (a 1 s count took 49 s).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

#: Later values that may run in a thread, not started yet (weak: a job dropped unread is gone)
_WAITING: weakref.WeakSet[Later[object]] = weakref.WeakSet()
_LOCK = threading.Lock()


class Later(Generic[T]):
    """``fn()``, worked out in a daemon thread once :func:`start_waiting` is called (when
    ``threaded``), else by :meth:`value` in the caller's thread. An exception is raised by
    :meth:`value`, wherever ``fn`` ran."""

    def __init__(self, fn: Callable[[], T], *, threaded: bool) -> None:
        self._fn = fn
        self._claimed = False  # a thread, or value() itself, has taken the work
        self._done = threading.Event()
        self._value: T | None = None
        self._error: BaseException | None = None
        if threaded:
            with _LOCK:
                _WAITING.add(self)  # type: ignore[arg-type]

    @classmethod
    def known(cls, value: T) -> Later[T]:
        """A value already worked out."""
        done: Later[T] = cls(lambda: value, threaded=False)
        done._claim()
        done._work()
        return done

    def _claim(self) -> bool:
        with _LOCK:
            _WAITING.discard(self)  # type: ignore[arg-type]
            claimed, self._claimed = self._claimed, True
        return not claimed

    def _start(self) -> None:
        if self._claim():
            threading.Thread(target=self._work, name="tcreport-later", daemon=True).start()

    def _work(self) -> None:
        try:
            self._value = self._fn()
        except BaseException as exc:  # raised again by value(), in the caller's thread
            self._error = exc
        finally:
            self._done.set()

    def value(self) -> T:
        """The value: waits for its thread, or works it out now where none started. A Ctrl-C
        that stopped the work here is raised, and not kept: asked again, the value is worked out
        again (a kept KeyboardInterrupt was raised by every later ask, with no Ctrl-C)."""
        if self._claim():
            self._work()
            if self._error is not None and not isinstance(self._error, Exception):
                error, self._error = self._error, None
                self._done.clear()
                with _LOCK:
                    self._claimed = False
                raise error
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]

    def __reduce__(self) -> tuple[Callable[[T], Later[T]], tuple[T]]:
        """Pickled (and deep-copied) as its value: what it holds to work it out (a thread's
        Event, local functions) does not pickle, and a :class:`~tcreport.ingest.job.Job` that
        holds one did before (a process pool's argument)."""
        return _known, (self.value(),)


def _known(value: T) -> Later[T]:
    return Later.known(value)


def start_waiting() -> None:
    """Start every threaded :class:`Later` not started yet: a core is about to fall idle."""
    with _LOCK:
        waiting = list(_WAITING)
    for later in waiting:
        later._start()
