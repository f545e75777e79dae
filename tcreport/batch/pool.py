"""The local process pool of ``tcreport batch``: survives a dying worker, dies with its coordinator.

Three failure modes shape this module:

* A worker killed by the OOM killer (or crashing in native code) breaks a
  :class:`~concurrent.futures.ProcessPoolExecutor` and fails every future it holds, without saying
  which trace was to blame. So at most ``jobs`` tasks are in flight at once; the ones in flight at a
  crash are run again, one at a time in a fresh single-worker pool, where a second death names the
  culprit exactly. That one is recorded as *retryable* (``status = 'retry'``), not failed for good:
  the memory may have been short only this time, so the next batch tries it again by itself.
* SIGKILL of the coordinator must not leave the forkserver and the workers (hundreds of MB each)
  running, reparented to init. On Linux the forkserver and every worker ask the kernel
  (``prctl(PR_SET_PDEATHSIG, SIGKILL)``) to be killed when their parent dies, which chains
  coordinator -> forkserver -> workers; the resource tracker then sees its pipe close and exits.
  Elsewhere this is best effort (the workers exit when the pool's queues close).
* Ctrl-C: workers ignore SIGINT, so the coordinator alone decides. On any exception (the
  ``KeyboardInterrupt`` included) it kills the workers at once instead of waiting for their
  current traces, which is what lets an interrupted batch stop within a second.

And a batch leaves no process behind when it returns. multiprocessing keeps its forkserver and
resource tracker running for the life of the process that started them, in case it wants another
pool; the ``tcreport`` command then exits with both still its children, and they are reparented to
PID 1, which in a container often reaps nothing: they stay as zombies. So :func:`run` stops the
ones it started once its last pool is shut down (its workers joined), and waits for them; a
forkserver or tracker that was running before (an embedding program's) is left alone.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import multiprocessing
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from tcreport._no_pandas import refuse_pandas
from tcreport.batch.work import Outcome, Task, failed, process, retryable

_PR_SET_PDEATHSIG = 1
#: Set in the forkserver when it arms itself: its children check that their parent is still it.
SERVER_PID: int | None = None
#: What a run gets when its worker died on it twice.
DIED_TWICE = "worker process died twice (crash or out of memory); the next batch retries it"


def die_with_parent(expected_parent: int) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux; else a no-op).

    The parent may already have died before the request took effect; then exit now.
    """
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != expected_parent:
        os._exit(1)


def arm_forkserver() -> None:
    """Run in the forkserver (through its preload module): die with the coordinator."""
    global SERVER_PID
    SERVER_PID = os.getpid()
    if os.getppid() == 1:  # the coordinator is already gone
        os._exit(1)
    die_with_parent(os.getppid())


def _init_worker(coordinator: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the coordinator's to handle
    refuse_pandas()  # a worker only reads traces: pyarrow need not import pandas (_no_pandas.py)
    if SERVER_PID is not None:  # forked by our armed forkserver
        die_with_parent(SERVER_PID)
    elif os.getppid() == coordinator:  # spawned by the coordinator itself
        die_with_parent(coordinator)
    else:  # a forkserver this process had started before, without our preload: best effort
        die_with_parent(os.getppid())


def _new_pool(jobs: int) -> ProcessPoolExecutor:
    # forkserver, not fork: the parent runs a progress-bar thread, and forking a threaded process
    # can copy a held lock into the child. The server preloads tcreport once for every worker.
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if ctx.get_start_method() == "forkserver":
        ctx.set_forkserver_preload(["tcreport.batch.forkserver_preload"])
    return ProcessPoolExecutor(
        max_workers=jobs, mp_context=ctx, initializer=_init_worker, initargs=(os.getpid(),)
    )


def _kill(pool: ProcessPoolExecutor) -> None:
    """Stop now: kill the workers rather than wait for the traces they are reading."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for p in procs:
        with contextlib.suppress(OSError, ValueError):
            p.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        with contextlib.suppress(OSError, ValueError, AssertionError):
            p.join(1)


def _pass(
    tasks: list[Task], jobs: int, died: Callable[[Task], Outcome | None]
) -> Iterator[Outcome]:
    """Run ``tasks`` with at most ``jobs`` in flight; a task whose worker died goes to ``died``."""
    queue = deque(tasks)
    while queue:
        pool = _new_pool(jobs)
        inflight: dict[Future[Outcome], Task] = {}
        try:
            broken = False
            while (queue or inflight) and not broken:
                while queue and len(inflight) < jobs:
                    task = queue.popleft()
                    try:
                        inflight[pool.submit(process, task)] = task
                    except BrokenProcessPool:
                        queue.appendleft(task)
                        broken = True
                        break
                done, _ = wait(inflight, return_when=FIRST_COMPLETED)
                for fut in done:
                    task = inflight.pop(fut)
                    try:
                        outcome: Outcome | None = fut.result()
                    except BrokenProcessPool:
                        broken, outcome = True, died(task)
                    except Exception as exc:  # e.g. an outcome that would not pickle: that run's
                        outcome = failed(task, f"internal error: {type(exc).__name__}: {exc}")
                    if outcome is not None:
                        yield outcome
            for task in inflight.values():  # the pool broke: these died with it
                outcome = died(task)
                if outcome is not None:
                    yield outcome
            inflight.clear()
        except BaseException:
            _kill(pool)
            raise
        if broken:
            _kill(pool)
        else:
            pool.shutdown(wait=True)


def run(tasks: list[Task], jobs: int) -> Iterator[Outcome]:
    """Every task's outcome, in completion order; see the module docstring for worker deaths."""
    if jobs <= 1 or len(tasks) <= 1:
        yield from map(process, tasks)
        return
    again: list[Task] = []

    def first_death(task: Task) -> None:
        again.append(task)

    def second_death(task: Task) -> Outcome:
        return retryable(task, DIED_TWICE)

    with _reaped_helpers():
        yield from _pass(tasks, jobs, first_death)
        yield from _pass(again, 1, second_death)


@contextlib.contextmanager
def _reaped_helpers() -> Iterator[None]:
    """Stop and wait for the forkserver and resource tracker that the pools inside started.

    Both are module-level singletons of :mod:`multiprocessing` without a public way to stop
    them; ``_stop()`` is what CPython's own tests use (3.11 to 3.13), and each closes the pipe
    that keeps its process alive, then waits for it. The forkserver has already reaped the
    workers, which every pass joins (or kills and joins) before it returns. The tracker goes
    last, after a collection, so that the pools' semaphores are unregistered and it has nothing
    to report as leaked.
    """
    from multiprocessing import forkserver, resource_tracker

    server = getattr(forkserver, "_forkserver", None)
    tracker = getattr(resource_tracker, "_resource_tracker", None)
    server_was_up = getattr(server, "_forkserver_pid", None) is not None
    tracker_was_up = getattr(tracker, "_pid", None) is not None
    try:
        yield
    finally:
        if server is not None and not server_was_up:
            _stop(server)
        if tracker is not None and not tracker_was_up:
            gc.collect()
            _stop(tracker)


def _stop(helper: object) -> None:
    stop = getattr(helper, "_stop", None)
    if stop is not None:
        with contextlib.suppress(OSError):  # already gone (ChildProcessError is an OSError)
            stop()
