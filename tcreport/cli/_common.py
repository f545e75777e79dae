"""What every command shares: error mapping, the stderr console, iteration options."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tcreport import api
from tcreport.errors import OptionError, TcreportError, UsageError
from tcreport.fmt import visible as plain

if TYPE_CHECKING:
    from rich.console import Console

    from tcreport.api import Job, JobReport, Report, Slice


@cache
def err_console() -> Console:
    """The stderr console, made on first use: ``tcreport --help`` never prints through it, and
    importing rich is a seventh of its start-up. No emoji codes: ``:thumbs_up:.html`` is a file
    name, and rich would print it as a picture."""
    from rich.console import Console

    return Console(stderr=True, highlight=False, emoji=False)


def once(values: list[Path] | None, flag: str) -> Path | None:
    """The one Nsight Compute CSV of a counters option, refusing a second.

    The counters options are declared repeatable only so a second use is seen: Click would keep the
    last one silently. Two CSVs are not merged: matching is one CSV's affair (conflicting
    verdicts of its kernels leave a kernel unknown, launch i takes ncu's launch i of one
    process), so across two files their order would decide the kernels they disagree on.
    """
    if values and len(values) > 1:
        raise UsageError(
            f"{flag} given {len(values)} times: it takes one Nsight Compute CSV (profile the run "
            "once with ncu, every kernel in one CSV)"
        )
    return values[0] if values else None


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
        help=f"For {api.JOB_FORMS}: the rank shown in full, with its timeline (default: the "
        "straggler).",
    ),
]
ReplaceReadOnly = Annotated[
    bool,
    typer.Option(
        "--replace-read-only",
        help="Replace a read-only -o file (it stays read-only; default: refuse).",
    ),
]


#: The analysis options as this CLI spells them: an :class:`~tcreport.errors.OptionError` from the
#: API (``iter_start 5 is past ...``) is shown with the flag the user typed (``--iter-start 5``).
FLAGS = {
    "key_node": "--key-node",
    "iter_start": "--iter-start",
    "iter_stop": "--iter-stop",
    "allow_empty": "--allow-empty",
    "timeline_iter": "--timeline-iter",
}


def slice_of(
    key_node: str | None = None,
    iter_start: int | None = None,
    iter_stop: int | None = None,
    allow_empty: bool = False,
    timeline_iter: int | None = None,
) -> Slice:
    """The command's iteration options as the one value the API takes (validated there)."""
    return api.Slice(key_node, iter_start, iter_stop, allow_empty, timeline_iter)


def one_line(text: str) -> str:
    """``text`` on one line: each line break (CR, LF, CRLF) and the blanks around it become one
    space. Error reasons and warnings alike, so a name holding a line break reads the same in
    the refusal and in the ``--force`` warning; other control characters are left to
    :func:`say`, which shows them escaped."""
    return " ".join(ln.strip() for ln in text.splitlines() if ln.strip())


def say(message: str) -> None:
    """One line on stderr; file names and trace strings in it have their control characters
    shown (``\x1b``), never sent raw to the terminal.

    Written as it is, unless the stderr console exists: a spinner or progress bar may be live on
    it, and a line printed past it would tear the display. A command that only says "wrote X"
    never imports rich (~20 ms of a small report's start-up)."""
    line = plain(message)
    if sys.stderr is None:  # fd 2 closed (`2>&-`): nowhere to say it, and no reason to fail
        return
    if err_console.cache_info().currsize:
        err_console().print(line, markup=False, soft_wrap=True, highlight=False)
        return
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


#: ``-o -`` means standard output, as for every Unix tool that writes text.
STDOUT = "-"


def is_stdout(output: Path | None) -> bool:
    return output is not None and str(output) == STDOUT


def write_text_output(
    output: Path, text: str, *, follow_link: bool = False, replace_read_only: bool = False
) -> None:
    """``text`` to ``output`` (atomically, then a 'wrote' line on stderr), or to stdout for ``-``."""
    if is_stdout(output):
        typer.echo(text, nl=False)
        return
    target = api.write_text_atomic(
        output, text, follow_link=follow_link, replace_read_only=replace_read_only
    )
    say(f"tcreport: wrote {target}")


