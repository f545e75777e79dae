"""``tcreport profile``: run a training script under a profiler and report on what it recorded.

Everything after the script (or after ``--``) is the script's own argument list and is passed
through untouched. The raw profile stays in the output folder beside ``report.html`` and
``summary.json`` so it can be opened in the profiler's own viewer or re-read with ``report``.
The script's exit code becomes tcreport's, so ``tcreport profile`` can stand in for ``python`` in
a CI job.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from tcreport import api
from tcreport.cli._common import IterStart, IterStop, slice_of, user_errors
from tcreport.cli.app import app
from tcreport.errors import UsageError


class BackendName(StrEnum):
    AUTO = "auto"
    DLPROF = "dlprof"
    NSYS = "nsys"
    TF = "tf"
    TORCH = "torch"


def default_output_dir(script: Path) -> Path:
    from datetime import UTC, datetime

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return Path(f"tcreport-{script.stem}-{stamp}")


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
        metavar="[auto|torch|tf|dlprof|nsys]",
        help="Profiler: auto (on a GPU machine dlprof or nsys when on PATH; otherwise torch for a "
        "script that imports torch, tf for one that imports tensorflow/keras; it says which and "
        "why), torch (torch.profiler, in process), tf (the TensorFlow profiler, in process), "
        "dlprof or nsys.",
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
ProfileKeyNode = Annotated[
    str | None,
    typer.Option(
        "--key-node",
        metavar="NAME",
        help="What marks one training step, per backend. torch: a torch.profiler."
        "record_function (or NVTX) range name, an nn.Module class or a function the script "
        "defines (default: optimizer.step()). tf: the Python name of the tf.function that runs "
        "one step (default: Keras Model.fit's steps, or tf.profiler.experimental.Trace"
        "(step_num=...) blocks). dlprof: an op name, passed as DLProf's --key_node. nsys: an "
        "NVTX range or op name in the export, applied when the report is made. A name that "
        "never runs is exit 2, listing the names that did.",
    ),
]
Verbose = Annotated[
    bool,
    typer.Option(
        "--verbose",
        help="Show the frameworks' own logging, TensorFlow's and PyTorch profiler's (hidden by "
        "default; errors always show).",
    ),
]


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def profile(
    script: Script,
    script_args: ScriptArgs = None,
    key_node: ProfileKeyNode = None,
    iter_start: IterStart = None,
    iter_stop: IterStop = None,
    backend: BackendOpt = BackendName.AUTO,
    output_dir: OutputDir = None,
    delay: Delay = None,
    duration: Duration = None,
    verbose: Verbose = False,
) -> None:
    """Run a training script under a profiler; write the raw profile, report.html and
    summary.json into --output-dir (default: a new ./tcreport-<script>-<UTC time>/ folder in the
    current directory)."""
    import logging

    from tcreport.capture import quiet

    # `tcreport -v profile ...` asks for more logging as well as `profile --verbose`
    verbose = verbose or logging.getLogger().getEffectiveLevel() <= logging.INFO
    with user_errors(), quiet.framework_logs(verbose):
        from tcreport.capture import Backend, ProfileRequest

        # checked before the script runs (iter_stop before iter_start, a negative one)
        if key_node is not None and not key_node.strip():
            raise UsageError(
                f"--key-node {key_node!r}: empty; name a function, an nn.Module class or a "
                "record_function range (or leave --key-node out to count optimizer.step() calls)"
            )
        slc = slice_of(key_node, iter_start, iter_stop)
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
            progress=sys.stderr.isatty(),
        )
        from tcreport.cli import profile_flow

        profile_flow.capture_and_report(request, slc)
