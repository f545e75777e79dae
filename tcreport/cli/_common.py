"""What every command shares: error mapping, the stderr console, iteration options."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from tcreport.errors import TcreportError, UsageError
from tcreport.render.escape import terminal as plain

if TYPE_CHECKING:
    from tcreport.ingest.job import Job
    from tcreport.job_report import JobReport
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
AllowEmpty = Annotated[
    bool,
    typer.Option(
        "--allow-empty",
        help="Go on when --key-node never occurs or --iter-start is past the last iteration "
        "(the whole run is aggregated) instead of stopping with exit 2.",
    ),
]
#: ``-o`` for a command that writes one file; a command with a default file name says it in its
#: own help (the name depends on other options, so it cannot sit in one shared text).
OutputFile = Annotated[
    Path | None,
    typer.Option(
        "--output", "-o", metavar="FILE", help="File to write, '-' for stdout.", show_default=False
    ),
]
FollowLink = Annotated[
    bool,
    typer.Option(
        "--follow-link",
        help="When -o is a symbolic link, write the file it points to (default: refuse).",
    ),
]
Rank = Annotated[
    int | None,
    typer.Option(
        "--rank",
        min=0,
        metavar="N",
        help="For a folder of a distributed job's traces: the rank shown in full, with its "
        "timeline (default: the straggler).",
    ),
]
ReplaceReadOnly = Annotated[
    bool,
    typer.Option(
        "--replace-read-only",
        help="Replace a read-only -o file (it stays read-only; default: refuse).",
    ),
]


def say(message: str) -> None:
    """One line on stderr; file names and trace strings in it have their control characters
    shown (``\x1b``), never sent raw to the terminal."""
    err_console.print(plain(message), markup=False, soft_wrap=True, highlight=False)


#: ``-o -`` means standard output, as for every Unix tool that writes text.
STDOUT = "-"


def is_stdout(output: Path | None) -> bool:
    return output is not None and str(output) == STDOUT


def write_text_output(
    output: Path, text: str, *, follow_link: bool = False, replace_read_only: bool = False
) -> None:
    """``text`` to ``output`` (atomically, then a 'wrote' line on stderr), or to stdout for ``-``."""
    from tcreport import api

    if is_stdout(output):
        typer.echo(text, nl=False)
        return
    target = api.write_text_atomic(
        output, text, follow_link=follow_link, replace_read_only=replace_read_only
    )
    say(f"tcreport: wrote {target}")


def plural(n: int, one: str, many: str | None = None) -> str:
    """``1 gate``, ``2 gates``: messages a person reads say it right."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn tcreport's errors into one line on stderr and the error's exit code; never a traceback."""
    try:
        yield
    except TcreportError as exc:
        reason = " ".join(ln.strip() for ln in exc.reason.splitlines() if ln.strip())
        say(f"tcreport: error: {exc.path}: {reason}" if exc.path else f"tcreport: error: {reason}")
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        err_console.print("tcreport: interrupted", markup=False)
        raise typer.Exit(130) from None


@contextmanager
def status(message: str) -> Iterator[None]:
    """A spinner on stderr for work that may take more than a second (silent when not a TTY)."""
    if sys.stderr.isatty():
        from rich.markup import escape

        with err_console.status(escape(plain(message))):  # it names the user's file
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
    allow_empty: bool = False,
    timeline_iter: int | None = None,
    with_timeline: bool = False,
    output: Path | None = None,
) -> Report:
    """Read ``path`` (plus ncu counters if given) and analyse it, with spinners on stderr.

    ``output``, the file the command will write, is refused if the reader read it (a sidecar).
    """
    from datetime import UTC, datetime

    from tcreport import api

    if iter_start is not None and iter_stop is not None and iter_stop < iter_start:
        raise UsageError(f"--iter-stop {iter_stop} is before --iter-start {iter_start}")
    with status(f"Reading {path}"):
        run = api.load(path)
        if output is not None:
            from tcreport import _fs

            _fs.refuse_read(output, path, run.meta.files)
        if counters is not None:
            run = api.attach_counters(run, counters)
    with status("Analysing"):
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC") if timestamp else None
        view = api.analyze(
            run,
            source_path=str(path),
            key_node=key_node,
            iter_start=iter_start,
            iter_stop=iter_stop,
            timestamp=stamp,
            timeline_iter=timeline_iter,
            with_timeline=with_timeline,
        )
    if not allow_empty:
        api.refuse_ineffective_options(view, path, key_node, iter_start)
    return view


def find_job(path: Path, rank: int | None = None, counters: Path | None = None) -> Job | None:
    """The distributed job ``path`` holds, else None (then ``--rank`` is refused: it has no
    meaning for one trace; ``--counters`` is refused for a job: it is one trace's)."""
    from tcreport import api

    with status(f"Looking at {path}"):
        job = api.find_job(path)
    if job is None and rank is not None:
        raise UsageError(f"--rank is for a folder of a distributed job's traces; {path} is not one")
    if job is not None and counters is not None:
        raise UsageError("--counters takes one trace's Nsight Compute CSV, not a job's")
    return job


def analyze_job(
    job: Job,
    path: Path,
    key_node: str | None,
    iter_start: int | None,
    iter_stop: int | None,
    *,
    timestamp: bool = False,
    allow_empty: bool = False,
    rank: int | None = None,
    timeline_iter: int | None = None,
    with_timeline: bool = False,
) -> JobReport:
    """Analyse every rank of ``job`` (one at a time), with a spinner on stderr."""
    from datetime import UTC, datetime

    from tcreport import api

    if iter_start is not None and iter_stop is not None and iter_stop < iter_start:
        raise UsageError(f"--iter-stop {iter_stop} is before --iter-start {iter_start}")
    with status(f"Analysing {job.present} ranks of {path}"):
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC") if timestamp else None
        jr = api.analyze_job(
            job,
            source_path=str(path),
            key_node=key_node,
            iter_start=iter_start,
            iter_stop=iter_stop,
            rank=rank,
            timestamp=stamp,
            timeline_iter=timeline_iter,
            with_timeline=with_timeline,
        )
    if not allow_empty:
        api.refuse_ineffective_options(jr.detail, path, key_node, iter_start)
    return jr
