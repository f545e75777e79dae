"""Profiling from inside a running Python program: the recording half of ``tcreport.profile()``
and of the Keras callback.

The CLI runs a whole script; here the user's own code is already running (a training loop in a
script or a notebook cell), so the model usually exists before recording starts. The same step
windows, hooks and audit as the ``torch`` and ``tf`` backends are used; the layers are found among
the live objects when the window ends (their defining lines are then unknown unless they were
built inside the block), and settings' lines come from the calling file's source when there is
one. :meth:`Live.stop` writes the same run folder and sidecar as ``tcreport profile``, so the
report built from it is the same.
"""

from __future__ import annotations

import ast
import dataclasses
import gc
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from tcreport.capture import layout, quiet, tf_hooks, torch_audit, torch_hooks
from tcreport.capture.keras_audit import KerasAudit
from tcreport.capture.request import Backend, CaptureResult, Framework
from tcreport.capture.tf_window import StepWindow
from tcreport.capture.torch_window import TorchWindow
from tcreport.errors import UsageError

MANUAL = "run.step() calls"


def caller_source(depth: int) -> tuple[Path, ast.Module]:
    """The file of the code that called us, and its parsed source (empty in a notebook cell)."""
    filename = sys._getframe(depth).f_code.co_filename
    path = Path(filename)
    try:
        return path, ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return path, ast.Module(body=[], type_ignores=[])


def framework_in_use(asked: str) -> Framework:
    """``auto``: the framework this process has imported (PyTorch first, as the CLI does)."""
    if asked in ("torch", "pytorch"):
        return Framework.PYTORCH
    if asked in ("tf", "tensorflow", "keras"):
        return Framework.TENSORFLOW
    if asked != "auto":
        raise UsageError(f"framework {asked!r}: use 'auto', 'torch' or 'tf'")
    if "torch" in sys.modules:
        return Framework.PYTORCH
    if "tensorflow" in sys.modules or "keras" in sys.modules:
        return Framework.TENSORFLOW
    raise UsageError("tcreport.profile: import torch or tensorflow before profiling")


class TorchLive:
    def __init__(self, start: int, stop: int, out_dir: Path, source: tuple[Path, ast.Module]):
        self.start_step, self.stop_step, self.out_dir = start, stop, out_dir
        self.source = source
        self.stack = ExitStack()

    def start(self) -> None:
        from tcreport.capture.torch_runner import import_torch, profiler

        torch = self.torch = import_torch()
        self.run_dir = layout.new_run_dir(self.out_dir)
        self.trace = self.run_dir / "live.pt.trace.json"
        self.audit = torch_audit.TorchAudit(torch, *self.source)

        def advance() -> None:
            with quiet.kineto(False):
                self.prof.step()

        self.win = TorchWindow(
            self.start_step, self.stop_step, None, None, advance, on_window=self._layers
        )
        self.prof = profiler(torch, lambda: (self.win.start, self.win.stop), self.trace)
        self.stack.enter_context(self.audit.installed())
        self.stack.enter_context(torch_hooks.installed(torch, self.win, torch_hooks.Seen()))
        with quiet.kineto(False):
            self.prof.start()
        self.stack.enter_context(torch_hooks.one_profiler(torch, "the profiled block"))
        self.win.began()

    def _layers(self) -> None:
        nn = self.torch.nn
        for obj in gc.get_objects():
            if issubclass(type(obj), nn.Module) and obj not in self.audit.modules:
                self.audit.modules[obj] = None
        self.audit.collect_layers()

    def step(self) -> None:
        if self.win.key_node is None and self.win.optimizer_steps == 0:
            self.win.key_node, self.win.key_source = MANUAL, "calls"
        if self.win.key_node == MANUAL:
            self.win.key_ended()

    def stop(self, failed: bool) -> CaptureResult:
        try:
            with quiet.kineto(False):
                self.prof.stop()
        finally:
            self.stack.close()
        win = self.win
        if not failed and win.steps_seen <= win.start:
            raise UsageError(
                f"the window starts at step {win.start} but the block ran {win.steps_seen} steps "
                "(optimizer.step() calls, or run.step() where there is no optimizer)"
            )
        self._layers()
        last = win.start + max(win.recorded, 1) - 1
        layout.write_sidecar(
            self.run_dir,
            {
                "format": 1,
                "backend": Backend.TORCH.value,
                "trace": self.trace.name,
                "step_source": win.source,
                "steps_seen": win.steps_seen,
                "window": [win.start, last],
                "step_ns": win.step_ns,
                "torch": str(self.torch.__version__),
                "notes": [
                    f"tcreport.profile() recorded steps {win.start}–{last}, counting {win.source}."
                ],
                "audit": dataclasses.asdict(self.audit.snapshot()),
            },
        )
        return CaptureResult(
            Backend.TORCH, Framework.PYTORCH, self.trace, 0, sliced_by_profiler=True
        )


