"""``tcreport profile`` (torch backend) against what a hostile tester tried (issue #25, third
round): a script with its own ``torch.profiler``, one that changes its working folder, forks,
exits with 256 or through ``os._exit``, and runs that record nothing. Real ``torch.profiler`` on a
CPU; the scripts that end or split the process run in a child ``tcreport`` so its exit status is
the one a shell would see.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import torch  # noqa: F401
except ImportError:
    if os.environ.get("TCREPORT_REQUIRE_TORCH") == "1":
        raise
    pytest.skip("needs PyTorch (pip install torch==2.13.0)", allow_module_level=True)

from typer.testing import CliRunner  # noqa: E402

import tcreport  # noqa: E402
from tcreport.cli import app  # noqa: E402
from tcreport.errors import UsageError  # noqa: E402

runner = CliRunner()
pytestmark = pytest.mark.slow

LOOP = """\
import os, sys, torch
m = torch.nn.Linear(16, 16)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for i in range(6):
    opt.zero_grad(); m(torch.randn(4, 16)).sum().backward(); opt.step()
    AFTER_STEP
print("done")
"""


def _script(tmp_path: Path, after_step: str = "pass", text: str = LOOP) -> Path:
    p = tmp_path / "train.py"
    p.write_text(text.replace("AFTER_STEP", after_step))
    return p


def _tcreport(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tcreport", "profile", *args],
        cwd=cwd, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_a_script_with_its_own_profiler_is_refused_cleanly(tmp_path: Path) -> None:
    text = LOOP.replace(
        "for i in range(6):", "with torch.profiler.profile() as p:\n  for i in range(6):"
    )
    done = _tcreport(str(_script(tmp_path, text=text)), "--output-dir", "out", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("tcreport: error:")]
    assert len(errors) == 1 and "train.py runs its own torch.profiler" in errors[0], done.stderr
    assert "tcreport report" in errors[0] and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists(), "nothing recorded, no empty folder left"


def test_the_context_manager_refuses_a_second_profiler(tmp_path: Path) -> None:
    with (
        pytest.raises(UsageError, match="the profiled block runs its own torch.profiler"),
        tcreport.profile(steps=range(1, 2), output_dir=tmp_path / "cm"),
        torch.profiler.profile(),
    ):
        pass


def test_a_script_that_changes_folder_keeps_its_run(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    script = _script(tmp_path, f"if i == 0: os.chdir({str(tmp_path / 'elsewhere')!r})")
    done = _tcreport(str(script), "--output-dir", "rel", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "rel" / "report.html").is_file()
    assert list((tmp_path / "rel" / "plugins" / "profile").glob("*/train.pt.trace.json"))
    assert not (tmp_path / "elsewhere" / "rel").exists()


def test_exit_code_256_is_not_success(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, ["profile", str(_script(tmp_path, "if i == 3: sys.exit(256)")),
                                 "--output-dir", str(out)])  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "the script exited with code 256; the report is partial" in result.stderr
    assert (out / "report.html").is_file()


def test_os_exit_in_the_loop_still_reports_what_was_recorded(tmp_path: Path) -> None:
    done = _tcreport(str(_script(tmp_path, "if i == 5: os._exit(0)")), "--output-dir", "out",
                     cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (trace,) = (tmp_path / "out" / "plugins" / "profile").glob("*/train.pt.trace.json")
    assert "tcreport: train.py called os._exit(0) after 6 steps; reporting what was recorded" in (
        done.stderr
    )
    assert f"wrote {tmp_path / 'out' / 'report.html'}" in done.stderr
    assert "ended the process with os._exit(0)" in (tmp_path / "out" / "report.html").read_text()
    assert trace.with_name("tcreport-capture.json").is_file()


def test_os_exit_without_a_report_writer_names_the_trace(tmp_path: Path) -> None:
    """Without the CLI's report writer (torch_runner used directly), the trace is named."""
    script = _script(tmp_path, "if i == 5: os._exit(0)")
    code = (
        "import sys; from pathlib import Path\n"
        "from tcreport.capture import Framework, ProfileRequest, torch_runner\n"
        f"torch_runner.run(ProfileRequest(script=Path({str(script)!r}), "
        f"out_dir=Path({str(tmp_path / 'out')!r})), Framework.PYTORCH)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 5, done.stderr
    (trace,) = (tmp_path / "out" / "plugins" / "profile").glob("*/train.pt.trace.json")
    assert "no report was written" in done.stderr and str(trace) in done.stderr


def test_os_exit_before_the_window_leaves_no_run_folder(tmp_path: Path) -> None:
    text = LOOP.replace("for i in range(6):", "os._exit(3)\nfor i in range(6):")
    done = _tcreport(str(_script(tmp_path, text=text)), "--output-dir", "out", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert "train.py called os._exit(3) after 0 steps" in done.stderr
    assert "nothing was recorded" in done.stderr
    assert not list((tmp_path / "out").glob("plugins/profile/*"))


def test_a_forked_child_leaves_without_the_report(tmp_path: Path) -> None:
    text = LOOP.replace("print(\"done\")", (
        "pid = os.fork()\n"
        "if pid:\n    os.waitpid(pid, 0)\n"
        "else:\n    print('child', file=sys.stderr)\n"
    ))  # fmt: skip
    done = _tcreport(str(_script(tmp_path, text=text)), "--output-dir", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "child" in done.stderr
    assert done.stderr.count("wrote ") == 1, done.stderr
    assert "terminate called" not in done.stderr
    assert (tmp_path / "out" / "report.html").is_file()


@pytest.mark.parametrize(
    ("after_step", "args", "said"),
    [
        ("pass", ["--iter-start", "50"], "--iter-start 50 is past the last step"),
        ("raise RuntimeError('early')", [], "failed before its first step"),
    ],
)
def test_runs_that_record_nothing_leave_no_folder(
    tmp_path: Path, after_step: str, args: list[str], said: str
) -> None:
    out = tmp_path / "out"
    script = _script(tmp_path, after_step)
    if "raise" in after_step:  # fail before the first optimizer step
        script.write_text(LOOP.replace("    opt.zero_grad()", "    raise RuntimeError('early')\n"
                                       "    opt.zero_grad()"))  # fmt: skip
    result = runner.invoke(app, ["profile", str(script), "--output-dir", str(out), *args])
    assert result.exit_code != 0 and said in result.stderr, result.output
    assert not out.exists()


def test_no_step_run_leaves_an_existing_folder_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "mine.txt").parent.mkdir()
    (out / "mine.txt").write_text("x")
    script = tmp_path / "infer.py"
    script.write_text("import torch\nprint(torch.nn.Linear(4, 4)(torch.randn(2, 4)).shape)\n")
    result = runner.invoke(app, ["profile", str(script), "--output-dir", str(out)])
    assert result.exit_code == 2
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]


def test_a_child_forked_in_the_block_leaves_the_report_to_its_parent(tmp_path: Path) -> None:
    model = torch.nn.Linear(8, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with tcreport.profile(steps=range(1, 2), output_dir=tmp_path / "cm") as run:
        for _ in range(3):
            model(torch.randn(2, 8)).sum().backward()
            opt.step()
        pid = os.fork()
    if pid == 0:  # the child, out of the block: nothing written, nothing stopped
        os._exit(0 if run.report is None else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert run.report is not None and run.report.is_file()
