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

import ast
import dataclasses
import gc
import importlib
from pathlib import Path
from typing import Any

from tcreport.capture import layout, progress, quiet, script, tf_hooks
from tcreport.capture.keras_audit import KerasAudit
from tcreport.capture.request import Backend, CaptureResult, Framework, ProfileRequest
from tcreport.capture.tf_window import StepWindow, window
from tcreport.errors import CaptureError, ScriptFailedError, UsageError

SIDECAR = layout.SIDECAR
_INSTALL = "pip install 'tcreport[tf]'"


def import_tf(verbose: bool) -> Any:
    try:  # import_module: TensorFlow ships no type stubs, and mypy must not need it installed
        with quiet.tensorflow_import(verbose):
            tf = importlib.import_module("tensorflow")
    except ImportError as exc:
        raise CaptureError(
            f"the tf backend needs TensorFlow and xprof: {_INSTALL} ({exc})"
        ) from exc
    quiet.tensorflow_python_logs(tf, verbose)
    return tf


def keras_layers(tf: Any) -> list[dict[str, str]]:
    """Every Keras layer still alive after the run, with its dtype policy."""
    keras = tf.keras
    seen: dict[int, dict[str, str]] = {}
    # type(), not isinstance(): some objects (torch.distributed.reduce_op) warn on __class__
    models = [o for o in gc.get_objects() if issubclass(type(o), keras.Model)]
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


def policy(tf: Any) -> str | None:
    try:
        return str(tf.keras.mixed_precision.global_policy().name)
    except (AttributeError, ValueError):
        return None


def profiles(out_dir: Path) -> list[Path]:
    return sorted((out_dir / "plugins" / "profile").glob("*/*.xplane.pb"))


def _single_fit(tree: ast.Module) -> bool:
    """The script calls ``.fit(`` once, outside any loop: the steps that fit announces are all
    the steps the run will take."""
    fits = 0
    looped = False
    for node in ast.walk(tree):
        if isinstance(node, ast.For | ast.While | ast.AsyncFor):
            inner = ast.walk(node)
            looped = looped or any(
                isinstance(n, ast.Call) and getattr(n.func, "attr", None) == "fit" for n in inner
            )
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "fit":
            fits += 1
    return fits == 1 and not looped


def _check_steps(
    req: ProfileRequest, steps: StepWindow, code: int, error: str, functions: list[str]
) -> None:
    """Refuse a capture with nothing in it, naming the cause: the script's own failure first
    (exit with its code), then no step seen, then a window past the last step."""
    start = steps.start
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
        if req.key_node:
            seen = ", ".join(functions[:10]) or "none"
            raise UsageError(
                f"--key-node {req.key_node!r}: no call of a tf.function of that name, and the "
                "script called no Keras Model.fit and marked no "
                f"tf.profiler.experimental.Trace(step_num=...) steps; tf.functions it created: "
                f"{seen}"
            )
        seen = ", ".join(functions[:10]) or "none"
        raise UsageError(
            "no training steps seen: the script called no Keras Model.fit and marked no "
            "tf.profiler.experimental.Trace(step_num=...) steps; pass --key-node with the name "
            f"of the tf.function that runs one step (tf.functions it created: {seen})"
        )
    if steps.profiled == 0:
        raise UsageError(
            f"--iter-start {start} is past the last step; the script ran {steps.steps_seen} "
            f"(0 to {steps.steps_seen - 1})"
        )


def run(req: ProfileRequest, fw: Framework) -> CaptureResult:
    tf = import_tf(req.verbose)
    tree = script.parse(req.script)
    start, stop = window(req.iter_start, req.iter_stop)
    before = set(profiles(req.out_dir))
    options = tf.profiler.experimental.ProfilerOptions(
        host_tracer_level=3, python_tracer_level=0, device_tracer_level=1
    )
    audit = KerasAudit(tf, req.script, tree)
    failures: list[CaptureError] = []

    def on_start() -> None:
        audit.collect_layers()
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
        audit.collect_layers()

    counter = progress.counter(start, stop, req.progress)
    steps = StepWindow(
        start=start, stop=stop, on_start=on_start, on_stop=on_stop, single_fit=_single_fit(tree)
    )
    if counter is not None:

        def shown(step: int, recording: bool) -> None:
            counter.total = steps.total
            counter(step, recording)

        steps.on_step = shown
    with audit.installed(), tf_hooks.installed(tf, steps, req.key_node):
        try:
            code, error = script.run(req.script, req.script_args)
        finally:
            steps.finish()
            if counter is not None:
                counter.close()
    if failures:
        raise failures[0]
    _check_steps(req, steps, code, error, audit.functions)
    new = [p for p in profiles(req.out_dir) if p not in before]
    if not new:
        raise CaptureError("the TensorFlow profiler wrote no .xplane.pb", req.out_dir)
    return _result(req, fw, tf, new[-1].parent, steps, audit, code)


def _result(
    req: ProfileRequest,
    fw: Framework,
    tf: Any,
    run_dir: Path,
    steps: StepWindow,
    audit: KerasAudit,
    code: int,
) -> CaptureResult:
    start, stop = steps.start, steps.stop
    last = start + steps.profiled - 1
    notes: list[str] = []
    if last < stop:
        notes.append(
            f"The script ran {steps.steps_seen} steps, so the window ends at step {last} instead "
            f"of {stop}."
        )
    key_source = f"calls of tf.function {req.key_node!r}"
    missing = req.key_node if req.key_node and steps.owner != key_source else None
    layout.write_sidecar(
        run_dir,
        {
            "format": 1,
            "backend": Backend.TF.value,
            "script": req.script.name,
            "step_source": steps.owner,
            "steps_seen": steps.steps_seen,
            "window": [start, last],
            "step_ns": steps.step_ns,
            "key_node": None if missing else req.key_node,
            "global_policy": policy(tf),
            "layers": keras_layers(tf),
            "tensorflow": str(tf.__version__),
            "script_exit_code": code,
            "notes": notes,
            "audit": dataclasses.asdict(audit.snapshot()),
        },
    )
    return CaptureResult(
        backend=Backend.TF,
        framework=fw,
        trace_path=run_dir,
        script_exit_code=code,
        notes=tuple(notes),
        sliced_by_profiler=True,
        key_node_missing=missing,
        key_node_candidates=tuple(audit.functions[:10]) if missing else (),
    )
