"""Profiling from Python: ``with tcreport.profile(steps=range(15, 35)) as run:`` and callbacks.

For a training loop in a script or a notebook, where ``tcreport profile train.py`` cannot wrap the
process: the same step window, hooks and model audit as the CLI's in-process backends
(:mod:`tcreport.capture.live`), and the same output folder (``report.html``, ``summary.json``, the
raw profile under ``plugins/profile/<run>/``), so the report is the one the CLI writes. Steps are
``optimizer.step()`` calls in PyTorch (``run.step()`` marks them in a loop without an optimizer),
Keras ``fit`` batches or ``tf.profiler.experimental.Trace(step_num=...)`` blocks in TensorFlow.
The Keras, PyTorch Lightning and Hugging Face callbacks do the same around ``fit`` / ``train``;
the last two exist only where their packages are installed.
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tcreport.errors import UsageError

if TYPE_CHECKING:
    from tcreport.capture import CaptureResult
    from tcreport.capture.live import TfLive, TorchLive
    from tcreport.notebook import AnalysedRun

__all__ = ["ProfileRun", "keras_callback", "lightning_callback", "profile", "trainer_callback"]


def _window(steps: Iterable[int]) -> tuple[int, int]:
    """``range(15, 35)`` -> steps 15..34; any run of consecutive non-negative step numbers. A
    range is read as a range (``range(0, 10**9)`` is two numbers, not a list)."""
    wrong = UsageError(
        f"steps must be consecutive step numbers from 0 on, such as range(15, 35); got {steps!r}"
    )
    if isinstance(steps, range):
        if len(steps) == 0 or steps.start < 0 or (len(steps) > 1 and steps.step != 1):
            raise wrong
        return steps[0], steps[-1]
    if isinstance(steps, str | bytes) or not isinstance(steps, Iterable):
        raise wrong
    numbers = list(steps)
    if not numbers or not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
        raise wrong
    if numbers[0] < 0 or numbers != list(range(numbers[0], numbers[-1] + 1)):
        raise wrong
    return numbers[0], numbers[-1]


def _out(output_dir: str | Path | None) -> Path:
    """Absolute, so a training loop that changes its working folder writes where it was asked."""
    if output_dir is not None:
        return Path(output_dir).absolute()
    return Path(time.strftime("tcreport-profile-%Y%m%dT%H%M%SZ", time.gmtime())).absolute()


@dataclass
class ProfileRun:
    """What the context manager and the callbacks give back; the paths are set once the window
    has been recorded and the report written."""

    output_dir: Path
    report: Path | None = None  # report.html
    summary: Path | None = None  # summary.json
    trace: Path | None = None  # the raw profile
    analysed: AnalysedRun | None = None  # DataFrames and the inline view, as tcreport.open()
    _recorder: TorchLive | TfLive | None = None

    def step(self) -> None:
        """Mark the end of a training step (a PyTorch loop that never calls optimizer.step())."""
        if self._recorder is None:
            raise UsageError("run.step() is for inside the `with tcreport.profile()` block")
        self._recorder.step()

    def _repr_html_(self) -> str | None:  # a notebook shows the verdict and findings inline
        return self.analysed._repr_html_() if self.analysed is not None else None

    def finish(self, result: CaptureResult) -> None:
        """Read, analyse and write the report beside the raw profile, as ``tcreport profile``."""
        from tcreport import api
        from tcreport.notebook import AnalysedRun

        self._recorder = None
        self.trace = result.trace_path
        run = api.load(result.trace_path)
        whole = api.Slice()  # the recorder kept only the asked steps: the trace is the slice
        view = api.analyze(run, whole, source_path=str(result.trace_path), with_timeline=True)
        self.report = api.write_text_atomic(self.output_dir / "report.html", api.render_html(view))
        self.summary = api.write_text_atomic(
            self.output_dir / "summary.json", api.render_json(view)
        )
        self.analysed = AnalysedRun(report=view, run=run, slice=whole)


@contextmanager
def profile(
    steps: Iterable[int] = range(1, 5),
    *,
    output_dir: str | Path | None = None,
    framework: str = "auto",
) -> Iterator[ProfileRun]:
    """Record ``steps`` (0-based step numbers; default 1-4) of the training loop in the block
    and write ``report.html`` and ``summary.json`` to ``output_dir`` when it ends
    (``docs/python-api.md``)."""
    from tcreport.capture import live
    from tcreport.capture.request import Framework

    start, stop = _window(steps)
    out = _out(output_dir)
    source = live.caller_source(3)  # this generator, contextlib's __enter__, the caller
    fw = live.framework_in_use(framework)
    recorder: TorchLive | TfLive = (
        live.TorchLive(start, stop, out, source)
        if fw is Framework.PYTORCH
        else live.TfLive(start, stop, out, source)
    )
    recorder.start()
    run = ProfileRun(output_dir=out, _recorder=recorder)
    failed, parent = True, os.getpid()
    try:
        yield run
        failed = False
    finally:
        if os.getpid() == parent:  # a child the block forked leaves the report to its parent
            result = recorder.stop(failed)
    if os.getpid() == parent:
        run.finish(result)


def keras_callback(
    steps: Iterable[int] = range(1, 5), *, output_dir: str | Path | None = None
) -> Any:
    """A ``keras.callbacks.Callback`` that records ``steps`` of the ``fit`` it is given to and
    writes the report when training ends; ``callback.run`` is the :class:`ProfileRun`."""
    from tcreport.capture import live, tf_hooks

    start, stop = _window(steps)
    out = _out(output_dir)
    source = live.caller_source(2)
    base: Any = importlib.import_module("tensorflow").keras.callbacks.Callback

    class TcreportCallback(base):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.run = ProfileRun(output_dir=out)
            self._rec: TfLive | None = None

        def on_train_begin(self, logs: Any = None) -> None:
            self._rec = live.TfLive(start, stop, out, source, model=self.model)
            self._rec.start()
            params = getattr(self, "params", None) or {}
            epochs, per_epoch = params.get("epochs"), params.get("steps")
            if isinstance(epochs, int) and isinstance(per_epoch, int):
                self._rec.steps.planned(tf_hooks.FIT, epochs * per_epoch)

        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            if self._rec is not None:
                self._rec.steps.begin(tf_hooks.FIT)

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            if self._rec is not None:
                self._rec.steps.end(tf_hooks.FIT)

        def on_train_end(self, logs: Any = None) -> None:
            if self._rec is not None:
                rec, self._rec = self._rec, None
                self.run.finish(rec.stop(False))

    return TcreportCallback()


def _torch_recorder(
    steps: Iterable[int], output_dir: str | Path | None, depth: int
) -> tuple[ProfileRun, Any]:
    from tcreport.capture import live

    start, stop = _window(steps)
    out = _out(output_dir)
    source = live.caller_source(depth)
    return ProfileRun(output_dir=out), lambda: live.TorchLive(start, stop, out, source)


def lightning_callback(
    steps: Iterable[int] = range(1, 5), *, output_dir: str | Path | None = None
) -> Any:
    """A PyTorch Lightning ``Callback`` (needs ``lightning`` or ``pytorch_lightning``): steps are
    the optimizer steps Lightning takes; ``callback.run`` is the :class:`ProfileRun`."""
    try:
        pl = importlib.import_module("lightning.pytorch")
    except ImportError:
        try:
            pl = importlib.import_module("pytorch_lightning")
        except ImportError as exc:
            raise UsageError("lightning_callback needs PyTorch Lightning installed") from exc
    run, make = _torch_recorder(steps, output_dir, 3)
    base: Any = pl.Callback

    class TcreportLightning(base):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.run = run
            self._rec: Any = None

        def on_train_start(self, trainer: Any, pl_module: Any) -> None:
            self._rec = make()
            self._rec.start()

        def on_train_end(self, trainer: Any, pl_module: Any) -> None:
            if self._rec is not None:
                rec, self._rec = self._rec, None
                self.run.finish(rec.stop(False))

    return TcreportLightning()


def trainer_callback(
    steps: Iterable[int] = range(1, 5), *, output_dir: str | Path | None = None
) -> Any:
    """A Hugging Face ``transformers.TrainerCallback`` (needs ``transformers``): steps are the
    optimizer steps the Trainer takes; ``callback.run`` is the :class:`ProfileRun`."""
    try:
        transformers = importlib.import_module("transformers")
    except ImportError as exc:
        raise UsageError("trainer_callback needs Hugging Face transformers installed") from exc
    run, make = _torch_recorder(steps, output_dir, 3)
    base: Any = transformers.TrainerCallback

    class TcreportTrainer(base):  # type: ignore[misc]
        def __init__(self) -> None:
            self.run = run
            self._rec: Any = None

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self._rec = make()
            self._rec.start()

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if self._rec is not None:
                rec, self._rec = self._rec, None
                self.run.finish(rec.stop(False))

    return TcreportTrainer()
