"""``diff`` and ``check``: compare two runs for a PR, and gate CI on Tensor Core figures."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tcreport.cli._common import (
    AllowEmpty,
    FollowLink,
    IterStart,
    IterStop,
    KeyNode,
    ReplaceReadOnly,
    analyze_job,
    find_job,
    is_stdout,
    load_and_analyze,
    plural,
    say,
    user_errors,
    write_text_output,
)
from tcreport.cli.app import app
from tcreport.errors import UsageError
from tcreport.render.escape import terminal as plain

if TYPE_CHECKING:
    from tcreport.compare.gates import CheckResult, Gates
    from tcreport.ingest.job import Job


class DiffFormat(StrEnum):
    HTML = "html"
    MARKDOWN = "markdown"
    JSON = "json"


_INPUT_HELP = "Any input tcreport reads (trace, DLProf folder, 'tcreport ingest' folder)."
Input = Annotated[
    Path,
    typer.Argument(
        help="Any input tcreport reads (trace, DLProf folder, 'tcreport ingest' folder).",
        metavar="PATH",
        show_default=False,
    ),
]
Force = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Compare even when GPU model, framework version or iteration count differ.",
    ),
]


@app.command()
def diff(
    base: Annotated[Path, typer.Argument(help=_INPUT_HELP, metavar="BASE", show_default=False)],
    head: Annotated[Path, typer.Argument(help=_INPUT_HELP, metavar="HEAD", show_default=False)],
    fmt: Annotated[
        DiffFormat,
        typer.Option("--format", "-f", metavar="[markdown|json|html]", help="Output format."),
    ] = DiffFormat.MARKDOWN,
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
) -> None:
    """What changed from BASE to HEAD: GPU time, Tensor Core share, eligible-not-TC time, findings."""
    with user_errors():
        from tcreport import __version__
        from tcreport.compare import diff as compare

        if fmt is DiffFormat.HTML and (output is None or is_stdout(output)):
            raise UsageError("--format html needs --output FILE")
        if output is not None and not is_stdout(output):
            from tcreport import _fs

            _fs.refuse_inputs(output, [base, head])
            _fs.check_file_target(
                output, follow_link=follow_link, replace_read_only=replace_read_only
            )
        if find_job(base) is not None or find_job(head) is not None:
            text = _diff_jobs(
                base, head, fmt, (key_node, iter_start, iter_stop), force, allow_empty
            )
            return write_text_output(output if output is not None else Path("-"), text, follow_link=follow_link, replace_read_only=replace_read_only)  # fmt: skip
        b = load_and_analyze(
            base, key_node, iter_start, iter_stop, allow_empty=allow_empty, output=output
        )
        h = load_and_analyze(
            head, key_node, iter_start, iter_stop, allow_empty=allow_empty, output=output
        )
        d = compare.diff(b, h, force=force)
        if d.forced:
            say(
                "tcreport: warning: forced comparison: " + "; ".join(d.not_comparable),
            )
        if fmt is DiffFormat.HTML:
            from tcreport.render import diff_html

            text = diff_html.render(d, __version__)
        elif fmt is DiffFormat.JSON:
            from tcreport.render import diff_json

            text = diff_json.render(d, __version__)
        else:
            from tcreport.render import diff_markdown

            text = diff_markdown.render(d, __version__)
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
    iters: tuple[str | None, int | None, int | None],
    force: bool,
    allow_empty: bool,
) -> str:
    """Two distributed jobs: the job's figures and ranks, then the same rank diffed in full
    (head's straggler, or its first rank)."""
    from tcreport import __version__
    from tcreport.compare import job_diff
    from tcreport.render import job_diff as render

    bjob, hjob = find_job(base), find_job(head)
    if bjob is None or hjob is None:
        one = base if bjob is None else head
        raise UsageError(
            f"{one} is one trace and the other a distributed job: diff compares like with like"
        )
    h = analyze_job(hjob, head, *iters, allow_empty=allow_empty)
    same = h.detail_rank if h.detail_rank in {r.rank for r in bjob.ranks} else None
    b = analyze_job(bjob, base, *iters, allow_empty=allow_empty, rank=same)
    d = job_diff.diff(b, h, force=force)
    if d.forced:
        say("tcreport: warning: forced comparison: " + "; ".join(d.not_comparable))
    if fmt is DiffFormat.HTML:
        return render.render_html(d, __version__)
    if fmt is DiffFormat.JSON:
        return render.render_json(d, __version__)
    return render.render_markdown(d, __version__)


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
            help="Fail when GPU kernel time per iteration grows by more than this fraction, or "
            "TC share drops by more than this many points/100, beyond noise (default with "
            "--baseline: 0).",
        ),
    ] = None,
    key_node: KeyNode = None,
    iter_start: IterStart = None,
    iter_stop: IterStop = None,
    force: Force = False,
    allow_empty: AllowEmpty = False,
) -> None:
    """CI gate: exit 1 with one line per failed gate, exit 0 with one OK line otherwise."""
    with user_errors():
        from tcreport.compare import gates

        if max_regression is not None and baseline is None:
            raise UsageError("--max-regression needs --baseline")
        if baseline is not None and max_regression is None:
            max_regression = 0.0
        g = gates.Gates(min_tc_share, max_eligible_not_tc_share, max_regression)
        if g == gates.Gates():
            raise UsageError(
                "no gate given (--min-tc-share, --max-eligible-not-tc-share, --baseline)"
            )
        job = find_job(path)
        if job is not None:
            result = _check_job(job, path, g, baseline, (key_node, iter_start, iter_stop), force, allow_empty)  # fmt: skip
            return _print_check(result)
        view = load_and_analyze(path, key_node, iter_start, iter_stop, allow_empty=allow_empty)
        base = (
            load_and_analyze(baseline, key_node, iter_start, iter_stop, allow_empty=allow_empty)
            if baseline
            else None
        )
        _print_check(gates.check(view, g, base, force=force))


def _print_check(result: CheckResult) -> None:
    forced = " (forced comparison)" if result.forced else ""
    if result.passed:
        passed = plural(len(result.results), "gate")
        typer.echo(f"tcreport check: OK: {passed} passed{forced}")
        return
    for r in result.failures:
        typer.echo(plain(f"tcreport check: FAIL {r.name}: {r.message}{forced}"))
    raise typer.Exit(1)


def _check_job(
    job: Job,
    path: Path,
    g: Gates,
    baseline: Path | None,
    iters: tuple[str | None, int | None, int | None],
    force: bool,
    allow_empty: bool,
) -> CheckResult:
    """The gates against a job's own figures; a baseline must be a job too."""
    from tcreport.compare import job_diff

    jr = analyze_job(job, path, *iters, allow_empty=allow_empty)
    base = None
    if baseline is not None:
        bjob = find_job(baseline)
        if bjob is None:
            raise UsageError(f"{baseline}: the baseline of a distributed job must be a job too")
        same = jr.detail_rank if jr.detail_rank in {r.rank for r in bjob.ranks} else None
        base = analyze_job(bjob, baseline, *iters, allow_empty=allow_empty, rank=same)
    return job_diff.check(jr, g, base, force=force)
