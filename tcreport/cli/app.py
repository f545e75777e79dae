"""The Typer application; command modules register themselves on ``app``.

Only this package imports typer, and every heavy import (pyarrow, jinja2) happens inside a command
so that ``tcreport --help`` stays instant.
"""

from __future__ import annotations

import copy
import gc
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from typing import Annotated, Any, NoReturn

import typer
import typer.core
from typer.core import TyperGroup

from tcreport import __version__
from tcreport._no_pandas import refuse_pandas
from tcreport.cli import _exit, _plain_params
from tcreport.fmt import visible as plain

# Typer >= 0.2x carries its own copy of Click (typer._click); older ones use click itself.
_click: Any = getattr(typer.core, "_click", None) or importlib.import_module("click")
_ClickException: type[Exception] = _click.exceptions.ClickException
_NoArgsIsHelp: type[Exception] = getattr(_click.exceptions, "NoArgsIsHelpError", _ClickException)


def _one_line(text: str) -> str:
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


class _Group(TyperGroup):
    """Click's usage errors (a bad option value, a missing argument) as the one line every other
    error is, ``tcreport: error: ...`` with exit 2, instead of a three-line usage block."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except _ClickException as exc:
            if isinstance(exc, _NoArgsIsHelp) and _NoArgsIsHelp is not _ClickException:
                exc.show()  # type: ignore[attr-defined]  # plain ``tcreport``: Click's help
                sys.exit(exc.exit_code)  # type: ignore[attr-defined]
            _usage_error(exc)
        except typer.Abort:
            typer.echo("tcreport: interrupted", err=True)
            sys.exit(130)
        sys.exit(rv if isinstance(rv, int) else 0)  # an Exit(code) comes back as its code


def _usage_error(exc: Any) -> NoReturn:
    ctx = getattr(exc, "ctx", None)
    where = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    typer.echo(f"tcreport: error: {plain(_one_line(exc.format_message()))}{where}", err=True)
    sys.exit(2)


app = typer.Typer(
    name="tcreport",
    cls=_Group,
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
_plain_params.install()  # values converted without importing pydantic (see the module)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"tcreport {__version__}")
        raise typer.Exit()


#: The context ``obj`` :func:`tcreport.cli.main` starts the app with: this process is the
#: ``tcreport`` command itself, not a test's runner or an embedder, so it may refuse pandas.
OWN_PROCESS = "tcreport command process"
#: Commands that run a user's script in this interpreter, where pandas must stay importable.
_RUN_USER_CODE = frozenset({"profile"})


@app.callback()
def _main(
    ctx: typer.Context,
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
    if ctx.obj is OWN_PROCESS and ctx.invoked_subcommand not in _RUN_USER_CODE:
        tune_allocators()
        refuse_pandas()  # pyarrow would import it on its first conversion (tcreport/_no_pandas.py)
        # The objects made so far (Typer's, the commands') live as long as the process: out of
        # the collector's sight, every later collection skips them. ~35 ms less CPU of a small
        # trace's 0.45 s; nothing made after this is exempt (benchmarks/README.md).
        gc.freeze()
        _exit.arm()  # and leave without the interpreter's teardown (tcreport/cli/_exit.py)
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="tcreport: %(levelname)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(_plain_record)


def tune_allocators() -> None:
    """The allocators' settings for reading big traces, set before numpy and pyarrow are imported
    (each reads its variable once, at import) and only where the user has not set them. Not for
    a command that runs the user's script in this process (`profile`): the script, and the
    processes it starts, must run as they would without tcreport.

    * Arrow's default pool (mimalloc in the wheels) keeps freed pages for reuse; a trace is read in
      phases that each free hundreds of MiB of temporaries, and the pages kept by one phase add to
      the next one's peak. The C library's allocator hands large blocks back at once: on the
      3.6 M-kernel export the peak RSS drops ~250 MiB and the run is no slower.
    * numpy asks the kernel for 2 MiB pages on every array of 4 MiB or more; the phases' big
      temporaries then cost a zeroed huge page per touch and a fresh one after each free. With
      4 KiB pages the x1000 export's summary takes ~1.2 s less system time and 50-100 MiB less
      peak, for ~0.5 s more user time (benchmarks/README.md).
    * glibc's malloc (:func:`_tune_glibc_malloc`)."""
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
    _tune_glibc_malloc()


#: mallopt's parameter numbers (glibc's malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def _tune_glibc_malloc() -> None:
    """Blocks up to 32 MiB from the heap from the start, and the heap's free top trimmed only past
    64 MiB (the phases still hand everything back between them:
    ``ingest.common.memory.release_free_memory``). By default glibc maps each block of 128 KiB
    or more on its own, and trims at 128 KiB, until a mapped block is freed (then twice its size);
    a block handed back is zeroed page by page when asked for again. x1000 nsys ``summary --json``,
    alternated in one sitting (load 2.7-6.0): page faults 2.12-2.23 M instead of 2.42-2.43 M,
    system time 4.27-4.59 s instead of 4.60-4.72 s, user time and peak RSS the same within their
    spread (1,277-1,313 against 1,265-1,327 MiB); ``report`` 4.15-4.26 s of system time against
    5.02-5.08 s. Keeping the whole free top (no trim threshold) saved ~0.9 s but peaked up to ~90 MiB
    higher, so it is not done. Not where the user set glibc's malloc up themselves (the
    ``MALLOC_*_`` variables or ``GLIBC_TUNABLES``), nor without glibc (musl, macOS: nothing)."""
    if any(k.startswith("MALLOC_") for k in os.environ) or "glibc.malloc." in os.environ.get(
        "GLIBC_TUNABLES", ""
    ):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 (glibc's alone: musl's mallopt does nothing)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_MMAP_THRESHOLD, 32 << 20)  # glibc's ceiling for it (and its dynamic one's)
    mallopt(_M_TRIM_THRESHOLD, 64 << 20)


def _plain_record(record: logging.LogRecord) -> bool:
    """Log lines name files and trace strings too: their control characters are shown, not sent."""
    record.msg, record.args = plain(record.getMessage()), None
    return True


# Register the commands (import for side effects, after ``app`` exists), in the order --help
# lists them: the everyday ones first.
for _module in ("inspect_cmds", "profile_cmd", "compare_cmds", "batch_cmds", "export_cmd"):
    importlib.import_module(f"tcreport.cli.{_module}")


def app_for(args: Sequence[str]) -> typer.Typer:
    """``app`` with only the command ``args`` name, when they name one: Typer builds a Click command
    from every registered function's signature on each run (~6.5 ms of a small report's 0.36 s
    for all nine, 1.8 ms for one), and a run uses one. Anything else (group help, ``--version``,
    a misspelt command Click should suggest for, shell completion) gets the whole app, as do
    tests and embedders, which call ``app`` itself."""
    name = _command_named(args)
    commands = [c for c in app.registered_commands if _name(c) == name]
    if name is None or len(commands) != 1 or "_TCREPORT_COMPLETE" in os.environ:
        return app
    one = copy.copy(app)
    one.registered_commands = commands
    return one


def _command_named(args: Sequence[str]) -> str | None:
    """The first argument that is not the group's ``-v``/``--verbose`` (the group's only option
    that does not end the run or print help): the command's name."""
    for arg in args:
        if arg == "--verbose" or (arg.startswith("-v") and set(arg[1:]) == {"v"}):
            continue
        return None if arg.startswith("-") else arg
    return None


def _name(command: typer.models.CommandInfo) -> str | None:
    if command.name is not None:
        return command.name
    callback = command.callback
    return None if callback is None else typer.main.get_command_name(callback.__name__)
