"""The Typer application; command modules register themselves on ``app``.

Only this package imports typer, and every heavy import (pyarrow, jinja2) happens inside a command
so that ``tcreport --help`` stays instant.
"""

from __future__ import annotations

import importlib
import logging
from typing import Annotated

import typer

app = typer.Typer(
    name="tcreport",
    help="Does your model really use the Tensor Cores? Reports for DLProf, Nsight Systems and "
    "framework profiler traces, offline, in one file.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        from tcreport import __version__

        typer.echo(f"tcreport {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    verbose: Annotated[
        int,
        typer.Option("--verbose", "-v", count=True, help="More logging on stderr (-vv for debug)."),
    ] = 0,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="tcreport: %(levelname)s: %(message)s")


# Register the commands (import for side effects, after ``app`` exists), in the order --help
# lists them: the everyday ones first.
for _module in ("inspect_cmds", "profile_cmd", "compare_cmds", "batch_cmds", "export_cmd"):
    importlib.import_module(f"tcreport.cli.{_module}")
