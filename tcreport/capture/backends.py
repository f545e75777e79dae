"""Choosing a profiler and running the script under it.

``auto`` on a machine with a GPU prefers DLProf (its reports carry the most: op-level Tensor Core
eligibility), then Nsight Systems (any CUDA program, tcreport does the iteration slicing); without
them, or without a GPU, it runs the script in process under its own framework's profiler, PyTorch's
for a script that imports torch and TensorFlow's for one that imports tensorflow or keras (both work
on a CPU, and both add the model audit), and says which and why. An external profiler's
failure and the script's failure are told apart by whether the profiler left its output behind:
the profilers pass the script's exit code through, so the code alone cannot say who failed.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from tcreport.capture import commands, framework, layout
from tcreport.capture.request import Backend, CaptureResult, Framework, ProfileRequest
from tcreport.errors import CaptureError, OutputError, TcreportError, UsageError

INSTALL_HINTS = {
    Backend.DLPROF: "dlprof on PATH (NVIDIA's discontinued DLProf: NGC framework containers up to "
    "21.12, or 'pip install nvidia-pyindex nvidia-dlprof')",
    Backend.NSYS: "nsys on PATH (Nsight Systems, from the CUDA toolkit or "
    "developer.nvidia.com/nsight-systems)",
    Backend.TF: "TensorFlow and xprof in this Python (pip install 'tcreport[tf]')",
    Backend.TORCH: "PyTorch in this Python (your own build: see pytorch.org)",
}


def tf_available() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("tensorflow", "xprof"))


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


def gpu_present() -> bool:
    """An NVIDIA GPU on this machine, judged without importing a framework: the driver's device
    node or its tool (DLProf and Nsight Systems trace nothing without one)."""
    return Path("/dev/nvidiactl").exists() or shutil.which("nvidia-smi") is not None


def available(backend: Backend) -> bool:
    if backend is Backend.TF:
        return tf_available()
    if backend is Backend.TORCH:
        return torch_available()
    return shutil.which(backend.value) is not None


def _check_framework(requested: Backend, fw: Framework) -> None:
    if requested is Backend.TF and fw is Framework.PYTORCH:
        raise UsageError(
            "the tf backend profiles TensorFlow scripts and this one imports PyTorch; "
            "use --backend torch (or nsys, dlprof)"
        )
    if requested is Backend.TORCH and fw is Framework.TENSORFLOW:
        raise UsageError(
            "the torch backend profiles PyTorch scripts and this one imports TensorFlow; "
            "use --backend tf (or nsys, dlprof)"
        )


def choose(requested: Backend, fw: Framework) -> tuple[Backend, str | None]:
    """The backend to use and, for ``auto``, why; a :class:`CaptureError` naming what was
    looked for when nothing fits."""
    if requested is not Backend.AUTO:
        _check_framework(requested, fw)
        if not available(requested):
            raise CaptureError(
                f"--backend {requested.value}: not available; needs {INSTALL_HINTS[requested]}"
            )
        return requested, None
    gpu = gpu_present()
    if gpu:
        for candidate in (Backend.DLPROF, Backend.NSYS):
            if available(candidate):
                return candidate, f"{candidate.value} is on PATH and this machine has a GPU"
    in_process = {Framework.PYTORCH: Backend.TORCH, Framework.TENSORFLOW: Backend.TF}.get(fw)
    imports = {Framework.PYTORCH: "torch", Framework.TENSORFLOW: "tensorflow/keras"}.get(fw)
    if in_process is not None and available(in_process):
        why = "no GPU here" if not gpu else "no dlprof or nsys on PATH"
        return in_process, f"the script imports {imports} ({why} for dlprof/nsys)"
    looked = [INSTALL_HINTS[Backend.DLPROF], INSTALL_HINTS[Backend.NSYS]]
    if in_process is not None:
        looked.append(INSTALL_HINTS[in_process])
    what = (
        f"a script importing {imports}"
        if imports
        else "a script that imports neither torch nor tensorflow"
    )
    gpu_text = "" if gpu else " (and dlprof/nsys need a GPU, which this machine lacks)"
    raise CaptureError(
        f"no profiler available for {what}: looked for {'; '.join(looked)}{gpu_text}"
    )


def resolve(requested: Backend, fw: Framework) -> Backend:
    """The backend to use (:func:`choose` without the reason)."""
    return choose(requested, fw)[0]


class _Tee(threading.Thread):
    """Copies a child's stderr to ours while remembering its last non-empty line."""

    def __init__(self, stream: IO[bytes]) -> None:
        super().__init__(daemon=True)
        self._stream = stream
        self.last_line = ""

    def run(self) -> None:
        with self._stream:  # closed here, at end-of-file, whoever held the pipe open
            for raw in iter(self._stream.readline, b""):
                text = raw.decode("utf-8", "replace")
                sys.stderr.write(text)
                if text.strip():
                    self.last_line = text.strip()


