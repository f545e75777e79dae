"""What ``tcreport profile`` does once its options are checked: plan, capture, report.

The choice of backend is made and said before the script runs, so a wrong guess costs nothing. A
key node that never ran is never a silent typo in a report header: the run is still reported (the
steps the default source counted, or the whole run), and the command stops with exit 2 naming the
candidates and the files it kept.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from tcreport.cli._common import FLAGS, phase, say
from tcreport.errors import OptionError, TcreportError, UsageError

if TYPE_CHECKING:
    from tcreport.api import Report, Run, Slice
    from tcreport.capture import CaptureResult, ProfileRequest


def with_notes(run: Run, result: CaptureResult) -> Run:
    from tcreport.capture import Backend
    from tcreport.capture.request import Framework

    notes = list(run.meta.notes)
    for note in result.notes:
        if note not in notes:
            notes.append(note)
    if (
        result.backend is Backend.NSYS
        and result.framework is Framework.TENSORFLOW
        and not (run.ops is not None and run.ops.num_rows)
    ):
        notes.append(
            "No TensorFlow op ranges in the Nsight Systems export, so the figures are per kernel: "
            "only NVIDIA's TensorFlow builds (NGC containers) write an NVTX range per op for "
            "TF_ENABLE_NVTX_RANGES=1, which tcreport set. With stock TensorFlow, "
            "--backend tf gives op-level figures."
        )
    if result.key_node_missing is not None:
        notes.append(
            f"--key-node {result.key_node_missing!r} never ran, so the steps were counted by "
            "the default step source instead; this report is of those steps."
        )
    if result.script_exit_code != 0:
        notes.append(
            f"Partial profile: the script exited with code {result.script_exit_code}; this "
            "report covers only what was captured before it stopped."
        )
    return run.replace(meta=dataclasses.replace(run.meta, notes=tuple(notes)))


def _analyse(run: Run, result: CaptureResult, slc: Slice) -> tuple[Report, str]:
    """The report, and the problem with the iteration options ("" when none): a key node or
    ``--iter-start`` that does nothing gives a whole-run report and the reason (the analysis
    refuses such a slice; the flow reports the whole run instead and says why)."""
    from tcreport import api

    source = str(result.trace_path)
    # the profiler kept only the asked iterations: nothing left to slice
    asked = api.Slice(allow_empty=True) if result.sliced_by_profiler else slc
    try:
        view = api.analyze(run, asked, source_path=source, with_timeline=True)
    except OptionError as exc:
        whole = api.analyze(
            run, api.Slice(allow_empty=True), source_path=source, with_timeline=True
        )
        # `profile` has no --allow-empty: the kept profile's `report` has, so name that command
        words = {**FLAGS, "allow_empty": f"`tcreport report {result.trace_path} --allow-empty`"}
        return whole, f"{result.trace_path}: {exc.spelt(words)}"
    if result.key_node_missing is not None:
        names = ", ".join(result.key_node_candidates) or "none"
        return view, (
            f"--key-node {result.key_node_missing!r} never ran; names that did: {names} "
            f"(`tcreport report {result.trace_path} --key-node NAME` re-analyses the kept "
            "profile by one of them; --allow-empty there aggregates the whole run)"
        )
    return view, ""


def _write(out: Path, result: CaptureResult, slc: Slice) -> tuple[Path, str]:
    """Read, analyse and write ``report.html`` and ``summary.json`` in ``out``; returns the
    report's path and the problem with the iteration options ("" when none)."""
    from tcreport import api

    with phase("read", f"Reading {result.trace_path}"):
        run = with_notes(api.load(result.trace_path), result)
    with phase("analyse", "Analysing"):
        view, problem = _analyse(run, result, slc)
    html = api.write_text_atomic(out / "report.html", api.render_html(view))
    api.write_text_atomic(out / "summary.json", api.render_json(view))
    say(
        f"tcreport: {result.backend.value}: wrote {html} and summary.json; raw profile "
        f"{result.trace_path}",
    )
    _verdict(view)
    return Path(html), problem


def _verdict(view: Report) -> None:
    """The answer the user ran ``profile`` for, on the terminal as well as in the files: the
    analysis' one-line verdict and the one fix to make first, as ``summary`` words them."""
    from tcreport import api

    say("tcreport: " + "".join(view.analysis.verdict.sentence))
    ff = api.fix_first_text(view)
    say(f"tcreport: fix first: {ff if ff is not None else view.no_fix_first}")


def capture_and_report(request: ProfileRequest, slc: Slice) -> None:
    """Run the script under the profiler, then read, analyse (the part ``slc`` selects, unless
    the profiler already kept only those iterations) and write beside the raw profile."""
    from tcreport.capture import Backend, capture, layout, plan, script

    existed = request.out_dir.exists()
    _, backend, why = plan(request)
    if backend is not Backend.DLPROF and (request.delay_s, request.duration_s) != (None, None):
        if not existed:
            request.out_dir.rmdir()  # made by plan(); the run never starts
        raise UsageError(
            f"--delay and --duration are DLProf options and --backend auto chose {backend.value}"
            f" ({why}); use --iter-start/--iter-stop"
        )
    if why is not None:
        say(f"tcreport: backend {backend.value}: {why}")

    def hard_exit(result: CaptureResult) -> None:  # the script ended in os._exit
        _, problem = _write(request.out_dir, result, slc)
        if problem:
            say(f"tcreport: warning: {problem}")

    asked = dataclasses.replace(request, backend=Backend(backend.value), on_hard_exit=hard_exit)
    try:
        result = capture(asked)
    except TcreportError:
        if not existed:  # a run that recorded nothing leaves no empty folder behind
            layout.prune(request.out_dir, request.out_dir, made_out=True)
        raise
    html, problem = _write(request.out_dir, result, slc)
    if result.script_exit_code != 0:
        say(
            f"tcreport: error: the script exited with code {result.script_exit_code}; "
            "the report is partial",
        )
        raise typer.Exit(script.status(result.script_exit_code))  # 256 must not read as 0
    if problem:
        raise UsageError(
            f"{problem}; kept the raw profile {result.trace_path} and a report of "
            f"{'the recorded steps' if result.sliced_by_profiler else 'the whole run'} in "
            f"{Path(html)}"
        )
