"""``batch`` and ``query``: archive many traces into a dataset, then ask it questions in SQL."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tcreport import api
from tcreport.cli._common import err_console, plural, say, user_errors
from tcreport.cli.app import app
from tcreport.errors import EmptyInputError
from tcreport.fmt import visible as plain

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from tcreport.api import Outcome


class ExecutorName(StrEnum):
    PROCESS = "process"
    DASK = "dask"


class QueryFormat(StrEnum):
    TABLE = "table"
    CSV = "csv"
    JSON = "json"


@app.command()
def batch(
    directory: Annotated[
        Path,
        typer.Argument(
            help="Folder of traces (searched recursively).", metavar="DIR", show_default=False
        ),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "--output", "-o", metavar="OUT", help="Folder for dataset/, reports/ and index.html."
        ),
    ],
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", min=1, metavar="N", help="Parallel processes.")
    ] = 1,
    force: Annotated[
        bool, typer.Option("--force", help="Re-process runs the dataset already holds.")
    ] = False,
    executor: Annotated[
        ExecutorName,
        typer.Option("--executor", metavar="[process|dask]", help="Where the per-trace work runs."),
    ] = ExecutorName.PROCESS,
    scheduler: Annotated[
        str | None,
        typer.Option(
            "--scheduler",
            metavar="ADDRESS",
            help="Dask scheduler address (with --executor dask).",
        ),
    ] = None,
) -> None:
    """Every trace under DIR -> Parquet dataset, one report per run and an index."""
    with user_errors():
        progress = _progress()
        handle: list[TaskID] = []

        def start(total: int) -> None:
            handle.append(progress.add_task("Processing", total=total, failed=0, last=""))

        failures = [0]

        def done(o: Outcome) -> None:
            failures[0] += 0 if o.ok else 1
            _advance(progress, handle[0], o, failures[0])

        with progress, _empty_is_a_warning():
            result = api.batch(
                directory,
                output,
                jobs=jobs,
                force=force,
                executor=executor.value,
                scheduler=scheduler,
                on_start=start,
                on_done=done,
            )
        for note in result.notes:
            say(f"tcreport: note: {note}")
        for source, error in result.failed:
            say(f"tcreport: failed: {source}: {error}")
        copies = (
            f", {len(result.duplicates)} identical "
            f"{'copy' if len(result.duplicates) == 1 else 'copies'} skipped (one run each)"
            if result.duplicates
            else ""
        )
        summary = (
            f"tcreport: {result.processed} processed, {result.skipped} already in the dataset, "
            f"{len(result.failed)} failed{copies} in {result.seconds:.1f} s; wrote {result.index}"
        )
        say(summary)
        if result.failed:
            raise typer.Exit(1)


@contextmanager
def _empty_is_a_warning() -> Iterator[None]:
    """Nothing to archive is not a broken input: say so as a warning, and still exit non-zero so
    a script that pointed batch at the wrong folder notices."""
    try:
        yield
    except EmptyInputError as exc:
        say(f"tcreport: warning: {exc}")
        raise typer.Exit(exc.exit_code) from None


def _progress() -> Progress:
    """The bar on a terminal: done of total, how many failed, the time left, the last run.
    Piped or redirected, it is off: no bar, and no blank line where it was."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )
    from rich.table import Column

    last = Column(
        no_wrap=True, overflow="ellipsis", max_width=40
    )  # a long path never hides the bar
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(bar_width=24),
        MofNCompleteColumn(),
        TextColumn("done, {task.fields[failed]} failed, ETA"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[last]}", table_column=last),
        console=err_console(),
        transient=True,
        disable=not err_console().is_terminal,
    )


def _advance(progress: Progress, task: TaskID, o: Outcome, failed: int) -> None:
    from rich.markup import escape

    last = escape(plain(("" if o.ok else "failed: ") + o.source))  # the column reads markup
    progress.update(task, advance=1, failed=failed, last=last)


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


@app.command()
def query(
    output: Annotated[
        Path,
        typer.Argument(help="A 'tcreport batch' output folder.", metavar="OUT", show_default=False),
    ],
    sql: Annotated[
        str,
        typer.Argument(
            help="SQL over the views runs, ops, kernels, findings, steps.",
            metavar="SQL",
            show_default=False,
        ),
    ],
    fmt: Annotated[
        QueryFormat,
        typer.Option("--format", "-f", metavar="[table|csv|json]", help="Output format."),
    ] = QueryFormat.TABLE,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            help="Stop the query after this many seconds (default: no limit).",
        ),
    ] = None,
) -> None:
    """Ask the batch dataset a question in SQL (DuckDB, offline); Ctrl-C stops it."""
    with user_errors():
        table = api.query(output, sql, timeout=timeout)
        if fmt is QueryFormat.CSV:
            # Piped: the values exactly (click's echo would strip ANSI codes out of them); on a
            # terminal: never a raw control code.
            _write(api.query_csv(table, escape=plain if sys.stdout.isatty() else None))
        elif fmt is QueryFormat.JSON:
            _write(api.query_json(table))
        else:
            names = table.column_names
            rows = [  # a query result a person reads: small
                ["" if v is None else str(v) for v in row.values()] for row in table.to_pylist()
            ]
            api.print_rows(names, rows)
            err_console().print(plural(table.num_rows, "row"), markup=False)
