"""``report``, ``summary`` and ``ingest``: read one trace and show or persist what it says."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tcreport import api
from tcreport.cli._common import (
    FLAGS,
    AllowEmpty,
    FollowLink,
    IterStart,
    IterStop,
    KeyNode,
    OutputFile,
    Rank,
    ReplaceReadOnly,
    analyze_job,
    find_job,
    guard_output,
    load_and_analyze,
    once,
    phase,
    say,
    slice_of,
    status,
    user_errors,
    write_text_output,
)
from tcreport.cli.app import app
from tcreport.errors import UsageError

Counters = Annotated[  # repeatable only so a second one is refused (_common.once)
    list[Path] | None,
    typer.Option(
        "--counters",
        help="Nsight Compute CSV (ncu --csv) of the same workload, or a folder holding it: its "
        "tensor-pipe counters decide "
        "Tensor Core use where they exist, and disagreements with the kernel-name rules are listed.",
        metavar="NCU_CSV",
    ),
]

TracePath = Annotated[
    Path,
    typer.Argument(
        help="A DLProf result folder or report, dlprof_dldb.sqlite, an Nsight Systems .sqlite export, "
        "a .nsys-rep report, a PyTorch profiler trace, a TensorFlow xplane.pb, an Nsight Compute "
        "CSV (ncu --csv), a folder holding "
        "one of these or the per-rank traces of one distributed job, or a 'tcreport ingest' "
        "folder.",
        metavar="PATH",
        show_default=False,
    ),
]


@app.command()
def report(
    path: TracePath,
    output: OutputFile = None,
    key_node: KeyNode = None,
    iter_start: IterStart = None,
    iter_stop: IterStop = None,
    markdown: Annotated[
        bool,
        typer.Option(
            "--markdown",
            help="Write GitHub-flavoured Markdown instead of HTML (the default for -o FILE.md).",
        ),
    ] = False,
    timestamp: Annotated[
        bool, typer.Option("--timestamp", help="Stamp the report with the time it was made.")
    ] = False,
    counters_given: Counters = None,
    allow_empty: AllowEmpty = False,
    follow_link: FollowLink = False,
    replace_read_only: ReplaceReadOnly = False,
    timeline_iter: Annotated[
        int | None,
        typer.Option(
            "--timeline-iter",
            min=0,
            metavar="N",
            help="Iteration the HTML timeline shows (default: the median aggregated one).",
        ),
    ] = None,
    rank: Rank = None,
) -> None:
    """Write one self-contained HTML report (or Markdown for a PR comment).

    Without -o it goes to tcreport.html (tcreport.md with --markdown).
    """
    with user_errors():
        counters = once(counters_given, "--counters")
        # `-o notes.md` means Markdown: HTML under a .md name is never what was wanted
        markdown = markdown or (
            output is not None and output.suffix.lower() in (".md", ".markdown")
        )
        target = (
            output if output is not None else Path("tcreport.md" if markdown else "tcreport.html")
        )
        guard_output(
            target, [path, counters], follow_link=follow_link, replace_read_only=replace_read_only
        )
        slc = slice_of(key_node, iter_start, iter_stop, allow_empty, timeline_iter)
        job = find_job(path, rank, counters)
        jr = None
        if job is not None:  # a distributed job: its page, with the rank shown in full
            jr = analyze_job(job, path, slc, timestamp=timestamp, rank=rank, with_timeline=not markdown)  # fmt: skip
        view = jr.detail if jr is not None else load_and_analyze(
            path, slc, timestamp=timestamp, counters=counters, with_timeline=not markdown,
            output=output,
        )  # fmt: skip
        ignored = view.analysis.steps.timeline_ignored
        if ignored is not None:  # the analysis drew another iteration: say so
            say(f"tcreport: warning: {ignored.spelt(FLAGS)}")
        if jr is not None:
            with phase("render", "Rendering"):
                text = api.render_job_markdown(jr) if markdown else api.render_job_html(jr)
            return write_text_output(target, text, follow_link=follow_link, replace_read_only=replace_read_only)  # fmt: skip
        with phase("render", "Rendering"):
            text = api.render_markdown(view) if markdown else api.render_html(view)
        write_text_output(
            target, text, follow_link=follow_link, replace_read_only=replace_read_only
        )


@app.command()
def summary(
    path: TracePath,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the tcreport.summary/1 JSON on stdout.")
    ] = False,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="With --json: write the JSON to FILE instead ('-' = stdout, the default).",
            show_default=False,
        ),
    ] = None,
    key_node: KeyNode = None,
    iter_start: IterStart = None,
    iter_stop: IterStop = None,
    counters_given: Counters = None,
    allow_empty: AllowEmpty = False,
    follow_link: FollowLink = False,
    replace_read_only: ReplaceReadOnly = False,
    rank: Rank = None,
) -> None:
    """Print the verdict: a table on the terminal, or JSON for CI."""
    with user_errors():
        counters = once(counters_given, "--counters")
        if output is not None and not json_out:
            raise UsageError("--output writes the JSON summary; add --json")
        guard_output(
            output, [path, counters], follow_link=follow_link, replace_read_only=replace_read_only
        )
        slc = slice_of(key_node, iter_start, iter_stop, allow_empty)
        job = find_job(path, rank, counters)
        if job is not None:
            jr = analyze_job(job, path, slc, rank=rank)
            if not json_out:
                return api.print_job_summary(jr)
            return write_text_output(output if output is not None else Path("-"), api.render_job_json(jr), follow_link=follow_link, replace_read_only=replace_read_only)  # fmt: skip
        view = load_and_analyze(path, slc, counters=counters)
        if json_out:
            write_text_output(
                output if output is not None else Path("-"),
                api.render_json(view),
                follow_link=follow_link,
                replace_read_only=replace_read_only,
            )
        else:
            api.print_summary(view)


@app.command()
def ingest(
    path: TracePath,
    output: Annotated[
        Path,
        typer.Option(
            "--output", "-o", metavar="DIR", help="Folder to write the canonical Parquet tables to."
        ),
    ],
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Replace the folder if it is one 'tcreport ingest' wrote (never another).",
        ),
    ] = False,
    counters_given: Counters = None,
) -> None:
    """Parse once, keep the canonical tables (Parquet); report and summary then read the folder."""
    with user_errors():
        counters = once(counters_given, "--counters")
        api.check_ingest_output(output, force=force, inputs=[path, counters])
        with status(f"Reading {path}"):
            run = api.load(path)
            if counters is not None:
                run = api.attach_counters(run, counters)
        target = api.ingest(
            run,
            output,
            force=force,
            on_kept=lambda kept: say(
                f"tcreport: warning: {output}: files added to it while it was replaced "
                f"are kept in {kept}"
            ),
        )
        say(f"tcreport: wrote {target}")