#: After the command exits, how long its remaining error output may take to arrive. A process it
#: started in the background (a data-loader worker, a server) can hold the pipe open for ever;
#: tcreport waits for the command, not for them.
DRAIN_S = 2.0


@dataclass(frozen=True)
class Ran:
    code: int
    last_line: str  # the last non-empty line of its stderr
    lingering: tuple[str, ...] = ()  # "name (pid N)" of processes still holding its stderr


def _pipe_holders(stream: IO[bytes]) -> tuple[str, ...]:
    """Processes (other than this one) that hold the write end of ``stream``'s pipe, found
    through /proc (Linux); an empty tuple where /proc cannot say."""
    try:
        inode = os.fstat(stream.fileno()).st_ino
        pids = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
    except OSError:
        return ()
    target = f"pipe:[{inode}]"
    found = []
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") == target for fd in fds):
                comm = Path(f"/proc/{pid}/comm").read_text(encoding="utf-8").strip()
                found.append(f"{comm} (pid {pid})")
        except OSError:
            continue
    return tuple(found)


def run_command(argv: Sequence[str], extra_env: Mapping[str, str] | None = None) -> Ran:
    """Run ``argv`` with stdout passed through and stderr copied; waits for the process itself,
    not for end-of-file on its stderr, which children it forked may keep open after it exits."""
    env = {**os.environ, **(extra_env or {})}
    try:
        proc = subprocess.Popen(list(argv), stderr=subprocess.PIPE, env=env)
    except OSError as exc:
        raise CaptureError(f"cannot run {argv[0]}: {exc.strerror or exc}") from exc
    assert proc.stderr is not None
    tee = _Tee(proc.stderr)
    tee.start()
    try:
        code = proc.wait()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    tee.join(DRAIN_S)
    lingering: tuple[str, ...] = ()
    if tee.is_alive():
        # Closing the pipe now would block on the reader's lock: the daemon thread is left to
        # end (and close it) with the children, or with tcreport.
        lingering = _pipe_holders(proc.stderr) or ("unknown processes",)
        sys.stderr.write(
            f"tcreport: note: {Path(argv[0]).name} exited with code {code}, but "
            f"{', '.join(lingering)} it started still hold its error output open; not waiting "
            "for them\n"
        )
    sys.stderr.flush()
    return Ran(code, tee.last_line, lingering)


def _lingering_note(*runs: Ran) -> tuple[str, ...]:
    held = sorted({p for r in runs for p in r.lingering})
    if not held:
        return ()
    return (
        f"Processes the script started outlived it ({', '.join(held)}); tcreport did not wait "
        "for them, and anything they did afterwards is not in this profile.",
    )


def _failed(tool: str, code: int, last: str) -> CaptureError:
    tail = f": {last}" if last else " (no error output)"
    return CaptureError(f"{tool} failed with exit code {code}{tail}")


def _dlprof_wrote(out_dir: Path, name: str) -> bool:
    return any(out_dir.glob(f"{name}_*.csv")) or any(out_dir.glob("dlprof_*.csv"))


def run_dlprof(req: ProfileRequest, fw: Framework) -> CaptureResult:
    argv = commands.dlprof(req, fw)
    ran = run_command(argv)
    if not _dlprof_wrote(req.out_dir, req.profile_name):
        raise _failed("dlprof", ran.code, ran.last_line)
    return CaptureResult(
        backend=Backend.DLPROF,
        framework=fw,
        trace_path=req.out_dir,
        script_exit_code=ran.code,
        commands=(tuple(argv),),
        notes=_lingering_note(ran),
        sliced_by_profiler=True,
    )


def _nsys_report(base: Path) -> Path | None:
    for suffix in (".nsys-rep", ".qdrep"):  # .qdrep before Nsight Systems 2021.4
        path = base.with_name(base.name + suffix)
        if path.is_file():
            return path
    return None


#: How long ``nsys profile --help`` may take before the option is taken as not listed.
HELP_TIMEOUT_S = 30.0


