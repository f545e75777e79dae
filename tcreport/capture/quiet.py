"""TensorFlow's own logging kept out of ``tcreport profile``'s output unless ``--verbose``.

Importing TensorFlow and running its profiler prints ~15 lines of C++ logging (oneDNN, CPU
features, "Profiler session started", ...) that say nothing about the user's model and bury
tcreport's one line. The C++ side reads ``TF_CPP_MIN_LOG_LEVEL`` once, when TensorFlow loads, in
this process, in the profiled script's process (DLProf, Nsight Systems) and in xprof's converter,
so the variable is set for the whole command; the Python side logs through absl. A value the
user set stands; errors are always shown.
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
def tensorflow_import(verbose: bool) -> Iterator[None]:
    """Hold back what ``import tensorflow`` writes to file descriptor 2 (C++ writes there, past
    Python's ``sys.stderr``), then pass on every line that is not INFO/WARNING noise."""
    if verbose:
        yield
        return
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
            kept = [ln for ln in text.splitlines() if ln and not _IMPORT_NOISE.match(ln)]
            if kept:
                print("\n".join(kept), file=sys.stderr)


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
