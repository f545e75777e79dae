"""Command-line entry point. Heavy imports (pyarrow, jinja2) happen inside commands only."""

from __future__ import annotations

import os

from tcreport.cli.app import OWN_PROCESS, app

__all__ = ["app", "main"]  # `app` is public: tests and embedders invoke the Typer app


def main() -> None:
    # Arrow's default pool (mimalloc in the wheels) keeps freed pages for reuse; a trace is read
    # in phases that each free hundreds of MiB of temporaries, and the pages kept by one phase
    # add to the next one's peak. The C library's allocator hands large blocks back at once: on
    # the 3.6 M-kernel export the peak RSS drops ~250 MiB and the run is no slower
    # (benchmarks/README.md). Set before pyarrow is imported; a user's own choice stands.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    # numpy asks the kernel for 2 MiB pages on every array of 4 MiB or more; the phases' big
    # temporaries then cost a zeroed huge page per touch and a fresh one after each free. With
    # 4 KiB pages the x1000 export's summary takes ~1.2 s less system time and 50-100 MiB less
    # peak, for ~0.5 s more user time (benchmarks/README.md). numpy reads it once, at import.
    os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
    app(obj=OWN_PROCESS)
