"""``export``: the analysed trace in another tool's format (today: Chrome/Perfetto trace JSON)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tcreport import api
from tcreport.cli._common import (
    AllowEmpty,
    FollowLink,
    IterStart,
    IterStop,
    KeyNode,
    OutputFile,
    ReplaceReadOnly,
    guard_output,
    is_stdout,
    say,
    slice_of,
    status,
    user_errors,
)
from tcreport.cli.app import app
from tcreport.errors import UsageError


@app.command()
def export(
    path: Annotated[
        Path,
        typer.Argument(
            help="Any trace tcreport reads (DLProf, Nsight Systems export, PyTorch profiler, "
            "TensorFlow xplane, Nsight Compute CSV, a 'tcreport ingest' folder).",
            metavar="PATH",
            show_default=False,
        ),
    ],
    perfetto: Annotated[
        Path | None,
        typer.Option(
            "--perfetto",
            metavar="FILE",
            help="Write Chrome/Perfetto trace JSON here, '-' for stdout: every kernel with its "
            "Tensor Core verdict and rule in args (open in ui.perfetto.dev or chrome://tracing).",
            show_default=False,
        ),
    ] = None,
    output: OutputFile = None,
    key_node: KeyNode = None,
    iter_start: IterStart = None,
    iter_stop: IterStop = None,
    allow_empty: AllowEmpty = False,
    follow_link: FollowLink = False,
    replace_read_only: ReplaceReadOnly = False,
) -> None:
    """Export the analysed trace for a timeline viewer, Tensor Core verdicts included."""
    with user_errors():
        if perfetto is not None and output is not None and perfetto != output:
            raise UsageError(f"two targets: --perfetto {perfetto} and -o {output}; give one")
        target = perfetto if perfetto is not None else output
        if target is None:
            raise UsageError("say what to export: --perfetto OUT.json (or -o OUT.json)")
        # refused before a long read, as report and summary do
        guard_output(target, [path], follow_link=follow_link, replace_read_only=replace_read_only)
        slc = slice_of(key_node, iter_start, iter_stop, allow_empty)
        with status(f"Reading {path}"):
            run = api.load(path)
        stdout = typer.get_binary_stream("stdout") if is_stdout(target) else None
        with status("Exporting"):
            written, kernels = api.export_perfetto(
                run,
                target if stdout is None else stdout,
                slc,
                source=path,
                follow_link=follow_link,
                replace_read_only=replace_read_only,
            )
        if stdout is not None:
            stdout.flush()
            return
        say(f"tcreport: wrote {written} ({kernels} kernels)")