def nsys_lists(option: str) -> bool:
    """Whether ``nsys profile --help`` mentions ``option`` (options come and go between
    releases; an unknown one makes nsys refuse to run). The help goes to a file, not a pipe, and
    tcreport waits for nsys itself: a process it leaves behind holding its output cannot stall the
    run (see :func:`run_command`)."""
    with tempfile.TemporaryFile() as out:
        try:
            proc = subprocess.Popen(
                ["nsys", "profile", "--help"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError:
            return False
        try:
            proc.wait(timeout=HELP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return False
        out.seek(0)
        return option in out.read().decode("utf-8", "replace")


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, 9)
    except OSError:
        proc.kill()
    proc.wait()


def run_nsys(req: ProfileRequest, fw: Framework) -> CaptureResult:
    base = commands.nsys_base(req)
    graph_nodes = nsys_lists(commands.NSYS_GRAPH_NODES.split("=")[0])
    profile = commands.nsys_profile(req, fw, graph_nodes)
    ran = run_command(profile, commands.nsys_env(fw))
    report = _nsys_report(base)
    if report is None and ran.code == 0:
        raise CaptureError(
            "nsys profile exited with code 0 but wrote no report "
            f"({base.name}.nsys-rep is missing)",
            base.parent,
        )
    if report is None:
        raise _failed("nsys profile", ran.code, ran.last_line)
    sqlite = base.with_name(base.name + ".sqlite")
    export = commands.nsys_export(report, sqlite)
    exported = run_command(export)
    if exported.code != 0 or not sqlite.is_file():
        raise _failed("nsys export", exported.code, exported.last_line)
    return CaptureResult(
        backend=Backend.NSYS,
        framework=fw,
        trace_path=sqlite,
        script_exit_code=ran.code,
        commands=(tuple(profile), tuple(export)),
        notes=_lingering_note(ran),
    )


def _python_script(script: Path) -> bool:
    if script.suffix in (".py", ".pyw"):
        return True
    try:
        with script.open("rb") as f:
            first = f.readline(200)
    except OSError:
        return True  # parse() says why it cannot be read
    return first.startswith(b"#!") and b"python" in first


def check(req: ProfileRequest) -> tuple[Framework, Backend, str | None]:
    """Everything that can be refused before the script runs: the script, the backend, the
    output folder. Returns the framework, the backend and why ``auto`` chose it."""
    if not req.script.is_file():
        raise UsageError("no such script", req.script)
    if not _python_script(req.script):
        raise UsageError(
            "not a Python script: tcreport profile runs a .py file (or one whose first line is "
            "a #! line naming python)",
            req.script,
        )
    fw = framework.detect(req.script)
    out = req.out_dir
    made = not out.exists()
    try:  # exit 4 like every output that cannot be written, and before the script runs
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create the output folder: {exc.strerror or exc}", out) from exc
    if not os.access(out, os.W_OK | os.X_OK):
        raise OutputError("the output folder is not writable", out)
    try:
        backend, why = choose(req.backend, fw)
    except (CaptureError, UsageError):
        if made:
            out.rmdir()  # leave nothing behind for a run that never started
        raise
    return fw, backend, why


def run(req: ProfileRequest) -> CaptureResult:
    """Check, then run the script under the chosen backend in a new run folder of ``out_dir``
    (:mod:`tcreport.capture.layout`; the TensorFlow profiler makes its own there). Paths are
    made absolute first, as the script may change its working folder. A run that fails leaves
    no empty folder behind."""
    req = dataclasses.replace(req, script=req.script.absolute(), out_dir=req.out_dir.absolute())
    made = not req.out_dir.exists()
    fw, backend, why = check(req)
    runs = req.out_dir / layout.RUNS
    before = set(runs.iterdir()) if runs.is_dir() else set()
    try:
        result = _run_backend(req, fw, backend)
    except TcreportError:
        for folder in set(runs.iterdir()) - before if runs.is_dir() else ():
            layout.prune(folder, req.out_dir, made)
        if made:
            layout.prune(req.out_dir, req.out_dir, made)
        raise
    return dataclasses.replace(result, chosen_because=why)


def _run_backend(req: ProfileRequest, fw: Framework, backend: Backend) -> CaptureResult:
    if backend is Backend.DLPROF:
        return run_dlprof(dataclasses.replace(req, out_dir=layout.new_run_dir(req.out_dir)), fw)
    if backend is Backend.NSYS:
        return run_nsys(dataclasses.replace(req, out_dir=layout.new_run_dir(req.out_dir)), fw)
    if backend is Backend.TORCH:
        from tcreport.capture import torch_runner

        return torch_runner.run(req, fw)
    from tcreport.capture import tf_runner

    return tf_runner.run(req, fw)
