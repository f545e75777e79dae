"""Where a capture's files go: one run folder per profiling run, and the sidecar of facts.

Every in-process capture writes its raw profile to ``<out>/plugins/profile/<run>/``, the layout
TensorBoard's profile plugins read, with ``<run>`` the local time as the TensorFlow profiler names
it (``2026_05_01_14_03_22``), so profiling again into the same folder adds a run beside the old
one instead of mixing files, and the newest run sorts last. Beside the profile,
``tcreport-capture.json`` holds what the profiler cannot record: the steps kept, the step source,
notes, and the model audit. Readers take the newest run and say which.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tcreport.errors import CaptureError

SIDECAR = "tcreport-capture.json"
RUNS = Path("plugins") / "profile"


def new_run_dir(out_dir: Path) -> Path:
    base = out_dir / RUNS
    stamp = time.strftime("%Y_%m_%d_%H_%M_%S", time.localtime())
    for n in range(1000):
        run = base / (stamp if n == 0 else f"{stamp}_{n}")
        try:
            run.mkdir(parents=True)
        except FileExistsError:
            continue
        except OSError as exc:
            raise CaptureError(f"cannot create the run folder: {exc.strerror or exc}", run) from exc
        return run
    raise CaptureError("more than 1000 runs started in one second", base)


def prune(run_dir: Path, out_dir: Path, made_out: bool = False) -> None:
    """Remove ``run_dir`` and the folders above it up to ``out_dir`` (included only when this run
    ``made_out``) that are left empty: a run that recorded nothing leaves no empty folder
    behind. A folder that holds anything (an earlier run, the user's files) stays."""
    folder, stop = run_dir, out_dir.parent if made_out else out_dir
    while folder != stop and folder.is_relative_to(out_dir):
        try:
            folder.rmdir()
        except OSError:  # not empty, or gone
            return
        folder = folder.parent


def write_sidecar(run_dir: Path, facts: Mapping[str, Any]) -> Path:
    """``tcreport-capture.json``, written to a temporary name and renamed."""
    target = run_dir / SIDECAR
    tmp = run_dir / f".{SIDECAR}.tmp"
    tmp.write_text(json.dumps(facts, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, target)
    return target
