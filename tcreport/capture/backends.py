"""Choosing a profiler and running the script under it.

``auto`` prefers DLProf (its reports carry the most: op-level Tensor Core eligibility), then Nsight
Systems (any CUDA program, tcreport does the iteration slicing), then the TensorFlow profiler
(works without a GPU, so a laptop still gets op time and precision). An external profiler's
failure and the script's failure are told apart by whether the profiler left its output behind:
the profilers pass the script's exit code through, so the code alone cannot say who failed.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from tcreport.capture import commands, framework
from tcreport.capture.request import Backend, CaptureResult, Framework, ProfileRequest
from tcreport.errors import CaptureError, UsageError

INSTALL_HINTS = {
    Backend.DLPROF: "dlprof on PATH (NVIDIA's discontinued DLProf: NGC framework containers up to "
    "21.12, or 'pip install nvidia-pyindex nvidia-dlprof')",
    Backend.NSYS: "nsys on PATH (Nsight Systems, from the CUDA toolkit or "
    "developer.nvidia.com/nsight-systems)",
    Backend.TF: "TensorFlow and xprof in this Python (pip install 'tcreport[tf]')",
}


def tf_available() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("tensorflow", "xprof"))


def available(backend: Backend) -> bool:
    if backend is Backend.TF:
        return tf_available()
    return shutil.which(backend.value) is not None


def resolve(requested: Backend, fw: Framework) -> Backend:
    """The backend to use, or a :class:`CaptureError` naming what was looked for."""
    if requested is not Backend.AUTO:
        if requested is Backend.TF and fw is Framework.PYTORCH:
            raise UsageError(
                "the tf backend profiles TensorFlow scripts and this one imports PyTorch; "
                "use --backend nsys or dlprof"
            )
        if not available(requested):
            raise CaptureError(
                f"--backend {requested.value}: not available; needs {INSTALL_HINTS[requested]}"
            )
        return requested
    order = [Backend.DLPROF, Backend.NSYS]
    if fw is not Framework.PYTORCH:
        order.append(Backend.TF)
    for candidate in order:
        if available(candidate):
            return candidate
    looked = "; ".join(INSTALL_HINTS[b] for b in order)
    raise CaptureError(f"no profiler available: looked for {looked}")


class _Tee(threading.Thread):
    """Copies a child's stderr to ours while remembering its last non-empty line."""

    def __init__(self, stream: object) -> None:
        super().__init__(daemon=True)
        self._stream = stream
        self.last_line = ""

    def run(self) -> None:
        for raw in iter(self._stream.readline, b""):  # type: ignore[attr-defined]
            text = raw.decode("utf-8", "replace")
            sys.stderr.write(text)
            if text.strip():
                self.last_line = text.strip()


def run_command(argv: Sequence[str], extra_env: Mapping[str, str] | None = None) -> tuple[int, str]:
    """Run ``argv`` with stdout passed through; returns the exit code and last stderr line."""
    env = {**os.environ, **(extra_env or {})}
    try:
        proc = subprocess.Popen(list(argv), stderr=subprocess.PIPE, env=env)
    except OSError as exc:
        raise CaptureError(f"cannot run {argv[0]}: {exc.strerror or exc}") from exc
    with proc:  # closes the stderr pipe once the tee has drained it
        tee = _Tee(proc.stderr)
        tee.start()
        code = proc.wait()
        tee.join()
    sys.stderr.flush()
    return code, tee.last_line


def _failed(tool: str, code: int, last: str) -> CaptureError:
    tail = f": {last}" if last else " (no error output)"
    return CaptureError(f"{tool} failed with exit code {code}{tail}")


def _dlprof_wrote(out_dir: Path, name: str) -> bool:
    return any(out_dir.glob(f"{name}_*.csv")) or any(out_dir.glob("dlprof_*.csv"))


def run_dlprof(req: ProfileRequest, fw: Framework) -> CaptureResult:
    argv = commands.dlprof(req, fw)
    code, last = run_command(argv)
    if not _dlprof_wrote(req.out_dir, req.profile_name):
        raise _failed("dlprof", code, last)
    return CaptureResult(
        backend=Backend.DLPROF,
        framework=fw,
        trace_path=req.out_dir,
        script_exit_code=code,
        commands=(tuple(argv),),
        sliced_by_profiler=True,
    )


def _nsys_report(base: Path) -> Path | None:
    for suffix in (".nsys-rep", ".qdrep"):  # .qdrep before Nsight Systems 2021.4
        path = base.with_name(base.name + suffix)
        if path.is_file():
            return path
    return None


def nsys_lists(option: str) -> bool:
    """Whether ``nsys profile --help`` mentions ``option`` (options come and go between
    releases; an unknown one makes nsys refuse to run)."""
    try:
        done = subprocess.run(
            ["nsys", "profile", "--help"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return option in (done.stdout or "") + (done.stderr or "")


def run_nsys(req: ProfileRequest, fw: Framework) -> CaptureResult:
    base = commands.nsys_base(req)
    graph_nodes = nsys_lists(commands.NSYS_GRAPH_NODES.split("=")[0])
    profile = commands.nsys_profile(req, fw, graph_nodes)
    code, last = run_command(profile, commands.nsys_env(fw))
    report = _nsys_report(base)
    if report is None:
        raise _failed("nsys profile", code, last)
    sqlite = base.with_name(base.name + ".sqlite")
    export = commands.nsys_export(report, sqlite)
    ecode, elast = run_command(export)
    if ecode != 0 or not sqlite.is_file():
        raise _failed("nsys export", ecode, elast)
    return CaptureResult(
        backend=Backend.NSYS,
        framework=fw,
        trace_path=sqlite,
        script_exit_code=code,
        commands=(tuple(profile), tuple(export)),
    )


def run(req: ProfileRequest) -> CaptureResult:
    if not req.script.is_file():
        raise UsageError("no such script", req.script)
    fw = framework.detect(req.script)
    backend = resolve(req.backend, fw)
    try:
        req.out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CaptureError(
            f"cannot create the output folder: {exc.strerror or exc}", req.out_dir
        ) from exc
    if backend is Backend.DLPROF:
        return run_dlprof(req, fw)
    if backend is Backend.NSYS:
        return run_nsys(req, fw)
    from tcreport.capture import tf_runner

    return tf_runner.run(req, fw)
