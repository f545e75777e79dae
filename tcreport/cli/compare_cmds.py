"""``diff`` and ``check``: compare two runs for a PR, and gate CI on Tensor Core figures."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tcreport import api
from tcreport.cli._common import (
    AllowEmpty,
    FollowLink,
    IterStart,
    IterStop,
    KeyNode,
    ReplaceReadOnly,
    analyze_job,
    find_job,
    guard_output,
    is_stdout,
    load_and_analyze,
    once,
    one_line,
    plural,
    say,
    slice_of,
    user_errors,
    write_text_output,
)
from tcreport.cli.app import app
from tcreport.errors import UsageError
from tcreport.fmt import visible as plain

if TYPE_CHECKING:
    from tcreport.api import CheckResult, Job, JobReport, Slice


class DiffFormat(StrEnum):
    HTML = "html"
    MARKDOWN = "markdown"
    JSON = "json"
    TERMINAL = "terminal"


_INPUT_HELP = (
    "Any input tcreport reads (trace, Nsight Compute CSV, DLProf folder, 'tcreport ingest' folder)."
)
Input = Annotated[
    Path,
    typer.Argument(
        help=_INPUT_HELP,
        metavar="PATH",
        show_default=False,
    ),
]
Force = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Compare even when the GPU model, generation or count, the framework or its "
        "version differ, one run is CPU-only, or either side's GPU or framework is unknown "
        "(figures are per iteration, so iteration counts may differ).",
    ),
]

_COUNTERS_HELP = (
    "Nsight Compute CSV (ncu --csv) of {whose}, or a folder holding it, as summary's "
    "--counters: its tensor-pipe "
    "counters decide Tensor Core use where they exist."
)


def _counters(flag: str, whose: str) -> object:
    return typer.Option(flag, help=_COUNTERS_HELP.format(whose=whose), metavar="NCU_CSV")


# repeatable only so that a second CSV is refused, not silently kept (_common.once)
BaseCounters = Annotated[list[Path] | None, _counters("--base-counters", "BASE's workload")]
HeadCounters = Annotated[list[Path] | None, _counters("--head-counters", "HEAD's workload")]
CheckCounters = Annotated[list[Path] | None, _counters("--counters", "PATH's workload")]
BaselineCounters = Annotated[
    list[Path] | None, _counters("--baseline-counters", "the --baseline run's workload")
]


def _job_of(path: Path, counters: Path | None, flag: str) -> Job | None:
    """As :func:`find_job`, naming the flag that takes one trace's counters, not a job's."""
    job = find_job(path)
    if job is not None and counters is not None:
        raise UsageError(f"{flag} takes one trace's Nsight Compute CSV, not a job's")
    return job


@app.command()
def diff(
    base: Annotated[Path, typer.Argument(help=_INPUT_HELP, metavar="BASE", show_default=False)],
    head: Annotated[Path, typer.Argument(help=_INPUT_HELP, metavar="HEAD", show_default=False)],
    fmt: Annotated[
        DiffFormat | None,
        typer.Option(
            "--format",
            "-f",
            metavar="[markdown|json|html|terminal]",
            help="Output format [default: from the -o suffix (.html, .json), else terminal "
            "tables on a terminal and markdown (a PR comment) in a pipe or file].",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="File to write; '-' or none for stdout (html needs a file).",
        ),
    ] = None,
    key_node: KeyNode = None,
    iter_start: IterStart = None,
    iter_stop: IterStop = None,
    force: Force = False,
    allow_empty: AllowEmpty = False,
    follow_link: FollowLink = False,
    replace_read_only: ReplaceReadOnly = False,
    base_counters_given: BaseCounters = None,
    head_counters_given: HeadCounters = None,
) -> None:
    """What changed from BASE to HEAD: GPU time, Tensor Core share, eligible-not-TC time, findings."""
    with user_errors():
        base_counters = once(base_counters_given, "--base-counters")
        head_counters = once(head_counters_given, "--head-counters")
        fmt = fmt or _format_of(output)
        if fmt is DiffFormat.HTML and (output is None or is_stdout(output)):
            raise UsageError("--format html needs --output FILE")
        guard_output(
            output,
            [base, head, base_counters, head_counters],
            follow_link=follow_link,
            replace_read_only=replace_read_only,
        )
        slc = slice_of(key_node, iter_start, iter_stop, allow_empty)
        bjob = _job_of(base, base_counters, "--base-counters")
        if bjob is not None or _job_of(head, head_counters, "--head-counters") is not None:
            text = _diff_jobs(base, head, fmt, slc, force)
            return write_text_output(output if output is not None else Path("-"), text, follow_link=follow_link, replace_read_only=replace_read_only)  # fmt: skip
        b = load_and_analyze(base, slc, output=output, counters=base_counters)
        h = load_and_analyze(head, slc, output=output, counters=head_counters)
        d = api.diff(b, h, force=force)
        if d.forced:
            say("tcreport: warning: forced comparison: " + one_line("; ".join(d.not_comparable)))
        text = api.render_diff(d, fmt.value)
        write_text_output(
            output if output is not None else Path("-"),
            text,
            follow_link=follow_link,
            replace_read_only=replace_read_only,
        )


def _diff_jobs(
    base: Path,
    head: Path,
    fmt: DiffFormat,
    slc: Slice,
    force: bool,
) -> str:
    """Two distributed jobs: the job's figures and ranks, then the same rank diffed in full
    (head's straggler, or its first timed rank, where the base timed it too)."""
    bjob, hjob = find_job(base), find_job(head)
    if bjob is None or hjob is None:
        one = base if bjob is None else head
        raise UsageError(
            f"{one} is one trace and the other a distributed job: diff compares like with like"
        )
    h = analyze_job(hjob, head, slc)
    same = h.detail_rank if h.detail_rank in {r.rank for r in bjob.ranks} else None
    b, h = api.same_rank_in_full(analyze_job(bjob, base, slc, rank=same), h, bjob, hjob, slc)
    d = api.diff_jobs(b, h, force=force)
    if d.forced:
        say("tcreport: warning: forced comparison: " + one_line("; ".join(d.not_comparable)))
    return api.render_job_diff(d, fmt.value)


@app.command()
def check(
    path: Input,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline", metavar="PATH", help="Run to compare against for --max-regression."
        ),
    ] = None,
    min_tc_share: Annotated[
        float | None,
        typer.Option(
            "--min-tc-share",
            min=0.0,
            max=1.0,
            metavar="SHARE",
            help="Fail below this Tensor Core share (0-1).",
        ),
    ] = None,
    max_eligible_not_tc_share: Annotated[
        float | None,
        typer.Option(
            "--max-eligible-not-tc-share",
            min=0.0,
            max=1.0,
            metavar="SHARE",
            help="Fail when eligible GPU time not on TC exceeds this share of kernel time (0-1).",
        ),
    ] = None,
    max_regression: Annotated[
        float | None,
        typer.Option(
            "--max-regression",
            min=0.0,
            metavar="FRACTION",
            help="Fail when GPU kernel time or wall time per iteration grows by more than this "
            "fraction, or "
            "TC share drops by more than this many points/100, beyond noise (default with "
            "--baseline: 0).",
        ),
    ] = None,
    key_node: KeyNode = None,
    iter_start: IterStart = None,
    iter_stop: IterStop = None,
    force: Force = False,
    allow_empty: AllowEmpty = False,
    counters_given: CheckCounters = None,
    baseline_counters_given: BaselineCounters = None,
) -> None:
    """CI gate: a line saying OK (exit 0) or FAILED (exit 1), then one line per gate with its
    figure and limit."""
    with user_errors():
        counters = once(counters_given, "--counters")
        baseline_counters = once(baseline_counters_given, "--baseline-counters")
        if max_regression is not None and baseline is None:
            raise UsageError("--max-regression needs --baseline")
        if baseline is not None and max_regression is None:
            max_regression = 0.0
        if min_tc_share is None and max_eligible_not_tc_share is None and max_regression is None:
            raise UsageError(
                "no gate given (--min-tc-share, --max-eligible-not-tc-share, --baseline)"
            )
        slc = slice_of(key_node, iter_start, iter_stop, allow_empty)
        gates = {
            "min_tc_share": min_tc_share,
            "max_eligible_not_tc_share": max_eligible_not_tc_share,
            "max_regression": max_regression,
        }
        if baseline_counters is not None and baseline is None:
            raise UsageError("--baseline-counters needs --baseline")
        job = _job_of(path, counters, "--counters")
        if job is not None:
            if baseline is not None:
                _job_of(baseline, baseline_counters, "--baseline-counters")
            jr, bjr = _job_and_baseline(job, path, baseline, slc)
            return _print_check(api.check_job(jr, bjr, **gates, force=force))
        view = load_and_analyze(path, slc, counters=counters)
        base = load_and_analyze(baseline, slc, counters=baseline_counters) if baseline else None
        _print_check(api.check(view, base, **gates, force=force))


