"""The facts ``tcreport profile`` leaves beside a raw profile (``tcreport-capture.json``).

The profilers record what ran, not what the model is: the in-process capture writes the steps it
kept, its notes and the model audit (layer sizes and dtypes, precision settings, each with the
script line that set it) to a small JSON file in the run folder. A reader of that run's profile
puts these facts into the canonical metadata (``RunMeta.audit``, notes, files), so the audit rules
work the same on a fresh capture, a re-read folder and an ingest folder. The file is tcreport's
own, but it is input like any other: a field of the wrong type is ignored, never raised on.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from tcreport.model import ModelAudit, Run

SIDECAR = "tcreport-capture.json"
#: A sidecar is small (a few hundred layers at most); a bigger one is not tcreport's.
MAX_BYTES = 16 * 1024 * 1024


def read(run_dir: Path) -> dict[str, Any]:
    """The sidecar in ``run_dir`` as a dict, ``{}`` when absent or unreadable."""
    p = run_dir / SIDECAR
    try:
        if not p.is_file() or p.stat().st_size > MAX_BYTES:
            return {}
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def for_trace(trace: Path) -> dict[str, Any]:
    """The sidecar beside ``trace`` when it names that file (one run folder, one trace)."""
    side = read(trace.parent)
    return side if side.get("trace") == trace.name else {}


def audit(side: dict[str, Any]) -> ModelAudit | None:
    return ModelAudit.from_dict(side.get("audit"))


def applied(run: Run, trace: Path) -> Run:
    """``run`` with the facts of the sidecar beside ``trace`` (unchanged without one)."""
    side = for_trace(trace)
    if not side:
        return run
    notes = (
        [n for n in side.get("notes", []) if isinstance(n, str)]
        if isinstance(side.get("notes"), list)
        else []
    )
    meta = dataclasses.replace(
        run.meta,
        audit=audit(side),
        notes=(*run.meta.notes, *(n for n in notes if n not in run.meta.notes)),
        files=(*run.meta.files, SIDECAR),
    )
    return run.replace(meta=meta)
