"""``tcreport profile`` with the dlprof and nsys backends, against stand-in executables.

The stand-ins (tests/fixtures/fake_profilers/) record their argv, run the script, and write real
outputs from ../shared/realtraces: DLProf's CSV reports of a PyTorch CNN run, and the Nsight
Systems export of the same run. So these tests check the exact command lines and the whole path
from command to report against figures DLProf itself reported (589,147 ns of kernel time).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import signal
import sys
import time
from pathlib import Path
from typing import TypedDict

import pytest
from trace_paths import DLPROF_CNN, NSYS_WIN2022
from typer.testing import CliRunner

import tcreport.cli.profile_cmd as profile_cmd  # registers the command (until cli/app.py does)
from tcreport.capture import Backend, ProfileRequest, backends, commands
from tcreport.capture.framework import detect
from tcreport.capture.request import Framework
from tcreport.cli import app

FAKES = Path(__file__).parents[1] / "fixtures" / "fake_profilers"
runner = CliRunner()

TORCH_SCRIPT = """\
import sys
try:
    import torch  # noqa: F401  (only so the framework is detected; not needed to run)
except ImportError:
    pass
print("training with", sys.argv[1:])
sys.exit(int(dict(zip(sys.argv[1::2], sys.argv[2::2])).get("--exit", 0)))
"""
TF_SCRIPT = TORCH_SCRIPT.replace("import torch", "import tensorflow")


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Only the stand-ins on PATH (plus the interpreter's folder); returns the argv log."""
    if not DLPROF_CNN.exists():
        pytest.skip("needs ../shared/realtraces")
    log = tmp_path / "argv.jsonl"
    monkeypatch.setenv("PATH", os.pathsep.join([str(FAKES), str(Path(sys.executable).parent)]))
    monkeypatch.setenv("FAKE_PROFILER_LOG", str(log))
    monkeypatch.setenv("FAKE_DLPROF_SOURCE", str(DLPROF_CNN))
    monkeypatch.setenv("FAKE_NSYS_SQLITE", str(DLPROF_CNN / "nsys_profile.sqlite"))
    return log


class _Call(TypedDict):
    """One line of ``$FAKE_PROFILER_LOG`` (tests/fixtures/fake_profilers/_fake.py ``record``)."""

    tool: str
    argv: list[str]
    env: dict[str, str]


def _calls(log: Path) -> list[_Call]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def _script(tmp_path: Path, text: str = TORCH_SCRIPT, name: str = "train.py") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _run_dir(out: Path) -> Path:
    """The one run folder a profile wrote under ``out/plugins/profile`` (each run gets its own)."""
    (run,) = (out / "plugins" / "profile").iterdir()
    return run


# --- command lines as data ---------------------------------------------------------------------


def test_dlprof_command_line_is_exact(tmp_path: Path) -> None:
    req = ProfileRequest(
        script=Path("train.py"),
        script_args=("--lr", "0.1"),
        out_dir=tmp_path / "out",
        key_node="loss",
        iter_start=20,
        iter_stop=80,
        delay_s=60,
        duration_s=30.5,
        python="/usr/bin/python3",
    )
    assert commands.dlprof(req, Framework.PYTORCH) == [
        "dlprof",
        "--mode=pytorch",
        "--key_node=loss",
        "--iter_start=20",
        "--iter_stop=80",
        "--delay=60",
        "--duration=30.5",
        "--reports=all",
        "--formats=csv,json",
        f"--output_path={tmp_path / 'out'}",
        "--profile_name=train",
        "--force=true",
        "/usr/bin/python3",
        "train.py",
        "--lr",
        "0.1",
    ]
    assert commands.dlprof(req, Framework.TENSORFLOW)[1] == "--mode=tensorflow2"
    bare = ProfileRequest(script=Path("t.py"), out_dir=Path("o"), python="py")
    assert commands.dlprof(bare, Framework.UNKNOWN) == [
        "dlprof", "--mode=simple", "--reports=all", "--formats=csv,json", "--output_path=o",
        "--profile_name=t", "--force=true", "py", "t.py",
    ]  # fmt: skip


