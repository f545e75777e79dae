"""The ``tcreport`` command leaves without the interpreter's teardown (tcreport/cli/_exit.py), and
nothing a program relies on at exit is lost: output, exit status, atexit handlers, a ``profile``d
script's finalisers."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from trace_paths import SAMPLES
from typer.testing import CliRunner

from tcreport.cli import app

KINETO = SAMPLES / "kineto-a100-tf32-alexnet"


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tcreport", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_command_writes_the_whole_output_and_its_status(tmp_path: Path) -> None:
    # stdout is a pipe here: its buffer must be flushed before the process ends
    piped = _command("summary", "--json", str(KINETO))
    assert piped.returncode == 0, piped.stderr
    in_process = CliRunner().invoke(app, ["summary", "--json", str(KINETO)])
    assert piped.stdout == in_process.stdout and piped.stdout.rstrip().endswith("}")
    out = tmp_path / "s.json"
    written = _command("summary", "--json", str(KINETO), "-o", str(out))
    assert written.returncode == 0 and out.read_text() == piped.stdout
    assert written.stderr == f"tcreport: wrote {out}\n"
    missing = _command("summary", str(tmp_path / "nothing-here"))
    assert missing.returncode == 2
    assert missing.stderr.startswith("tcreport: error: ") and missing.stderr.count("\n") == 1


LEAVE = """
import atexit, sys, threading
from tcreport.cli import _exit
if sys.argv[1] == "armed":
    _exit.arm()
atexit.register(lambda: print("atexit ran", flush=True))
class Teardown:
    def __del__(self):
        print("teardown ran", flush=True)
keep = Teardown()
if sys.argv[2] == "semaphore":  # a pool's lock: multiprocessing finalises it at teardown
    import multiprocessing
    held = multiprocessing.get_context("spawn").Lock()
if sys.argv[2] == "thread":
    release = threading.Event()
    threading.Thread(target=release.wait, args=(5,)).start()  # not a daemon
    atexit.register(release.set)
print("output", end="")  # no newline: a line-buffered stream would not flush it by itself
code = {"none": None, "int": 3, "negative": -1, "text": "a message"}[sys.argv[3]]
_exit.leave(code)
print(" left in place")
"""


@pytest.mark.parametrize(
    ("code", "status"), [("none", 0), ("int", 3), ("negative", 255), ("text", 1)]
)
def test_leave_keeps_output_status_and_atexit_and_skips_teardown(code: str, status: int) -> None:
    done = _python(LEAVE, "armed", "alone", code)
    assert done.returncode == status
    assert done.stdout == "outputatexit ran\n"  # flushed, handlers run; no __del__ teardown
    assert done.stderr == ("a message\n" if code == "text" else "")


@pytest.mark.parametrize(
    ("armed", "thread"), [("unarmed", "alone"), ("armed", "thread"), ("armed", "semaphore")]
)
def test_leave_steps_aside_when_not_armed_or_not_safe(armed: str, thread: str) -> None:
    done = _python(LEAVE, armed, thread, "int")
    assert done.returncode == 0  # it returned: the script went on and ended normally
    assert done.stdout.startswith("output left in place\n")
    assert "atexit ran" in done.stdout and "teardown ran" in done.stdout


def test_profile_runs_the_users_finalisers(tmp_path: Path) -> None:
    """`profile` runs the user's script in this interpreter: the ordinary shutdown, so the
    script's objects are finalised as they would be without tcreport."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("needs PyTorch (the torch backend)")
    seen = tmp_path / "finalised.txt"
    script = tmp_path / "train.py"
    script.write_text(
        "class Last:\n"
        "    def __del__(self):\n"
        f"        open({str(seen)!r}, 'w').write('yes')\n"
        "keep = Last()\n"
    )
    _command("profile", "--backend", "torch", "--output-dir", str(tmp_path / "out"), str(script))
    assert seen.read_text() == "yes"


def test_say_prints_names_as_they_are(capsys: pytest.CaptureFixture[str]) -> None:
    """A file name is data: rich would print ``:thumbs_up:`` as an emoji, before and after a
    spinner or progress bar has made the stderr console."""
    from tcreport.cli import _common

    _common.say("tcreport: wrote :thumbs_up:.html")
    _common.err_console()
    _common.say("tcreport: wrote :thumbs_up:.md")
    assert capsys.readouterr().err.splitlines() == [
        "tcreport: wrote :thumbs_up:.html",
        "tcreport: wrote :thumbs_up:.md",
    ]
    _common.err_console.cache_clear()  # the next test starts, as a process does, without one
