"""tcreport: does your model really use the Tensor Cores?

Reads DLProf, Nsight Systems and framework profiler outputs into canonical Arrow tables and
reports Tensor Core use, eligibility and what to change. The import is kept light on purpose:
``tcreport --help`` must not pull in pyarrow or jinja2.
"""

__version__ = "0.1.0"

import importlib
from typing import Any

__all__ = [
    "__version__",
    "keras_callback",
    "lightning_callback",
    "open",
    "profile",
    "read_dataset",
    "trainer_callback",
]

#: Profiling from Python (``with tcreport.profile(steps=range(15, 35)) as run:``), in
#: ``tcreport.session``.
_SESSION = ("profile", "keras_callback", "lightning_callback", "trainer_callback")


def __getattr__(name: str) -> Any:
    """``tcreport.open`` and ``tcreport.read_dataset`` (``tcreport.api``) and the profiling entry
    points (``tcreport.session``) load on first use, so ``import tcreport`` and ``tcreport --help``
    stay light. Looked up by name at run time: every module imports this package for
    ``__version__``, and none of them depends on the API."""
    if name in ("open", "read_dataset"):
        return getattr(importlib.import_module("tcreport.api"), name)
    if name in _SESSION:
        return getattr(importlib.import_module("tcreport.session"), name)
    raise AttributeError(f"module 'tcreport' has no attribute {name!r}")
