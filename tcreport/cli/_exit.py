"""Leaving the ``tcreport`` process without tearing the interpreter down.

A trace command's process ends right after its output is written. Python's own shutdown then
frees every module, object and Arrow buffer one by one and runs a last full collection: on the
230 MiB Kineto trace that is ~0.1 s of CPU (about 7 % of the command), on a small trace ~40 ms,
for memory the kernel takes back at once anyway. :func:`leave` skips that teardown and keeps
everything a program may rely on at exit: the streams are flushed, every ``atexit`` handler runs
(logging's shutdown, ``weakref.finalize`` cleanups such as temporary directories, multiprocessing's
clean-up), and the exit status is the one ``sys.exit`` would give.

It is armed only for the command process itself (:data:`tcreport.cli.app.OWN_PROCESS`), never for
``profile`` (the user's script runs in this interpreter and its objects' finalisers must run), and
never under a test runner or an embedder calling the Typer app. Where it cannot be sure the quick
exit is safe (another non-daemon thread still running, multiprocessing finalisers pending, a
stream that will not flush, no ``atexit._run_exitfuncs``) it does nothing and the ordinary
shutdown follows.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading

_armed = False


def arm() -> None:
    """Let :func:`leave` end this process quickly (the command process, not ``profile``)."""
    global _armed
    _armed = True


def leave(code: object) -> None:
    """End the process now with ``sys.exit(code)``'s status, if armed and safe; else return."""
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if not _armed or run_exit_handlers is None or _other_threads_running() or _finalisers_left():
        return
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): the message goes to stderr, the status is 1
        status = 1
        print(code, file=sys.stderr)
    if not _flushed():
        return  # a broken pipe or closed stream: the ordinary shutdown reports it as it always has
    run_exit_handlers()
    if not _flushed():  # a handler wrote something that cannot be delivered
        return
    os._exit(status & 0xFF)  # what the OS keeps of sys.exit(status), negatives included


def _other_threads_running() -> bool:
    main = threading.main_thread()
    return any(t is not main and t.is_alive() and not t.daemon for t in threading.enumerate())


def _finalisers_left() -> bool:
    """Whether multiprocessing holds finalisers (a pool's semaphores, its queues' pipes): some run
    only when their objects are collected at teardown, and skipping it leaves the resource
    tracker warning of leaked semaphores (``batch -j 2`` stopped by Ctrl-C)."""
    util = sys.modules.get("multiprocessing.util")
    return bool(getattr(util, "_finalizer_registry", None))


def _flushed() -> bool:
    for stream in (sys.stdout, sys.stderr):
        if stream is None:
            continue
        try:
            stream.flush()
        except (OSError, ValueError):
            return False
    return True
