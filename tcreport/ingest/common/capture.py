"""The facts ``tcreport profile`` leaves beside a raw profile (``tcreport-capture.json``).

The profilers record what ran, not what the model is: the in-process capture writes the steps it
kept, its notes and the model audit (layer sizes and dtypes, precision settings, each with the
script line that set it) to a small JSON file in the run folder. A reader of that run's profile
puts these facts into the canonical metadata (``RunMeta.audit``, notes, files), so the audit rules
work the same on a fresh capture, a re-read folder and an ingest folder. The file is tcreport's
own, but it is input like any other: a field of the wrong type is ignored, never raised on.

The steps kept (``window``, the script's step numbers) also bound the ``ProfilerStep#N`` marks: a
script that ends inside the profiler's window leaves a last ``ProfilerStep#N`` stub after its last
step (N one past it, a few hundred µs of teardown), which would be counted as a step the script
never ran ("recorded steps 25–29" beside "6 of 6 aggregated"); it is dropped here.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

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
    return _within_window(run.replace(meta=meta), side.get("window"))


def _window(value: object) -> tuple[int, int] | None:
    if (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        and value[0] <= value[1]
    ):
        return value[0], value[1]
    return None


def _within_window(run: Run, value: object) -> Run:
    """``run`` without the ``ProfilerStep#N`` marks past the sidecar's last kept step (see the
    module docstring); steps before the window are left alone (a profiler's warm-up is its own)."""
    window = _window(value)
    if window is None or run.iterations is None or run.iterations.num_rows == 0:
        return run
    last = window[1]
    its = run.iterations
    if not pc.any(pc.greater(its["iteration"], last)).as_py():
        return run
    its = its.filter(pc.less_equal(its["iteration"], last))
    ranges = run.ranges
    if ranges is not None and ranges.num_rows:
        names = pc.cast(ranges["name"], pa.string())
        step = pc.struct_field(pc.extract_regex(names, r"^ProfilerStep#(?P<n>\d{1,18})$"), "n")
        past = pc.fill_null(pc.greater(pc.cast(step, pa.int64()), last), False)
        ranges = ranges.filter(pc.invert(past))
    return run.replace(iterations=its, ranges=ranges)