def _print_check(result: CheckResult) -> None:
    """The outcome first, then every gate on its own line with its figure and its limit, passed
    or not: "OK: 3 gates passed" alone does not say what was checked, and a failed run's log is
    read for how close the other gates came too. A failed gate's line keeps its ``FAIL`` word."""
    forced = " (forced comparison)" if result.forced else ""
    total = plural(len(result.results), "gate")
    if result.passed:
        typer.echo(f"tcreport check: OK: {total} passed{forced}")
    else:
        typer.echo(f"tcreport check: FAILED: {len(result.failures)} of {total} failed{forced}")
    for r in result.results:
        typer.echo(plain(f"tcreport check: {'pass' if r.passed else 'FAIL'} {r.name}: {r.message}"))
    for note in result.notes:
        typer.echo(plain(f"tcreport check: note: {note}"))
    if not result.passed:
        raise typer.Exit(1)


def _job_and_baseline(
    job: Job, path: Path, baseline: Path | None, slc: Slice
) -> tuple[JobReport, JobReport | None]:
    """A job analysed for the gates, and its baseline, which must be a job too (showing the
    same rank in full where it has it)."""
    jr = analyze_job(job, path, slc)
    if baseline is None:
        return jr, None
    bjob = find_job(baseline)
    if bjob is None:
        raise UsageError(f"{baseline}: the baseline of a distributed job must be a job too")
    same = jr.detail_rank if jr.detail_rank in {r.rank for r in bjob.ranks} else None
    bjr, jr = api.same_rank_in_full(analyze_job(bjob, baseline, slc, rank=same), jr, bjob, job, slc)
    return jr, bjr


def _format_of(output: Path | None) -> DiffFormat:
    """The format a file name asks for: `-o diff.html` is HTML, not Markdown in an .html file.
    Without a file, a person at a terminal gets tables (the Markdown is escaped for GitHub:
    `&lt;`, `\\_`), and a pipe the Markdown it always got, so scripts that post it see no change."""
    if output is None or is_stdout(output):
        return DiffFormat.TERMINAL if sys.stdout.isatty() else DiffFormat.MARKDOWN
    return {".html": DiffFormat.HTML, ".htm": DiffFormat.HTML, ".json": DiffFormat.JSON}.get(
        output.suffix.lower(), DiffFormat.MARKDOWN
    )
