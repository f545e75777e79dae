"""The ``tf`` backend: run the script in this interpreter under the TensorFlow profiler.

In-process (``runpy``) rather than a child process because the profiler has to be switched on and
off at step boundaries only the running script knows; hooks on Keras ``fit``, on
``tf.profiler.experimental.Trace`` and on ``tf.function`` report those boundaries to a
:class:`~tcreport.capture.tf_window.StepWindow`. The profile goes where TensorBoard expects it
(``<out>/plugins/profile/<run>/<host>.xplane.pb``) with a small ``tcreport-capture.json`` beside it
recording what the profiler cannot: which steps were kept and the Keras dtype policies (a CPU
profile records no dtypes).
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import runpy
import sys
import traceback
from pathlib import Path
from typing import Any

from tcreport.capture import quiet, tf_hooks
from tcreport.capture.request import Backend, CaptureResult, Framework, ProfileRequest
from tcreport.capture.tf_window import StepWindow, window
from tcreport.errors import CaptureError, ScriptFailedError, UsageError

SIDECAR = "tcreport-capture.json"
_INSTALL = "pip install 'tcreport[tf]'"


def _import_tf(verbose: bool) -> Any:
    try:  # import_module: TensorFlow ships no type stubs, and mypy must not need it installed
        with quiet.tensorflow_import(verbose):
            tf = importlib.import_module("tensorflow")
    except ImportError as exc:
        raise CaptureError(
            f"the tf backend needs TensorFlow and xprof: {_INSTALL} ({exc})"
        ) from exc
    quiet.tensorflow_python_logs(tf, verbose)
    return tf


def _run_script(script: Path, args: tuple[str, ...]) -> tuple[int, str]:
    """Execute ``script`` as ``__main__`` with its own argv; returns its exit code and the last
    lines of its error (the exception line of its traceback), "" when it did not fail."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.resolve().parent))
    try:
        runpy.run_path(str(script), run_name="__main__")
        return 0, ""
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0, ""
        if isinstance(code, int):
            return code, ""
        print(code, file=sys.stderr)
        return 1, str(code)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the user's script failed: show its traceback as Python would
        traceback.print_exc()
        return 1, _last_lines(exc)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


def _last_lines(exc: BaseException) -> str:
    """Where the script raised and what, on one line: its innermost frame and the exception line
    (the full traceback has just been printed above it)."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}: " if frames else ""
    what = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return " ".join(f"{where}{what}".split())[:400]


def _layers(tf: Any) -> list[dict[str, str]]:
    """Every Keras layer still alive after the run, with its dtype policy."""
    keras = tf.keras
    seen: dict[int, dict[str, str]] = {}
    models = [o for o in gc.get_objects() if isinstance(o, keras.Model)]
    for model in models:
        for layer in [model, *getattr(model, "layers", [])]:
            compute = getattr(layer, "compute_dtype", None)
            if id(layer) in seen or compute is None:
                continue
            seen[id(layer)] = {
                "name": str(layer.name),
                "class": type(layer).__name__,
                "compute_dtype": str(compute),
                "variable_dtype": str(getattr(layer, "variable_dtype", "") or ""),
            }
    return sorted(seen.values(), key=lambda d: (d["name"], d["class"]))


def _policy(tf: Any) -> str | None:
    try:
        return str(tf.keras.mixed_precision.global_policy().name)
    except (AttributeError, ValueError):
        return None


def _profiles(out_dir: Path) -> list[Path]:
    return sorted((out_dir / "plugins" / "profile").glob("*/*.xplane.pb"))


def _check_steps(req: ProfileRequest, steps: StepWindow, start: int, code: int, error: str) -> None:
    """Refuse a capture with nothing in it, naming the cause: the script's own failure first
    (exit with its code), then no step seen, then a window past the last step."""
    if code != 0 and steps.profiled == 0:
        # The script crashed before anything was captured: its failure is the news, not a
        # missing key node. Exit as the script did, with its error.
        when = (
            "before its first step"
            if steps.steps_seen == 0
            else (
                f"after {steps.steps_seen} steps, before step {start} where profiling was to start"
            )
        )
        raise ScriptFailedError(
            f"{req.script.name} failed {when} (exit code {code})"
            + (f": {error}" if error else "")
            + "; nothing was captured",
            code,
        )
    if steps.owner is None:
        hint = (
            f"no call of a tf.function named {req.key_node!r}, "
            if req.key_node
            else "pass --key-node with the name of the tf.function that runs one step, "
        )
        raise CaptureError(
            "no training steps seen: the script called no Keras Model.fit and marked no "
            f"tf.profiler.experimental.Trace(step_num=...) steps ({hint.rstrip(', ')})"
        )
    if steps.profiled == 0:
        raise UsageError(
            f"--iter-start {start} is past the last step; the script ran {steps.steps_seen} "
            f"(0 to {steps.steps_seen - 1})"
        )


def run(req: ProfileRequest, fw: Framework) -> CaptureResult:
    tf = _import_tf(req.verbose)
    start, stop = window(req.iter_start, req.iter_stop)
    before = set(_profiles(req.out_dir))
    options = tf.profiler.experimental.ProfilerOptions(
        host_tracer_level=3, python_tracer_level=0, device_tracer_level=1
    )

    failures: list[CaptureError] = []

    def on_start() -> None:
        try:
            tf.profiler.experimental.start(str(req.out_dir), options=options)
        except tf.errors.OpError as exc:
            failures.append(
                CaptureError(
                    "cannot start the TensorFlow profiler (does the script run it itself?): "
                    f"{exc.message}"
                )
            )
            raise failures[-1] from exc

    def on_stop() -> None:
        tf.profiler.experimental.stop()

    steps = StepWindow(start=start, stop=stop, on_start=on_start, on_stop=on_stop)
    with tf_hooks.installed(tf, steps, req.key_node):
        try:
            code, error = _run_script(req.script, req.script_args)
        finally:
            steps.finish()
    if failures:
        raise failures[0]
    notes: list[str] = []
    _check_steps(req, steps, start, code, error)
    new = [p for p in _profiles(req.out_dir) if p not in before]
    if not new:
        raise CaptureError("the TensorFlow profiler wrote no .xplane.pb", req.out_dir)
    run_dir = new[-1].parent
    last = start + steps.profiled - 1
    if last < stop:
        notes.append(
            f"The script ran {steps.steps_seen} steps, so the window ends at step {last} instead "
            f"of {stop}."
        )
    sidecar = {
        "format": 1,
        "script": req.script.name,
        "step_source": steps.owner,
        "steps_seen": steps.steps_seen,
        "window": [start, last],
        "step_ns": steps.step_ns,
        "key_node": req.key_node,
        "global_policy": _policy(tf),
        "layers": _layers(tf),
        "tensorflow": str(tf.__version__),
        "script_exit_code": code,
        "notes": notes,
    }
    tmp = run_dir / f".{SIDECAR}.tmp"
    tmp.write_text(json.dumps(sidecar, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, run_dir / SIDECAR)
    return CaptureResult(
        backend=Backend.TF,
        framework=fw,
        trace_path=run_dir,
        script_exit_code=code,
        notes=tuple(notes),
        sliced_by_profiler=True,
    )
