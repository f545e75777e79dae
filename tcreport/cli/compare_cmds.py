"""``diff`` and ``check``: compare two runs for a PR, and gate CI on Tensor Core figures."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from tcreport import api
from tcreport.cli._common import (
    AllowEmpty,
    FollowLink,
    IterStart,
    IterStop,
    KeyNode,
    ReplaceReadOnly,
    guard_output,
    is_stdout,
    load_and_analyze,
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
        if fmt is DiffFormat.HTML and (output is None or is_stdout(output)):
            raise UsageError("--format html needs --output FILE")
        guard_output(
            output, [base, head], follow_link=follow_link, replace_read_only=replace_read_only
        )
        slc = slice_of(key_node, iter_start, iter_stop, allow_empty)
        b = load_and_analyze(base, slc, output=output)
        h = load_and_analyze(head, slc, output=output)
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
        if max_regression is not None and baseline is None:
            raise UsageError("--max-regression needs --baseline")
        if baseline is not None and max_regression is None:
            max_regression = 0.0
        if min_tc_share is None and max_eligible_not_tc_share is None and max_regression is None:
            raise UsageError(
                "no gate given (--min-tc-share, --max-eligible-not-tc-share, --baseline)"
            )
        slc = slice_of(key_node, iter_start, iter_stop, allow_empty)
        view = load_and_analyze(path, slc)
        base = load_and_analyze(baseline, slc) if baseline else None
        result = api.check(
            view,
            base,
            min_tc_share=min_tc_share,
            max_eligible_not_tc_share=max_eligible_not_tc_share,
            max_regression=max_regression,
            force=force,
        )
        forced = " (forced comparison)" if result.forced else ""
        if result.passed:
            passed = plural(len(result.results), "gate")
            typer.echo(f"tcreport check: OK: {passed} passed{forced}")
            return
        for r in result.failures:
            typer.echo(plain(f"tcreport check: FAIL {r.name}: {r.message}{forced}"))
        raise typer.Exit(1)
