"""The Typer application (commands are registered by their own modules)."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="tcreport",
    help="Does your model really use the Tensor Cores? Reports for DLProf, Nsight Systems and "
    "framework profiler traces.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
