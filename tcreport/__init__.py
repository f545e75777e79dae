"""tcreport: does your model really use the Tensor Cores?

Reads DLProf, Nsight Systems and framework profiler outputs into canonical Arrow tables and
reports Tensor Core use, eligibility and what to change. The import is kept light on purpose:
``tcreport --help`` must not pull in pyarrow or jinja2.
"""

__version__ = "0.1.0"
