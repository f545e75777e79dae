"""``tcreport profile``: run a training script under a profiler and report on what it recorded.

Everything after the script (or after ``--``) is the script's own argument list and is passed
through untouched. The raw profile stays in the output folder beside ``report.html`` and
``summary.json`` so it can be opened in the profiler's own viewer or re-read with ``report``.
The script's exit code becomes tcreport's, so ``tcreport profile`` can stand in for ``python`` in
a CI job.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tcreport import api
from tcreport.cli._common import (
    IterStart,
    IterStop,
    KeyNode,
    say,
    slice_of,
    status,
    user_errors,
)
from tcreport.cli.app import app
from tcreport.errors import UsageError

if TYPE_CHECKING:
    from tcreport.api import Run, Slice
    from tcreport.capture import CaptureResult, ProfileRequest


class BackendName(StrEnum):
    AUTO = "auto"
    DLPROF = "dlprof"
    NSYS = "nsys"
    TF = "tf"


def default_output_dir(script: Path) -> Path:
    from datetime import UTC, datetime

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return Path(f"tcreport-{script.stem}-{stamp}")


def _with_notes(run: Run, result: CaptureResult) -> Run:
    import dataclasses

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
    if result.script_exit_code != 0:
        notes.append(
            f"Partial profile: the script exited with code {result.script_exit_code}; this "
            "report covers only what was captured before it stopped."
        )
    return run.replace(meta=dataclasses.replace(run.meta, notes=tuple(notes)))


def _check_outputs(out: Path, script: Path) -> None:
    """Refuse now, not after the training run, a report.html/summary.json that is the script,
    a symbolic link or a read-only file."""
    for name in ("report.html", "summary.json"):
        api.guard_output(out / name, [script], folder_made_later=True)


Script = Annotated[
    Path,
    typer.Argument(
        help="The training script to run (a .py file).", metavar="SCRIPT", show_default=False
    ),
]
ScriptArgs = Annotated[
    list[str] | None,
    typer.Argument(
        help="Arguments for the script, passed through untouched (put them after '--').",
        metavar="SCRIPT_ARGS...",
        show_default=False,
    ),
]
BackendOpt = Annotated[
    BackendName,
    typer.Option(
        "--backend",
        metavar="[auto|dlprof|nsys|tf]",
        help="Profiler: auto (dlprof if on PATH, else nsys, else the TensorFlow profiler), "
        "dlprof, nsys or tf.",
    ),
]
OutputDir = Annotated[
    Path | None,
    typer.Option(
        "--output-dir",
        metavar="DIR",
        help="Folder for the raw profile, report.html and summary.json "
        "[default: tcreport-<script>-<UTC time>].",
        show_default=False,
    ),
]
Delay = Annotated[
    float | None,
    typer.Option(
        "--delay", min=0, metavar="SECONDS", help="dlprof: seconds before profiling starts."
    ),
]
Duration = Annotated[
    float | None,
    typer.Option("--duration", min=0, metavar="SECONDS", help="dlprof: seconds to profile."),
]
Verbose = Annotated[
    bool,
    typer.Option(
        "--verbose",
        help="Show TensorFlow's own logging (hidden by default; errors always show).",
    ),
]


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def profile(
    script: Script,
    script_args: ScriptArgs = None,
    key_node: KeyNode = None,
    iter_start: IterStart = None,
    iter_stop: IterStop = None,
    backend: BackendOpt = BackendName.AUTO,
    output_dir: OutputDir = None,
    delay: Delay = None,
    duration: Duration = None,
    verbose: Verbose = False,
) -> None:
    """Run a training script under a profiler; write report.html and summary.json beside it."""
    import logging

    from tcreport.capture import quiet

    # `tcreport -v profile ...` asks for more logging as well as `profile --verbose`
    verbose = verbose or logging.getLogger().getEffectiveLevel() <= logging.INFO
    with user_errors(), quiet.framework_logs(verbose):
        from tcreport.capture import Backend, ProfileRequest

        # checked before the script runs; the capture is reported whatever the slice selects
        slc = slice_of(key_node, iter_start, iter_stop, allow_empty=True)
        if (delay is not None or duration is not None) and backend not in (
            BackendName.AUTO,
            BackendName.DLPROF,
        ):
            raise UsageError("--delay and --duration are DLProf options; use --backend dlprof")
        out = output_dir if output_dir is not None else default_output_dir(script)
        _check_outputs(out, script)
        request = ProfileRequest(
            script=script,
            script_args=tuple(script_args or ()),
            backend=Backend(backend.value),
            out_dir=out,
            key_node=key_node,
            iter_start=iter_start,
            iter_stop=iter_stop,
            delay_s=delay,
            duration_s=duration,
            verbose=verbose,
        )
        _capture_and_report(request, slc)


def _capture_and_report(request: ProfileRequest, slc: Slice) -> None:
    """Run the script under the profiler, then read, analyse (the part ``slc`` selects, unless
    the profiler already kept only those iterations) and write beside the raw profile."""
    from tcreport.capture import capture

    out = request.out_dir
    result = capture(request)
    with status(f"Reading {result.trace_path}"):
        run = _with_notes(api.load(result.trace_path), result)
    sliced = result.sliced_by_profiler
    with status("Analysing"):
        view = api.analyze(
            run,
            api.Slice(allow_empty=True) if sliced else slc,
            source_path=str(result.trace_path),
            with_timeline=True,
        )
    html = api.write_text_atomic(out / "report.html", api.render_html(view))
    api.write_text_atomic(out / "summary.json", api.render_json(view))
    say(
        f"tcreport: {result.backend.value}: wrote {html} and summary.json; raw profile "
        f"{result.trace_path}",
    )
    if result.script_exit_code != 0:
        say(
            f"tcreport: error: the script exited with code {result.script_exit_code}; "
            "the report is partial",
        )
        raise typer.Exit(result.script_exit_code)