def guard_output(
    target: Path | None,
    inputs: Iterable[Path | None],
    *,
    follow_link: bool = False,
    replace_read_only: bool = False,
) -> None:
    """Refuse ``-o`` before any reading when it would destroy an input or is no plain file
    (:func:`tcreport.api.guard_output`, the one guard of every command); standard output and no
    ``-o`` need none."""
    if target is None or is_stdout(target):
        return
    api.guard_output(target, inputs, follow_link=follow_link, replace_read_only=replace_read_only)


def plural(n: int, one: str, many: str | None = None) -> str:
    """``1 gate``, ``2 gates``: messages a person reads say it right."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn tcreport's errors into one line on stderr and the error's exit code; never a traceback."""
    try:
        yield
    except TcreportError as exc:
        reason = one_line(exc.spelt(FLAGS) if isinstance(exc, OptionError) else exc.reason)
        say(f"tcreport: error: {exc.path}: {reason}" if exc.path else f"tcreport: error: {reason}")
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        err_console().print("tcreport: interrupted", markup=False)
        raise typer.Exit(130) from None


@contextmanager
def status(message: str) -> Iterator[None]:
    """A spinner on stderr for work that may take more than a second (silent when not a TTY)."""
    if sys.stderr is not None and sys.stderr.isatty():  # fd 2 closed (`2>&-`): no spinner
        from rich.markup import escape

        with err_console().status(escape(plain(message))):  # it names the user's file
            yield
    else:
        yield


@contextmanager
def phase(name: str, message: str) -> Iterator[None]:
    """:func:`status` for one phase of a command, timed: ``-v`` logs how long it took
    (``tcreport: INFO: read: 1.84 s``), so a slow report says where its time went."""
    import logging
    import time

    began = time.perf_counter()
    with status(message):
        yield
    logging.getLogger("tcreport").info("%s: %.2f s", name, time.perf_counter() - began)


def load_and_analyze(
    path: Path,
    slc: Slice,
    *,
    timestamp: bool = False,
    counters: Path | None = None,
    with_timeline: bool = False,
    output: Path | None = None,
) -> Report:
    """Read ``path`` (plus ncu counters if given) and analyse the part ``slc`` selects, with
    spinners on stderr.

    ``output``, the file the command will write, is refused if the reader read it (a sidecar).
    """
    from datetime import UTC, datetime

    with phase("read", f"Reading {path}"):
        run = api.load(path)
        if output is not None:
            api.guard_sidecars(output, path, run)
        if counters is not None:
            run = api.attach_counters(run, counters)
    with phase("analyse", "Analysing"):
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC") if timestamp else None
        return api.analyze(
            run, slc, source_path=str(path), timestamp=stamp, with_timeline=with_timeline
        )


def find_job(path: Path, rank: int | None = None, counters: Path | None = None) -> Job | None:
    """The distributed job ``path`` holds, else None (then ``--rank`` is refused: it has no
    meaning for one trace; ``--counters`` is refused for a job: it is one trace's)."""
    with status(f"Looking at {path}"):
        job = api.find_job(path)
    if job is None and rank is not None:
        raise UsageError(f"--rank is for {api.JOB_FORMS}; {path} is not one")
    if job is not None and counters is not None:
        raise UsageError("--counters takes one trace's Nsight Compute CSV, not a job's")
    return job


def analyze_job(
    job: Job,
    path: Path,
    slc: Slice,
    *,
    timestamp: bool = False,
    rank: int | None = None,
    with_timeline: bool = False,
) -> JobReport:
    """Analyse the part ``slc`` selects of every rank of ``job`` (one at a time), with a spinner
    on stderr."""
    from datetime import UTC, datetime

    with phase("analyse", f"Analysing {job.present} ranks of {path}"):
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC") if timestamp else None
        return api.analyze_job(
            job, slc, source_path=str(path), rank=rank, timestamp=stamp, with_timeline=with_timeline
        )
