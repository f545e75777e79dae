"""``export``: the analysed trace in another tool's format (today: Chrome/Perfetto trace JSON)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tcreport.cli._common import IterStart, IterStop, KeyNode, err_console, status, user_errors
from tcreport.cli.app import app
from tcreport.errors import UsageError


@app.command()
def export(
    path: Annotated[
        Path,
        typer.Argument(
            help="Any trace tcreport reads (DLProf, Nsight Systems export, PyTorch profiler, "
            "TensorFlow xplane, a 'tcreport ingest' folder).",
            show_default=False,
        ),
    ],
    perfetto: Annotated[
        Path | None,
        typer.Option(
            "--perfetto",
            help="Write Chrome/Perfetto trace JSON here: every kernel with its Tensor Core verdict "
            "and rule in args (open in ui.perfetto.dev or chrome://tracing).",
        ),
    ] = None,
    key_node: KeyNode = None,
    iter_start: IterStart = None,
    iter_stop: IterStop = None,
) -> None:
    """Export the analysed trace for a timeline viewer, Tensor Core verdicts included."""
    with user_errors():
        from tcreport import api

        if perfetto is None:
            raise UsageError("say what to export: --perfetto OUT.json")
        with status(f"Reading {path}"):
            run = api.load(path)
        with status("Exporting"):
            target, kernels = api.export_perfetto(
                run, perfetto, key_node=key_node, iter_start=iter_start, iter_stop=iter_stop
            )
        err_console.print(f"tcreport: wrote {target} ({kernels} kernels)", markup=False)