class TfLive:
    """The TensorFlow profiler around ``[start, stop]`` of Keras ``fit`` batches or
    ``Trace(step_num=...)`` blocks; given the ``model`` of a ``fit`` (the Keras callback), the
    caller reports the steps itself, no hook is installed on ``fit``, and only that model is
    audited."""

    def __init__(
        self,
        start: int,
        stop: int,
        out_dir: Path,
        source: tuple[Path, ast.Module],
        model: Any = None,
    ) -> None:
        self.start_step, self.stop_step, self.out_dir = start, stop, out_dir
        self.source, self.model = source, model
        self.stack = ExitStack()

    def start(self) -> None:
        from tcreport.capture import tf_runner

        tf = self.tf = tf_runner.import_tf(False)
        self.before = set(tf_runner.profiles(self.out_dir))
        self.audit = KerasAudit(tf, *self.source)
        options = tf.profiler.experimental.ProfilerOptions(
            host_tracer_level=3, python_tracer_level=0, device_tracer_level=1
        )

        def on_start() -> None:
            self._layers()
            tf.profiler.experimental.start(str(self.out_dir), options=options)

        def on_stop() -> None:
            tf.profiler.experimental.stop()
            self._layers()

        self.steps = StepWindow(self.start_step, self.stop_step, on_start, on_stop)
        self.audit.adopt_live(self.model)
        self.stack.enter_context(self.audit.installed())
        if self.model is None:
            self.stack.enter_context(tf_hooks.installed(tf, self.steps, None))

    def _layers(self) -> None:
        self.audit.collect_layers()

    def step(self) -> None:
        raise UsageError(
            "with TensorFlow the steps are Keras fit batches or "
            "tf.profiler.experimental.Trace('train', step_num=...) blocks; run.step() is for "
            "PyTorch loops without an optimizer"
        )

    def stop(self, failed: bool) -> CaptureResult:
        from tcreport.capture import tf_runner

        try:
            self.steps.finish()
        finally:
            self.stack.close()
        steps = self.steps
        if not failed and steps.profiled == 0:
            raise UsageError(
                f"the window starts at step {steps.start} but {steps.steps_seen} steps ran "
                "(Keras fit batches or tf.profiler.experimental.Trace(step_num=...) blocks)"
            )
        new = [p for p in tf_runner.profiles(self.out_dir) if p not in self.before]
        if not new:
            raise UsageError("the TensorFlow profiler recorded nothing", self.out_dir)
        run_dir = new[-1].parent
        last = steps.start + steps.profiled - 1
        layout.write_sidecar(
            run_dir,
            {
                "format": 1,
                "backend": Backend.TF.value,
                "step_source": steps.owner,
                "steps_seen": steps.steps_seen,
                "window": [steps.start, last],
                "step_ns": steps.step_ns,
                "global_policy": tf_runner.policy(self.tf),
                "layers": tf_runner.keras_layers(self.tf),
                "tensorflow": str(self.tf.__version__),
                "notes": [],
                "audit": dataclasses.asdict(self.audit.snapshot()),
            },
        )
        return CaptureResult(Backend.TF, Framework.TENSORFLOW, run_dir, 0, sliced_by_profiler=True)
