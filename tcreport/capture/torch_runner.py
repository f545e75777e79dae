"""The ``torch`` backend: run the script in this interpreter under ``torch.profiler``.

CPU activity always, CUDA when the machine has it; ``record_shapes`` (dtypes and GEMM sizes for
the Tensor Core rules) and the module hierarchy (``with_modules`` with the stack, so each op
carries its layer). The schedule records only the steps of the window (``--iter-start`` /
``--iter-stop``, default 1-4): a long run costs no more than its window. The trace is an ordinary
Kineto JSON in ``<out>/plugins/profile/<run>/``, where TensorBoard's PyTorch plugin also finds it,
with the capture sidecar (steps, notes, the model audit) beside it.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tcreport.capture import layout, progress, quiet, script, torch_audit, torch_hooks
from tcreport.capture.request import Backend, CaptureResult, Framework, ProfileRequest
from tcreport.capture.tf_window import window
from tcreport.capture.torch_window import TorchWindow, schedule
from tcreport.errors import CaptureError, ScriptFailedError, UsageError

#: The README's advice: the user's own PyTorch build (plain ``pip install torch`` on Linux takes a
#: CUDA build of several GB; the CPU wheel is on PyTorch's own index).
_INSTALL = (
    "install your PyTorch build first (https://pytorch.org/get-started/locally/; on a machine "
    "without a GPU: pip install torch --index-url https://download.pytorch.org/whl/cpu)"
)


def import_torch() -> Any:
    try:  # import_module: mypy must not need torch installed
        torch = importlib.import_module("torch")
        importlib.import_module("torch.profiler")
    except ImportError as exc:
        raise CaptureError(f"the torch backend needs PyTorch: {_INSTALL} ({exc})") from exc
    return torch


def profiler(torch: Any, window: Callable[[], tuple[int, int]], trace: Path) -> Any:
    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)

    def ready(prof: Any) -> None:
        tmp = trace.with_name(f".{trace.name}.tmp")
        prof.export_chrome_trace(str(tmp))
        os.replace(tmp, trace)

    return torch.profiler.profile(
        activities=activities,
        schedule=schedule(torch, window),
        on_trace_ready=ready,
        record_shapes=True,
        with_modules=True,
        with_stack=True,
    )


def _candidates(
    seen: torch_hooks.Seen, audit: torch_audit.TorchAudit, functions: list[str]
) -> tuple[str, ...]:
    """What could have been meant: ranges that ran (most frequent first), the script's
    functions, the module classes built."""
    ranges = sorted(seen.ranges, key=lambda n: (-seen.ranges[n], n))[:8]
    classes = sorted({type(m).__name__ for m in list(audit.modules.keys())})[:8]
    out = [*ranges, *functions[:8], *classes]
    return tuple(dict.fromkeys(out))


def _check(req: ProfileRequest, win: TorchWindow, code: int, error: str, where: str) -> None:
    """Refuse a capture with nothing in it, naming the cause: the script's own failure first,
    then no step seen, then a window past the last step."""
    if code != 0 and win.recorded == 0 and win.steps_seen <= win.start:
        when = (
            "before its first step"
            if win.steps_seen == 0
            else (
                f"after {win.steps_seen} steps, before step {win.start} where recording was to start"
            )
        )
        raise ScriptFailedError(
            f"{req.script.name} failed {when} (exit code {code})"
            + (f": {error}" if error else "")
            + "; nothing was recorded",
            code,
        )
    if win.steps_seen == 0:
        raise UsageError(
            f"no training steps seen: {req.script.name} called no optimizer.step()"
            + (f" and {where}" if req.key_node else "")
            + "; pass --key-node NAME (a function the script defines, an nn.Module class, or a "
            "torch.profiler.record_function range that runs once per step)"
        )
    if win.steps_seen <= win.start:
        raise UsageError(
            f"--iter-start {win.start} is past the last step: {req.script.name} ran "
            f"{win.steps_seen} steps (0 to {win.steps_seen - 1}) counted by {win.source}; "
            "recording starts only at --iter-start, so nothing was recorded"
        )


def run(req: ProfileRequest, fw: Framework) -> CaptureResult:
    torch = import_torch()
    tree = script.parse(req.script)
    functions = script.defined_functions(tree)
    classes = [c.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef)]
    start, stop = window(req.iter_start, req.iter_stop)
    run_dir = layout.new_run_dir(req.out_dir)
    trace = run_dir / f"{req.profile_name}.pt.trace.json"
    audit = torch_audit.TorchAudit(torch, req.script, tree)
    counter = progress.counter(start, stop, req.progress)
    kind = torch_hooks.key_kind(torch, req.key_node, functions, classes) if req.key_node else None

    def advance() -> None:
        try:
            with quiet.kineto(req.verbose):
                prof.step()
        except Exception as exc:  # tcreport's profiler, not the script: not its traceback
            raise CaptureError(f"torch.profiler failed at step {win.steps_seen}: {exc}") from exc

    win = TorchWindow(
        start=start,
        stop=stop,
        key_node=req.key_node,
        key_source=kind,
        advance=advance,
        on_step=counter if counter is not None else (lambda step, recording: None),
        on_window=audit.collect_layers,
        on_move=counter.moved if counter is not None else (lambda start, stop: None),
    )
    prof = profiler(torch, lambda: (win.start, win.stop), trace)  # asks for the window at once
    seen = torch_hooks.Seen()

    def finish() -> None:
        if counter is not None:
            counter.close()
        with quiet.kineto(req.verbose):
            prof.stop()

    def os_exit(code: int) -> None:
        finish()
        result = None
        if trace.is_file():
            result = _result(req, fw, torch, run_dir, trace, win, audit, code, seen, functions)
            note = (
                f"The script ended the process with os._exit({code}) after {win.steps_seen} "
                "steps; this report covers what was recorded before."
            )
            result = dataclasses.replace(result, notes=(*result.notes, note))
        _hard_exit(req, win, trace, code, result)

    with audit.installed(), torch_hooks.installed(torch, win, seen) as decorators:
        with quiet.kineto(req.verbose):
            prof.start()
        win.began()
        try:
            with torch_hooks.one_profiler(torch, req.script.name):
                code, error = script.run(req.script, req.script_args, decorators, os_exit)
        finally:
            finish()
    sys.stderr.flush()
    where = f"no {kind} named {req.key_node!r} ran" if req.key_node else ""
    _check(req, win, code, error, where)
    if not trace.is_file():
        raise CaptureError("torch.profiler wrote no trace", run_dir)
    return _result(req, fw, torch, run_dir, trace, win, audit, code, seen, functions)


def _hard_exit(
    req: ProfileRequest, win: TorchWindow, trace: Path, code: int, result: CaptureResult | None
) -> None:
    """The script called ``os._exit``: the process ends now. Report what was recorded (through
    the caller's ``on_hard_exit``) or at least name it; the exit status is not 0 when no report
    was written."""
    sys.stdout.flush()
    said = f"tcreport: {req.script.name} called os._exit({code}) after {win.steps_seen} steps"
    status = script.status(code)
    if result is not None and req.on_hard_exit is not None:
        sys.stderr.write(f"{said}; reporting what was recorded\n")
        try:
            req.on_hard_exit(result)
        except BaseException as exc:  # the process ends either way: say why, name the trace
            sys.stderr.write(f"tcreport: error: no report: {exc}; raw profile {trace}\n")
            status = status or CaptureError.exit_code
    elif result is not None:
        sys.stderr.write(
            f"{said.replace('tcreport: ', 'tcreport: error: ')}, which ends the process at once, "
            f"so no report was written; the raw profile of the steps recorded is {trace} "
            f"(`tcreport report {trace.parent}` reports it)\n"
        )
        status = status or CaptureError.exit_code
    else:
        layout.prune(trace.parent, req.out_dir, made_out=False)
        sys.stderr.write(
            f"{said.replace('tcreport: ', 'tcreport: error: ')}, which ends the process at once; "
            "nothing was recorded\n"
        )
        status = status or CaptureError.exit_code
    sys.stderr.flush()
    os._exit(status)


def _result(
    req: ProfileRequest,
    fw: Framework,
    torch: Any,
    run_dir: Path,
    trace: Path,
    win: TorchWindow,
    audit: torch_audit.TorchAudit,
    code: int,
    seen: torch_hooks.Seen,
    functions: list[str],
) -> CaptureResult:
    last = win.start + max(win.recorded, 1) - 1
    notes = [
        f"torch.profiler recorded steps {win.start}–{last} of the {win.steps_seen} the script "
        f"ran, counting {win.source}."
    ]
    if last < win.stop:
        notes.append(
            f"The script ran {win.steps_seen} steps, so the window ends at step {last} instead "
            f"of {win.stop}."
        )
    missing = req.key_node if req.key_node and win.fell_back else None
    candidates = _candidates(seen, audit, functions) if missing else ()
    facts = {
        "format": 1,
        "backend": Backend.TORCH.value,
        "trace": trace.name,
        "script": req.script.name,
        "step_source": win.source,
        "steps_seen": win.steps_seen,
        "window": [win.start, last],
        "step_ns": win.step_ns,
        "key_node": None if missing else req.key_node,
        "torch": str(torch.__version__),
        "script_exit_code": code,
        "notes": notes,
        "audit": dataclasses.asdict(audit.snapshot()),
    }
    layout.write_sidecar(run_dir, facts)
    return CaptureResult(
        backend=Backend.TORCH,
        framework=fw,
        trace_path=trace,
        script_exit_code=code,
        notes=tuple(notes),
        sliced_by_profiler=True,
        key_node_missing=missing,
        key_node_candidates=candidates,
    )
