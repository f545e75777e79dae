"""``batch`` and ``query``: archive many traces into a dataset, then ask it questions in SQL."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tcreport.cli._common import err_console, plural, say, user_errors
from tcreport.cli.app import app
from tcreport.render.escape import terminal as plain

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from tcreport.batch.work import Outcome


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
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        from tcreport.batch import runner as batch_mod

        progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[last]}"),
            console=err_console,
            transient=True,
            disable=not err_console.is_terminal,  # piped: no bar, and no blank line where it was
        )
        handle: list[TaskID] = []

        def start(total: int) -> None:
            handle.append(progress.add_task("Processing", total=total, last=""))

        def done(o: Outcome) -> None:
            _advance(progress, handle[0], o)

        with progress, _empty_is_a_warning():
            result = batch_mod.run_batch(
                directory,
                output,
                jobs=jobs,
                force=force,
                executor=batch_mod.Executor(executor.value),
                scheduler=scheduler,
                on_start=start,
                on_done=done,
            )
        for source, error in result.failed:
            say(f"tcreport: failed: {source}: {error}")
        summary = (
            f"tcreport: {result.processed} processed, {result.skipped} already in the dataset, "
            f"{len(result.failed)} failed in {result.seconds:.1f} s; wrote {result.index}"
        )
        say(summary)
        if result.failed:
            raise typer.Exit(1)


@contextmanager
def _empty_is_a_warning() -> Iterator[None]:
    """Nothing to archive is not a broken input: say so as a warning, and still exit non-zero so
    a script that pointed batch at the wrong folder notices."""
    from tcreport.batch.runner import EmptyInputError

    try:
        yield
    except EmptyInputError as exc:
        say(f"tcreport: warning: {exc}")
        raise typer.Exit(exc.exit_code) from None


def _advance(progress: Progress, task: TaskID, o: Outcome) -> None:
    from rich.markup import escape

    last = escape(plain(("" if o.ok else "failed: ") + o.source))  # the column reads markup
    progress.update(task, advance=1, last=last)


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
            "--timeout", help="Stop the query after this many seconds (default: no limit)."
        ),
    ] = None,
) -> None:
    """Ask the batch dataset a question in SQL (DuckDB, offline); Ctrl-C stops it."""
    with user_errors():
        from tcreport.batch import query as query_mod

        table = query_mod.run(output, sql, timeout=timeout)
        if fmt is QueryFormat.CSV:
            # Piped: the values exactly (click's echo would strip ANSI codes out of them); on a
            # terminal: never a raw control code.
            _write(query_mod.to_csv(table, escape=plain if sys.stdout.isatty() else None))
        elif fmt is QueryFormat.JSON:
            _write(query_mod.to_json(table))
        else:
            from tcreport.render import terminal

            names = table.column_names
            rows = [  # a query result a person reads: small
                ["" if v is None else str(v) for v in row.values()] for row in table.to_pylist()
            ]
            terminal.rows_table(names, rows)
            err_console.print(plural(table.num_rows, "row"), markup=False)
