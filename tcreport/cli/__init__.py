"""Command-line entry point. Heavy imports (pyarrow, jinja2) happen inside commands only."""

from __future__ import annotations

import sys

from tcreport.cli import _exit

try:
    from tcreport.cli.app import OWN_PROCESS, app, app_for
except KeyboardInterrupt:  # Ctrl-C while Typer and the commands load: before the app's own
    # handling ("interrupted", exit 130) is in place; the same line here, not a traceback
    sys.stderr.write("tcreport: interrupted\n")
    raise SystemExit(130) from None

__all__ = ["app", "command", "main"]  # `app` is public: tests and embedders invoke the Typer app


def main() -> None:
    # The allocators are tuned in the app's callback (tcreport.cli.app.tune_allocators), once the
    # command is known: never for `profile`, whose user script runs in this process.
    app_for(sys.argv[1:])(obj=OWN_PROCESS)


def command() -> None:
    """The ``tcreport`` console script and ``python -m tcreport``: :func:`main`, then, once the
    command has armed it, an exit without the interpreter's teardown (tcreport/cli/_exit.py).
    ``main`` itself never ends the process early: a program calling it may catch its SystemExit."""
    try:
        main()
    except SystemExit as exc:
        _exit.leave(exc.code)
        raise
