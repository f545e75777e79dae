"""The allocator settings tcreport makes for itself (tcreport.cli.app.tune_allocators) reach its own
commands and never a user's script: `profile` runs the script in process, and a profile must
measure the script as it runs without tcreport."""

from __future__ import annotations

import importlib.util
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest
from trace_paths import SAMPLES

VARS = ("ARROW_DEFAULT_MEMORY_POOL", "NUMPY_MADVISE_HUGEPAGE")
RUN = """
import os, sys
sys.argv = ["tcreport", *sys.argv[1:]]
from tcreport.cli import main
try:
    main()
except SystemExit:
    pass
print("ENV", *(os.environ.get(v, "unset") for v in {vars!r}))
"""


def _tcreport(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in VARS}
    return subprocess.run(
        [sys.executable, "-c", RUN.format(vars=VARS), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_own_commands_tune_the_allocators() -> None:
    sample = SAMPLES / "kineto-a100-tf32-alexnet"
    done = _tcreport("summary", "--json", str(sample), "-o", os.devnull)
    assert done.returncode == 0 or "ENV" in done.stdout, done.stderr
    assert "ENV system 0" in done.stdout, done.stdout + done.stderr


def test_profile_leaves_the_users_script_alone(tmp_path: Path) -> None:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("needs PyTorch (the torch backend)")
    seen = tmp_path / "seen.txt"
    script = tmp_path / "train.py"
    script.write_text(
        "import os\n"
        f"open({str(seen)!r}, 'w').write(' '.join(os.environ.get(v, 'unset') for v in {VARS!r}))\n"
    )
    _tcreport("profile", "--backend", "torch", "--output-dir", str(tmp_path / "out"), str(script))
    assert seen.read_text() == "unset unset"


MAPPED = """
import ctypes, os, sys
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
libc.malloc.restype = ctypes.c_void_p
if sys.argv[1] == "tuned":
    from tcreport.cli.app import tune_allocators
    tune_allocators()
before = libc.mallinfo2().hblks
block = libc.malloc(16 << 20)
print("MAPPED", libc.mallinfo2().hblks - before)
"""


def _mapped(how: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_TUN"))}
    done = subprocess.run(
        [sys.executable, "-c", MAPPED, how],
        capture_output=True, text=True, env=clean | env, timeout=60, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def test_glibc_malloc_keeps_blocks_up_to_32_mib_in_its_heap() -> None:
    """mallopt reached glibc: a 16 MiB block comes from the heap, where by default (before any
    such block is freed) it is mapped on its own; a user's own malloc settings are left alone."""
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc's malloc only")
    assert _mapped("plain") == "MAPPED 1"
    assert _mapped("tuned") == "MAPPED 0"
    assert _mapped("tuned", GLIBC_TUNABLES="glibc.malloc.perturb=0") == "MAPPED 1"
    assert _mapped("tuned", MALLOC_ARENA_MAX="8") == "MAPPED 1"