def test_nsys_command_lines_are_exact() -> None:
    req = ProfileRequest(
        script=Path("train.py"), script_args=("-x",), out_dir=Path("o"), python="py"
    )
    assert commands.nsys_profile(req, Framework.PYTORCH) == [
        "nsys", "profile", "--trace=cuda,nvtx,cudnn,cublas", "--output=o/train",
        "--force-overwrite=true", "--pytorch=autograd-shapes-nvtx", "py", "train.py", "-x",
    ]  # fmt: skip
    assert "--pytorch=autograd-shapes-nvtx" not in commands.nsys_profile(req, Framework.TENSORFLOW)
    assert commands.nsys_env(Framework.TENSORFLOW) == {
        "TF_ENABLE_NVTX_RANGES": "1",
        "TF_ENABLE_NVTX_RANGES_DETAILED": "1",
    }
    assert commands.nsys_env(Framework.PYTORCH) == {}
    assert commands.nsys_export(Path("o/train.nsys-rep"), Path("o/train.sqlite")) == [
        "nsys", "export", "--type=sqlite", "--force-overwrite=true", "--output=o/train.sqlite",
        "o/train.nsys-rep",
    ]  # fmt: skip


def test_framework_is_detected_from_imports(tmp_path: Path) -> None:
    assert detect(_script(tmp_path, "from torch import nn\n", "a.py")) is Framework.PYTORCH
    assert detect(_script(tmp_path, "import tensorflow as tf\n", "b.py")) is Framework.TENSORFLOW
    assert detect(_script(tmp_path, "from keras import layers\n", "c.py")) is Framework.TENSORFLOW
    assert detect(_script(tmp_path, "import numpy\n", "d.py")) is Framework.UNKNOWN


def test_default_output_dir_names_script_and_utc_time() -> None:
    name = profile_cmd.default_output_dir(Path("examples/mnist_keras.py")).name
    assert re.fullmatch(r"tcreport-mnist_keras-\d{8}T\d{6}Z", name)


# --- the whole flow ----------------------------------------------------------------------------


def test_dlprof_flow_command_to_report(fakes: Path, tmp_path: Path) -> None:
    script = _script(tmp_path)
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["profile", str(script), "--backend", "dlprof", "--key-node", "conv2d",
         "--iter-start", "1", "--iter-stop", "3", "--output-dir", str(out), "--", "--lr", "0.1"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (call,) = _calls(fakes)
    run = _run_dir(out)
    assert call["argv"] == [
        "--mode=pytorch", "--key_node=conv2d", "--iter_start=1", "--iter_stop=3",
        "--reports=all", "--formats=csv,json", f"--output_path={run}", "--profile_name=train",
        "--force=true", sys.executable, str(script), "--lr", "0.1",
    ]  # fmt: skip
    assert (run / "train_summary.csv").is_file(), "raw profile kept in its run folder"
    assert (out / "report.html").is_file()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["source"]["format"] == "dlprof-csv"
    assert summary["time"]["gpu_kernel_ns"] == 589_147  # DLProf's own figure for this run
    assert summary["time"]["memory_ns"] == 66_690


def test_nsys_flow_command_to_report(fakes: Path, tmp_path: Path) -> None:
    script = _script(tmp_path)
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["profile", str(script), "--backend", "nsys", "--output-dir", str(out), "--epochs", "2"],
    )
    assert result.exit_code == 0, result.output
    profile, export = _calls(fakes)
    run = _run_dir(out)
    assert profile["argv"] == [
        "profile", "--trace=cuda,nvtx,cudnn,cublas", f"--output={run / 'train'}",
        "--force-overwrite=true", "--cuda-graph-trace=node", "--pytorch=autograd-shapes-nvtx",
        sys.executable, str(script), "--epochs", "2",
    ]  # fmt: skip
    assert profile["env"] == {}
    assert export["argv"] == [
        "export", "--type=sqlite", "--force-overwrite=true", f"--output={run / 'train.sqlite'}",
        str(run / "train.nsys-rep"),
    ]  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    assert summary["source"]["format"] == "nsys-sqlite"
    assert summary["time"]["gpu_kernel_ns"] == 589_147  # reproduces DLProf from the raw export
    assert (out / "report.html").is_file() and (run / "train.nsys-rep").is_file()


