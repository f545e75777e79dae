"""tcreport: does your model really use the Tensor Cores?

Reads DLProf, Nsight Systems and framework profiler outputs into canonical Arrow tables and
reports Tensor Core use, eligibility and what to change. The import is kept light on purpose:
``tcreport --help`` must not pull in pyarrow or jinja2.
"""

__version__ = "0.1.0"

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tcreport.api import open, read_dataset

__all__ = ["__version__", "open", "read_dataset"]


def __getattr__(name: str) -> Any:
    """``tcreport.open`` and ``tcreport.read_dataset`` load the API (pandas, pyarrow) on first use,
    so ``import tcreport`` and ``tcreport --help`` stay light."""
    if name in ("open", "read_dataset"):
        from tcreport import api

        return getattr(api, name)
    raise AttributeError(f"module 'tcreport' has no attribute {name!r}")
