"""The frameworks' own logging kept out of ``tcreport profile``'s output unless ``--verbose``.

Importing TensorFlow and running its profiler prints ~15 lines of C++ logging (oneDNN, CPU
features, "Profiler session started", ...) that say nothing about the user's model and bury
tcreport's one line. The C++ side reads ``TF_CPP_MIN_LOG_LEVEL`` once, when TensorFlow loads, in
this process, in the profiled script's process (DLProf, Nsight Systems) and in xprof's converter,
so the variable is set for the whole command; the Python side logs through absl. A value the
user set stands; errors are always shown. PyTorch's profiler (Kineto) prints two lines at every
start and stop of a trace whatever its log level; those are held back the same way.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: 2 = errors only (0 all, 1 no INFO, 2 no INFO or WARNING).
TF_LEVEL = "2"
_VAR = "TF_CPP_MIN_LOG_LEVEL"


@contextmanager
def framework_logs(verbose: bool) -> Iterator[None]:
    """Quiet TensorFlow's C++ logging for the duration (nothing changes when ``verbose``)."""
    if verbose or _VAR in os.environ:
        yield
        return
    os.environ[_VAR] = TF_LEVEL
    try:
        yield
    finally:
        os.environ.pop(_VAR, None)


#: What importing TensorFlow prints whatever TF_CPP_MIN_LOG_LEVEL says (absl writes INFO and
#: WARNING lines itself until its logging is initialised): absl's INFO/WARNING lines, its notice
#: about them, and the CPU-feature advice. Anything else (an error, a Python warning) is kept.
_IMPORT_NOISE = re.compile(
    r"^(?:[IW]\d{4} \d\d:\d\d:\d+\.\d+ +\d+ [\w.]+:\d+\]"
    r"|WARNING: All log messages before absl::InitializeLog\(\) is called"
    r"|To enable the following instructions:)"
)


@contextmanager
def _held_stderr(noise: re.Pattern[str]) -> Iterator[None]:
    """Hold back what is written to file descriptor 2 (C++ writes there, past Python's
    ``sys.stderr``), then pass on every line that ``noise`` does not match."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            text = held.read().decode("utf-8", "replace")
            kept = [ln for ln in text.splitlines() if ln and not noise.match(ln)]
            if kept:
                print("\n".join(kept), file=sys.stderr)


@contextmanager
def tensorflow_import(verbose: bool) -> Iterator[None]:
    """``import tensorflow`` without its INFO/WARNING noise (errors still show)."""
    if verbose:
        yield
        return
    with _held_stderr(_IMPORT_NOISE):
        yield


#: What PyTorch's profiler (Kineto) prints at every start and stop of a trace, whatever its log
#: level says: ``STAGE:... Completed Stage: Warm Up``, ``USDT:... profiler_start``.
_KINETO_NOISE = re.compile(r"^(?:STAGE|USDT):\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ \S+:\d+\]")


@contextmanager
def kineto(verbose: bool) -> Iterator[None]:
    """A profiler start, step or stop without Kineto's progress lines (errors still show)."""
    if verbose:
        yield
        return
    with _held_stderr(_KINETO_NOISE):
        yield


def tensorflow_python_logs(tf: Any, verbose: bool) -> None:
    """TensorFlow's Python-side logging (absl and the ``tensorflow`` logger) to errors only."""
    if verbose:
        return
    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    try:
        from absl import logging as absl_logging
    except ImportError:  # absl comes with TensorFlow; without it there is nothing to quiet
        return
    absl_logging.set_verbosity(absl_logging.ERROR)
