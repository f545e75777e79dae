"""Run a process that reads traces as if pandas were not installed.

pandas is tcreport's DataFrame face (:mod:`tcreport.notebook`), not part of reading or analysing a
trace. But pyarrow imports pandas, when it is installed, the first time it converts anything:
``pa.array``, ``pa.scalar``, a compute function given a Python number and ``Array.to_numpy`` all
ask whether the value is a pandas object, and answering imports pandas (about 0.25 s, most of a
small report's start-up, and ~40 MiB). pyarrow supports running without pandas, so a process
that never hands it a pandas object can say there is none: the command line's trace commands
and the batch workers do. A command that runs a user's script in-process (``profile``) does not:
the script may use pandas.

The refusal raises :class:`ModuleNotFoundError` from a meta-path finder, as a missing package
would, so every library that treats pandas as optional (pyarrow, DuckDB, Dask) takes its
no-pandas path; a ``None`` entry in ``sys.modules`` would not do, since pyarrow's Cython import
takes it for the module.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType


class _NoPandas:
    """A meta-path finder that refuses pandas and its submodules."""

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(
                "No module named 'pandas' (this tcreport process reads traces without it)",
                name=name,
            )
        return None


def refuse_pandas() -> None:
    """From now on, ``import pandas`` fails in this process, unless pandas is already imported
    (then there is nothing to save, and its lazy submodules must stay importable)."""
    if "pandas" in sys.modules or any(isinstance(f, _NoPandas) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _NoPandas())
