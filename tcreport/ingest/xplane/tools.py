"""Running xprof's converters (``framework_op_stats``, ``kernel_stats``, ``overview_page``) safely.

The converters cache their results as files beside the ``.xplane.pb`` they read, and log freely to
file descriptor 2. A reader must not write in the user's folder and must keep stderr to one line,
so the input is copied to a temporary directory, the converters run there, and their native
logging goes to a temporary file (its tail is kept for error messages).
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tcreport.errors import InputError, MissingExtraError

#: xprof alone reads a profile; the [tf] extra (TensorFlow, for capturing one) includes it.
INSTALL = "pip install 'tcreport[xplane]'"
TOOLS = ("framework_op_stats", "kernel_stats", "overview_page")


@dataclass(frozen=True)
class ToolTables:
    """The converters' answers as plain row dicts keyed by column id (``None``: tool gave none)."""

    op_stats: list[dict[str, Any]] | None
    kernel_stats: list[dict[str, Any]] | None
    overview_props: dict[str, str]  # the overview page's summary properties, merged
    failed: tuple[str, ...]  # tools that returned nothing


@contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Send fd 2 (the converters' C++ logging) to a scratch file for the duration."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _rows(table: dict[str, Any]) -> list[dict[str, Any]]:
    ids = [c.get("id") for c in table.get("cols", [])]
    out: list[dict[str, Any]] = []
    for row in table.get("rows", []) or []:
        cells = row.get("c", [])
        out.append({i: (c or {}).get("v") for i, c in zip(ids, cells, strict=False)})
    return out


def _op_stats(data: Any) -> list[dict[str, Any]] | None:
    tables = data if isinstance(data, list) else [data]
    tables = [t for t in tables if isinstance(t, dict)]
    if not tables:
        return None
    # The converter returns the table twice, with and without the IDLE pseudo-op; use the last
    # (without) and drop IDLE rows either way.
    return [r for r in _rows(tables[-1]) if r.get("type") != "IDLE"]


def _overview(data: Any) -> dict[str, str]:
    props: dict[str, str] = {}
    for table in data if isinstance(data, list) else [data]:
        if isinstance(table, dict) and isinstance(table.get("p"), dict):
            props.update({str(k): str(v) for k, v in table["p"].items()})
    return props


def _decode(raw: Any) -> Any:
    if raw is None:
        return None
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def convert(xplanes: list[Path]) -> ToolTables:
    """Run the converters on private copies of ``xplanes`` (one run: one file per host)."""
    xplane = xplanes[0]
    try:
        raw_to_tool_data = importlib.import_module("xprof.convert.raw_to_tool_data")
    except ImportError as exc:
        raise MissingExtraError(
            f"reading TensorFlow or JAX profiles needs xprof: {INSTALL}", xplane, extra="xplane"
        ) from exc
    answers: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="tcreport-xplane-") as tmp:
        copies: list[str] = []
        for src in xplanes:
            copy = Path(tmp) / src.name
            try:
                shutil.copyfile(src, copy)
            except OSError as exc:
                raise InputError(f"cannot read: {exc.strerror or exc}", src) from exc
            copies.append(str(copy))
        with _quiet_stderr():
            for tool in TOOLS:
                try:
                    data, _ = raw_to_tool_data.xspace_to_tool_data(copies, tool, {})
                except (ValueError, RuntimeError, OSError):
                    data = None
                answers[tool] = _decode(data)
    failed = tuple(t for t in TOOLS if answers.get(t) is None)
    kernels = answers.get("kernel_stats")
    return ToolTables(
        op_stats=_op_stats(answers["framework_op_stats"])
        if answers.get("framework_op_stats") is not None
        else None,
        kernel_stats=_rows(kernels) if isinstance(kernels, dict) else None,
        overview_props=_overview(answers.get("overview_page")),
        failed=failed,
    )
