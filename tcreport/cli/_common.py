"""What every command shares: error mapping, the stderr console, iteration options."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from tcreport.errors import TcreportError, UsageError

if TYPE_CHECKING:
    from pathlib import Path

    from tcreport.report import Report

err_console = Console(stderr=True, highlight=False)

KeyNode = Annotated[
    str | None,
    typer.Option(
        "--key-node",
        metavar="NAME",
        help="Op or range name that marks each iteration (DLProf's key node).",
    ),
]
IterStart = Annotated[
    int | None,
    typer.Option(
        "--iter-start", min=0, metavar="N", help="First iteration to aggregate (0-based)."
    ),
]
IterStop = Annotated[
    int | None,
    typer.Option(
        "--iter-stop", min=0, metavar="M", help="Last iteration to aggregate (inclusive)."
    ),
]

#: ``-o -`` means standard output, as for every Unix tool that writes text.
STDOUT = "-"


def write_text_output(output: Path, text: str) -> None:
    """``text`` to ``output`` (atomically, then a 'wrote' line on stderr), or to stdout for ``-``."""
    from tcreport import api

    if str(output) == STDOUT:
        typer.echo(text, nl=False)
        return
    target = api.write_text_atomic(output, text)
    err_console.print(f"tcreport: wrote {target}", markup=False)


def plural(n: int, one: str, many: str | None = None) -> str:
    """``1 gate``, ``2 gates``: messages a person reads say it right."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn tcreport's errors into one line on stderr and the error's exit code; never a traceback."""
    try:
        yield
    except TcreportError as exc:
        err_console.print(f"tcreport: error: {exc}", markup=False, soft_wrap=True)
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        err_console.print("tcreport: interrupted", markup=False)
        raise typer.Exit(130) from None


@contextmanager
def status(message: str) -> Iterator[None]:
    """A spinner on stderr for work that may take more than a second (silent when not a TTY)."""
    if sys.stderr.isatty():
        with err_console.status(message):
            yield
    else:
        yield


def load_and_analyze(
    path: Path,
    key_node: str | None,
    iter_start: int | None,
    iter_stop: int | None,
    timestamp: bool = False,
    counters: Path | None = None,
) -> Report:
    """Read ``path`` (plus ncu counters if given) and analyse it, with spinners on stderr."""
    from datetime import UTC, datetime

    from tcreport import api

    if iter_start is not None and iter_stop is not None and iter_stop < iter_start:
        raise UsageError(f"--iter-stop {iter_stop} is before --iter-start {iter_start}")
    with status(f"Reading {path}"):
        run = api.load(path)
        if counters is not None:
            run = api.attach_counters(run, counters)
    with status("Analysing"):
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC") if timestamp else None
        return api.analyze(
            run,
            source_path=str(path),
            key_node=key_node,
            iter_start=iter_start,
            iter_stop=iter_stop,
            timestamp=stamp,
        )
