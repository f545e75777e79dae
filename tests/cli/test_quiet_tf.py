"""``tcreport profile`` keeps TensorFlow's own logging out of its output unless ``--verbose``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tcreport.capture import quiet

ROOT = Path(__file__).resolve().parents[2]
#: absl's INFO/WARNING line format, as TensorFlow writes it on import and around the profiler
ABSL_INFO_OR_WARNING = re.compile(r"^[IW]\d{4} \d\d:\d\d:\d+\.\d+ +\d+ [\w.]+:\d+\]", re.M)


def test_the_tf_log_level_is_set_for_the_command_and_restored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    with quiet.framework_logs(verbose=False):
        assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "2"
    assert "TF_CPP_MIN_LOG_LEVEL" not in os.environ
    with quiet.framework_logs(verbose=True):
        assert "TF_CPP_MIN_LOG_LEVEL" not in os.environ
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")  # the user's own choice stands
    with quiet.framework_logs(verbose=False):
        assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "0"


def _child(verbose: bool) -> str:
    """A stand-in import that writes to fd 2 as TensorFlow's C++ side does (synthetic lines)."""
    code = (
        "import os\nfrom tcreport.capture import quiet\n"
        f"with quiet.tensorflow_import({verbose}):\n"
        "    os.write(2, b'WARNING: All log messages before absl::InitializeLog() is called are "
        "written to STDERR\\n')\n"
        "    os.write(2, b'I0000 00:00:1795446341.839379   27934 port.cc:153] oneDNN on\\n')\n"
        "    os.write(2, b'W0000 00:00:1795446341.9   27934 session_manager.cc:55] level\\n')\n"
        "    os.write(2, b'E0000 00:00:1795446342.1   27934 cuda.cc:12] real trouble\\n')\n"
        "    os.write(2, b'DeprecationWarning: something the user should see\\n')\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stderr


def test_import_noise_is_held_back_and_errors_pass() -> None:
    quiet_err = _child(verbose=False)
    assert "oneDNN" not in quiet_err and "session_manager" not in quiet_err
    assert "absl::InitializeLog" not in quiet_err
    assert "real trouble" in quiet_err and "DeprecationWarning" in quiet_err
    loud = _child(verbose=True)
    assert "oneDNN" in loud and "session_manager" in loud


@pytest.mark.slow
def test_profile_output_has_no_tensorflow_logging_unless_verbose(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    pytest.importorskip("xprof")

    def profile(*extra: str) -> subprocess.CompletedProcess[str]:
        out = tmp_path / f"out{len(extra)}"
        argv = [sys.executable, "-m", "tcreport", "profile", "examples/mnist_keras.py"]
        argv += ["--backend", "tf", "--output-dir", str(out), *extra]
        env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
        return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env=env)

    quiet_run = profile()
    assert quiet_run.returncode == 0, quiet_run.stderr
    assert not ABSL_INFO_OR_WARNING.search(quiet_run.stderr), quiet_run.stderr
    assert "oneDNN" not in quiet_run.stderr and "Profiler session" not in quiet_run.stderr
    assert "tcreport: tf: wrote" in quiet_run.stderr
    loud = profile("--verbose")
    assert loud.returncode == 0, loud.stderr
    assert ABSL_INFO_OR_WARNING.search(loud.stderr)  # the same run does log when asked
