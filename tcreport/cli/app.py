"""The Typer application; command modules register themselves on ``app``.

Only this package imports typer, and every heavy import (pyarrow, jinja2) happens inside a command
so that ``tcreport --help`` stays instant.
"""

from __future__ import annotations

import importlib
import logging
from typing import Annotated

import typer
import typer.core

app = typer.Typer(
    name="tcreport",
    help="Does your model really use the Tensor Cores? Reports for DLProf, Nsight Systems and "
    "framework profiler traces, offline, in one file.",
    no_args_is_help=True,
    # --install-completion / --show-completion for bash, zsh, fish and PowerShell (README).
    add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _plain_argument_help() -> None:
    """Arguments read as ``PATH`` in help, as in every other Unix tool.

    Typer's own help writes a required argument as ``{path}`` in the usage line and adds its type
    (``<path>``, ``<list[str]>``) beside the name; every argument here has a metavar that says
    what it is, so the braces and the type go. Options get their metavars where declared.
    """
    arg = typer.core.TyperArgument
    if not hasattr(arg, "_usage_display_name"):  # another Typer: its help is whatever it is
        return

    def usage(self: typer.core.TyperArgument) -> str:
        name = self.metavar or self.name or ""
        name = name if self.required else f"[{name}]"
        return name + ("..." if self.nargs != 1 and "..." not in name else "")

    def display_type(self: typer.core.TyperArgument, ctx: object) -> str | None:
        return None

    arg._usage_display_name = usage  # type: ignore[method-assign]
    arg.display_type_rich = display_type  # type: ignore[method-assign,assignment]


_plain_argument_help()


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
for _module in ("inspect_cmds", "profile_cmd", "compare_cmds", "batch_cmds"):
    importlib.import_module(f"tcreport.cli.{_module}")
