"""Names a batch gives: partition folder values, and each run's report file after its trace.

A report is named after the trace it came from, whole (``v1.8-pytorch-cnn`` is a version, not a
file suffix), so a person browsing ``OUT/reports/`` finds the run they know; a name another run
holds gets the run id appended, and only then.
"""

from __future__ import annotations

import re

import pyarrow as pa


def partition_value(text: str | None) -> str:
    """A partition directory value: readable, filesystem- and URL-safe."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", text or "").strip("-.")
    return slug or "unknown"


#: Suffixes dropped from a trace's name to name its report (longest first): a trace format's own.
#: Any other dot is part of the name (``v1.8-pytorch-cnn`` is a version, not a suffix).
_NAME_SUFFIXES = (
    ".pt.trace.json.gz",
    ".pt.trace.json",
    ".xplane.pb",
    ".json.gz",
    ".sqlite3",
    ".sqlite",
    ".nsys-rep",
    ".qdrep",
    ".json",
    ".csv",
)


def report_name(source: str, run_id: str, taken: dict[str, str]) -> str:
    """``reports/<name>.html`` after the trace: its file (or folder) name whole, less a trace
    format's suffix, made filesystem- and URL-safe; a name another run holds gets the run id
    appended. ``taken`` maps names already given (in the dataset and this batch) to run ids."""
    base = source.rstrip("/").rsplit("/", 1)[-1]
    lower = base.lower()
    suffix = next((x for x in _NAME_SUFFIXES if lower.endswith(x) and len(x) < len(base)), None)
    stem = base[: -len(suffix)] if suffix else base
    name = partition_value(stem)[:80]
    if taken.get(name, run_id) != run_id:
        name = f"{name}-{run_id[:8]}"
    taken[name] = run_id
    return name


def taken_names(runs: pa.Table) -> dict[str, str]:
    """Report names the dataset already uses -> their run ids (hash-named reports included)."""
    out: dict[str, str] = {}
    for r in runs.select(["run_id", "report"]).to_pylist():  # one row per run: small
        rel = r["report"] or ""
        if rel.startswith("reports/") and rel.endswith(".html"):
            out[rel[len("reports/") : -len(".html")]] = r["run_id"]
    return out