def test_nsys_without_the_graph_node_option_is_not_given_it(
    fakes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An nsys whose ``profile --help`` does not list --cuda-graph-trace would refuse it."""
    monkeypatch.setenv("FAKE_NSYS_OLD", "1")
    out = tmp_path / "o"
    result = runner.invoke(
        app, ["profile", str(_script(tmp_path)), "--backend", "nsys", "--output-dir", str(out)]
    )
    assert result.exit_code == 0, result.output
    profile = _calls(fakes)[0]
    assert not any(a.startswith("--cuda-graph-trace") for a in profile["argv"])
    assert "--pytorch=autograd-shapes-nvtx" in profile["argv"]


def test_nsys_sets_tf_nvtx_environment_for_tensorflow_scripts(fakes: Path, tmp_path: Path) -> None:
    script = _script(tmp_path, TF_SCRIPT)
    result = runner.invoke(
        app, ["profile", str(script), "--backend", "nsys", "--output-dir", str(tmp_path / "o")]
    )
    assert result.exit_code == 0, result.output
    profile = _calls(fakes)[0]
    assert profile["env"] == {"TF_ENABLE_NVTX_RANGES": "1", "TF_ENABLE_NVTX_RANGES_DETAILED": "1"}
    assert "--pytorch=autograd-shapes-nvtx" not in profile["argv"]


def test_nsys_tensorflow_run_without_op_ranges_says_why(
    fakes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stock TensorFlow ignores TF_ENABLE_NVTX_RANGES: an export with no op ranges (here the real
    2022 export, which has no NVTX table) gets a report with kernel figures and a note saying so."""
    if not NSYS_WIN2022.exists():
        pytest.skip("needs ../shared/realtraces")
    monkeypatch.setenv("FAKE_NSYS_SQLITE", str(NSYS_WIN2022))
    script = _script(tmp_path, TF_SCRIPT)
    out = tmp_path / "o"
    result = runner.invoke(
        app, ["profile", str(script), "--backend", "nsys", "--output-dir", str(out)]
    )
    assert result.exit_code == 0, result.output
    html = (out / "report.html").read_text()
    assert "No TensorFlow op ranges in the Nsight Systems export" in html
    assert "--backend tf gives op-level figures" in html
    assert json.loads((out / "summary.json").read_text())["time"]["gpu_kernel_ns"] > 0


def test_nsys_pytorch_run_gets_no_tensorflow_note(fakes: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"
    result = runner.invoke(
        app, ["profile", str(_script(tmp_path)), "--backend", "nsys", "--output-dir", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "No TensorFlow op ranges" not in (out / "report.html").read_text()


def test_auto_prefers_dlprof_then_nsys_on_a_gpu_machine(
    fakes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backends, "gpu_present", lambda: True)
    assert backends.resolve(Backend.AUTO, Framework.PYTORCH) is Backend.DLPROF
    only_nsys = tmp_path / "bin"
    only_nsys.mkdir()
    (only_nsys / "nsys").symlink_to(FAKES / "nsys")
    monkeypatch.setenv("PATH", str(only_nsys))
    assert backends.resolve(Backend.AUTO, Framework.PYTORCH) is Backend.NSYS


# --- failure modes -----------------------------------------------------------------------------


def _one_error_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.startswith("tcreport: error: ")]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_script_failure_propagates_exit_code_and_marks_partial(fakes: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        [
            "profile",
            str(_script(tmp_path)),
            "--backend",
            "nsys",
            "--output-dir",
            str(out),
            "--",
            "--exit",
            "3",
        ],
    )
    assert result.exit_code == 3
    assert "the script exited with code 3" in _one_error_line(result.stderr)
    html = (out / "report.html").read_text()
    assert "Partial profile: the script exited with code 3" in html


def test_profiler_failure_names_exit_code_and_last_stderr_line(
    fakes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PROFILER_FAIL", "1")
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["profile", str(_script(tmp_path)), "--backend", "dlprof", "--output-dir", str(out)]
    )
    assert result.exit_code == 5
    line = _one_error_line(result.stderr)
    assert "dlprof failed with exit code 7: fake profiler: CUPTI initialization failed" in line
    assert not (out / "report.html").exists()


def test_nsys_export_failure(fakes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NSYS_EXPORT_FAIL", "1")
    result = runner.invoke(
        app,
        [
            "profile",
            str(_script(tmp_path)),
            "--backend",
            "nsys",
            "--output-dir",
            str(tmp_path / "o"),
        ],
    )
    assert result.exit_code == 5
    assert (
        "nsys export failed with exit code 1: fake nsys: export: unsupported report version"
        in _one_error_line(result.stderr)
    )


def test_no_backend_available_says_what_was_looked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(backends, "tf_available", lambda: False)
    result = runner.invoke(
        app, ["profile", str(_script(tmp_path, TF_SCRIPT)), "--output-dir", str(tmp_path / "o")]
    )
    assert result.exit_code == 5
    line = _one_error_line(result.stderr)
    assert "no profiler available" in line
    assert "dlprof on PATH" in line and "nsys on PATH" in line
    assert "pip install 'tcreport[tf]'" in line


def test_tf_backend_refuses_pytorch_scripts(tmp_path: Path) -> None:
    result = runner.invoke(app, ["profile", str(_script(tmp_path)), "--backend", "tf"])
    assert result.exit_code == 2
    assert "imports PyTorch" in _one_error_line(result.stderr)


def test_torch_backend_refuses_tensorflow_scripts(tmp_path: Path) -> None:
    out = tmp_path / "o"
    result = runner.invoke(
        app,
        [
            "profile",
            str(_script(tmp_path, TF_SCRIPT)),
            "--backend",
            "torch",
            "--output-dir",
            str(out),
        ],
    )
    assert result.exit_code == 2
    assert "this one imports TensorFlow; use --backend tf" in _one_error_line(result.stderr)
    assert not out.exists(), "a run that never started leaves no folder"


def test_auto_without_a_gpu_runs_the_scripts_own_framework(
    fakes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dlprof and nsys are on PATH (the stand-ins) but trace nothing without a GPU."""
    monkeypatch.setattr(backends, "gpu_present", lambda: False)
    monkeypatch.setattr(backends, "torch_available", lambda: True)
    monkeypatch.setattr(backends, "tf_available", lambda: True)
    torch_choice = backends.choose(Backend.AUTO, Framework.PYTORCH)
    assert torch_choice == (Backend.TORCH, "the script imports torch (no GPU here for dlprof/nsys)")
    assert backends.choose(Backend.AUTO, Framework.TENSORFLOW)[0] is Backend.TF


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--iter-start", "5", "--iter-stop", "2"], "--iter-stop 2 is before --iter-start 5"),
        (["--backend", "nsys", "--delay", "3"], "--delay and --duration are DLProf options"),
    ],
)
def test_bad_options_are_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    result = runner.invoke(app, ["profile", str(_script(tmp_path)), *args])
    assert result.exit_code == 2
    assert message in _one_error_line(result.stderr)


def test_bogus_backend_is_refused_with_the_choices(tmp_path: Path) -> None:
    # --backend is a choice like diff's --format: Click refuses it and lists the choices.
    result = runner.invoke(app, ["profile", str(_script(tmp_path)), "--backend", "bogus"])
    assert result.exit_code == 2
    assert "'bogus' is not one of 'auto', 'dlprof', 'nsys', 'tf', 'torch'" in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_script(tmp_path: Path) -> None:
    result = runner.invoke(app, ["profile", str(tmp_path / "nope.py"), "--backend", "nsys"])
    assert result.exit_code == 2
    assert "nope.py: no such script" in _one_error_line(result.stderr)


# --- processes that outlive the script (issue #28 item 5) ----------------------------------------

LINGERING = """\
import os, subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
with open(os.environ["LINGER_PID_FILE"], "w") as fh:
    fh.write(str(child.pid))
print("forked a worker that keeps stderr open", file=sys.stderr)
"""


def _kill_from(pid_file: Path) -> None:
    if pid_file.is_file():
        with contextlib.suppress(ProcessLookupError):  # a child this test started
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_run_command_waits_for_the_process_not_its_pipes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pid_file = tmp_path / "pid"
    monkeypatch.setenv("LINGER_PID_FILE", str(pid_file))
    script = _script(tmp_path, LINGERING)
    began = time.monotonic()
    try:
        ran = backends.run_command([sys.executable, str(script)])
        took = time.monotonic() - began
        assert ran.code == 0
        assert took < 60, "waited for the child's stderr instead of the script"
        assert ran.last_line == "forked a worker that keeps stderr open"
        assert any(f"(pid {pid_file.read_text()})" in p for p in ran.lingering), ran.lingering
        assert "still hold its error output open; not waiting" in capsys.readouterr().err
    finally:
        _kill_from(pid_file)


def test_profile_reports_children_that_outlive_the_script(
    fakes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if (
        importlib.util.find_spec("torch") is None
        and os.environ.get("TCREPORT_REQUIRE_TORCH") != "1"
    ):
        pytest.skip("the script imports torch (pip install torch==2.13.0)")
    pid_file = tmp_path / "pid"
    monkeypatch.setenv("LINGER_PID_FILE", str(pid_file))
    out = tmp_path / "out"
    try:
        result = runner.invoke(
            app,
            ["profile", str(_script(tmp_path, "import torch\n" + LINGERING)), "--backend", "nsys",
             "--output-dir", str(out)],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert "still hold its error output open" in result.stderr
        html = (out / "report.html").read_text()
        assert "outlived it" in html and "tcreport did not wait for them" in html
    finally:
        _kill_from(pid_file)


def test_output_folder_that_cannot_be_made_is_refused_before_the_script_runs(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    ran = tmp_path / "ran"
    script = _script(tmp_path, f"open({str(ran)!r}, 'w').close()\n")
    result = runner.invoke(
        app, ["profile", str(script), "--backend", "nsys", "--output-dir", str(blocker / "out")]
    )
    assert result.exit_code == 4
    assert "cannot create the output folder" in _one_error_line(result.stderr)
    assert not ran.exists(), "the script must not run"


def test_nsys_key_node_that_never_occurs_keeps_a_whole_run_report(
    fakes: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["profile", str(_script(tmp_path)), "--backend", "nsys", "--key-node", "conv2dd",
         "--output-dir", str(out)],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    line = _one_error_line(result.stderr)
    assert "--key-node 'conv2dd' never occurs in this trace" in line
    assert f"a report of the whole run in {out / 'report.html'}" in line
    # profile has no --allow-empty; the kept profile's `report` has, and the message says so
    assert "--allow-empty` to aggregate the whole run anyway" in line
    assert re.search(r"`tcreport report \S+\.sqlite --allow-empty`", line), line
    summary = json.loads((out / "summary.json").read_text())
    assert summary["iterations"]["key_node"] != "conv2dd"
    assert summary["time"]["gpu_kernel_ns"] == 589_147  # the whole run, as DLProf reported it


def test_dlprof_timing_options_refused_when_auto_picks_another_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backends, "gpu_present", lambda: False)
    monkeypatch.setattr(backends, "torch_available", lambda: True)
    out = tmp_path / "o"
    result = runner.invoke(
        app, ["profile", str(_script(tmp_path)), "--delay", "5", "--output-dir", str(out)]
    )
    assert result.exit_code == 2
    assert "--delay and --duration are DLProf options and --backend auto chose torch" in (
        _one_error_line(result.stderr)
    )
    assert not out.exists()
