"""``tcreport profile`` with the ``torch`` backend: the real ``torch.profiler`` around small scripts.

Runs on a CPU in seconds per script (tiny models, synthetic data). Needs PyTorch (the ``[torch]``
extra); skipped without it, except where ``TCREPORT_REQUIRE_TORCH=1`` (``.ci/run``, which installs
the CPU wheel) makes a missing PyTorch fail.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import torch
except ImportError:
    if os.environ.get("TCREPORT_REQUIRE_TORCH") == "1":
        raise
    pytest.skip("needs PyTorch (pip install torch==2.13.0)", allow_module_level=True)

from typer.testing import CliRunner, Result  # noqa: E402

import tcreport  # noqa: E402
from tcreport.cli import app  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CNN = ROOT / "examples" / "torch_cnn.py"
SMALL = ["--image-size", "8", "--batch-size", "4", "--steps", "6"]
runner = CliRunner()

pytestmark = pytest.mark.slow

LOOP = """\
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(24, 40)

    def forward(self, x):
        return torch.relu(self.fc(x))


model = nn.Sequential(Block(), nn.Linear(40, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def train_step(x):
    with torch.profiler.record_function("my_step"):
        loss = model(x).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()


for i in range(STEPS):
    train_step(torch.randn(4, 24))
"""


def _script(tmp_path: Path, steps: int = 6, text: str = LOOP) -> Path:
    p = tmp_path / "train.py"
    p.write_text(text.replace("STEPS", str(steps)))
    return p


def _profile(*args: str) -> Result:
    return runner.invoke(app, ["profile", *args])


def _summary(out: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((out / "summary.json").read_text())
    return data


def _run_dirs(out: Path) -> list[Path]:
    return sorted((out / "plugins" / "profile").iterdir())


def _sidecar(out: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((_run_dirs(out)[-1] / "tcreport-capture.json").read_text())
    return data


def _findings(out: Path) -> dict[str, dict[str, str]]:
    return {f["id"]: f for f in _summary(out)["findings"]}  # type: ignore[attr-defined]


def test_auto_picks_torch_records_the_window_and_audits(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _profile(str(CNN), "--iter-start", "2", "--iter-stop", "4", "--output-dir", str(out),
                      "--", *SMALL)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "tcreport: backend torch: the script imports torch" in result.stderr
    assert "tcreport: step" not in result.stderr, "no step counter when stderr is not a terminal"
    summary = _summary(out)
    assert summary["source"]["format"] == "kineto-json"  # type: ignore[index]
    assert summary["iterations"]["aggregated"] == 3  # type: ignore[index]
    (run,) = _run_dirs(out)
    trace = json.loads((run / "torch_cnn.pt.trace.json").read_text())
    steps = sorted(e["name"] for e in trace["traceEvents"] if e["name"].startswith("ProfilerStep#"))
    assert steps == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"], "only the window"
    side = _sidecar(out)
    assert side["window"] == [2, 4] and side["steps_seen"] == 6
    assert side["step_source"] == "optimizer.step() calls"
    ops = tcreport.open(out).ops
    assert ops["scope"].str.contains("Sequential").any(), "ops carry their module"
    found = _findings(out)
    assert {"AU003", "AU004", "AU006"} <= set(found)
    assert re.search(r"Sequential\.0 \(torch_cnn\.py:\d+\)", found["AU004"]["detail"])
    assert "expected on a GPU" in found["AU006"]["detail"]
    # the answer is on the terminal too, in the report's words: the verdict, then the fix first
    fix_first = summary["fix_first"]
    assert (
        "tcreport: CPU-only run: no GPU kernels. There is no Tensor Core verdict" in result.stderr
    )
    assert f"tcreport: fix first: {fix_first['id']}: {fix_first['title']}" in result.stderr  # type: ignore[index]


def test_float16_audit_and_the_corrected_script(tmp_path: Path) -> None:
    out = tmp_path / "fp16"
    result = _profile(str(CNN), "--output-dir", str(out), "--", *SMALL, "--precision", "float16")
    assert result.exit_code == 0, result.output
    found = _findings(out)
    assert {"AU001", "AU002", "AU004", "AU005"} <= set(found), sorted(found)
    assert "PR002" not in found, "autocast keeps the loss in float32"
    assert "out_features 333 → 336" in found["AU001"]["detail"]
    assert re.search(r"torch_cnn\.py:\d+", found["AU002"]["detail"])
    fixed = tmp_path / "fixed"
    result = _profile(str(CNN), "--output-dir", str(fixed), "--", *SMALL, "--precision",
                      "float16", "--fixed")  # fmt: skip
    assert result.exit_code == 0, result.output
    left = {i: f for i, f in _findings(fixed).items() if i.startswith(("AU", "PR"))}
    # --fixed keeps the 3 input (RGB) channels of the first convolution, as on the H200 recording
    # (sample_traces/h200-torch-cnn-ncu): its calls missed Tensor Cores there (TC003), so AU001
    # naming that one size, and nothing else, is the audit agreeing with the hardware.
    assert set(left) == {"AU001"}, sorted(left)
    # a CPU-only run's calls ran on no Tensor Core: they say nothing of whether a size missed one
    assert "in this trace" not in left["AU001"]["detail"]
    assert left["AU001"]["severity"] == "medium"
    assert re.search(
        r"Padded sizes: Sequential\.0 \(torch_cnn\.py:\d+\): in_channels 3 → 8\.$",
        left["AU001"]["detail"],
    )


@pytest.mark.parametrize(
    ("key", "source"),
    [
        ("train_step", "calls of the function named 'train_step'"),
        ("my_step", "record_function/NVTX ranges named 'my_step'"),
        ("Block", "forward calls of nn.Module named 'Block'"),
    ],
)
def test_key_node_function_range_or_module(tmp_path: Path, key: str, source: str) -> None:
    out = tmp_path / "out"
    result = _profile(str(_script(tmp_path)), "--key-node", key, "--iter-start", "1",
                      "--iter-stop", "3", "--output-dir", str(out))  # fmt: skip
    assert result.exit_code == 0, result.output
    side = _sidecar(out)
    assert side["step_source"] == source and side["window"] == [1, 3]
    assert side["key_node"] == key
    assert _summary(out)["iterations"]["aggregated"] == 3  # type: ignore[index]


def test_key_node_typo_exits_2_with_candidates_and_keeps_the_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _profile(str(_script(tmp_path)), "--key-node", "train_stepp", "--output-dir", str(out))
    assert result.exit_code == 2, result.output
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("tcreport: error:")]
    assert "--key-node 'train_stepp' never ran" in line
    assert "train_step" in line and "my_step" in line  # what did run
    (run,) = _run_dirs(out)
    assert str(run / "train.pt.trace.json") in line and str(out / "report.html") in line
    # the way on from here: re-analyse the kept profile (--allow-empty there for the whole run)
    assert f"`tcreport report {run / 'train.pt.trace.json'} --key-node NAME`" in line
    assert "--allow-empty there aggregates the whole run" in line
    html = (out / "report.html").read_text()
    assert "never ran, so the steps were counted by the default step source" in html
    assert _sidecar(out)["key_node"] is None, "no typo in the report header"


def test_iter_start_past_the_last_step(tmp_path: Path) -> None:
    result = _profile(str(_script(tmp_path, steps=3)), "--iter-start", "50", "--output-dir",
                      str(tmp_path / "o"))  # fmt: skip
    assert result.exit_code == 2
    assert "--iter-start 50 is past the last step: train.py ran 3 steps (0 to 2)" in result.stderr


def test_script_without_steps_names_the_way_out(tmp_path: Path) -> None:
    script = tmp_path / "infer.py"
    script.write_text("import torch\nprint(torch.nn.Linear(4, 4)(torch.randn(2, 4)).shape)\n")
    result = _profile(str(script), "--output-dir", str(tmp_path / "o"))
    assert result.exit_code == 2
    assert "no training steps seen: infer.py called no optimizer.step(); pass --key-node" in (
        result.stderr
    )


def test_failure_in_the_window_is_partial_and_propagates(tmp_path: Path) -> None:
    text = LOOP.replace("    train_step(torch.randn(4, 24))", "    train_step(torch.randn(4, 24))\n"
                        "    if i == 2:\n        raise SystemExit(3)")  # fmt: skip
    out = tmp_path / "out"
    result = _profile(str(_script(tmp_path, text=text)), "--output-dir", str(out))
    assert result.exit_code == 3, result.output
    assert "Partial profile: the script exited with code 3" in (out / "report.html").read_text()
    assert _sidecar(out)["window"] == [1, 2]


def test_profiling_again_adds_a_run_and_readers_take_the_newest(tmp_path: Path) -> None:
    out = tmp_path / "out"
    script = _script(tmp_path)
    for _ in range(2):
        assert _profile(str(script), "--output-dir", str(out)).exit_code == 0
    runs = _run_dirs(out)
    assert len(runs) == 2
    result = runner.invoke(app, ["report", str(out), "--markdown", "-o", "-"])
    assert result.exit_code == 0, result.output
    said = f"2 profiling runs under plugins/profile; this is the newest, {runs[-1].name}"
    assert said in " ".join(result.stdout.replace("\\", "").split())  # Markdown escapes _


def test_step_counter_on_a_terminal(tmp_path: Path) -> None:
    """The counter is for people watching: on a TTY it shows, piped it does not (see above)."""
    script = _script(tmp_path, steps=4)
    main, child = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tcreport", "profile", str(script), "--iter-start", "1",
         "--iter-stop", "2",
         "--output-dir", str(tmp_path / "o")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=child, cwd=tmp_path,
    )  # fmt: skip
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(main)
    assert proc.wait(timeout=300) == 0
    text = b"".join(chunks).decode("utf-8", "replace")
    assert "tcreport: step 1, recording 1–2" in text, text


def test_python_context_manager(tmp_path: Path) -> None:
    from torch import nn

    model = nn.Sequential(nn.Linear(24, 40), nn.ReLU(), nn.Linear(40, 8))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with tcreport.profile(steps=range(2, 4), output_dir=tmp_path / "cm") as run:
        for _ in range(5):
            model(torch.randn(4, 24)).sum().backward()
            opt.step()
            opt.zero_grad()
    assert run.report == tmp_path / "cm" / "report.html" and run.report.is_file()
    assert run.analysed is not None
    assert run.analysed.summary()["iterations"]["aggregated"] == 2
    assert "AU006" in set(run.analysed.findings["id"])
    # A loop with no optimizer marks its steps itself.
    with tcreport.profile(steps=range(1, 2), output_dir=tmp_path / "manual") as manual:
        for _ in range(3):
            model(torch.randn(4, 24))
            manual.step()
    assert manual.trace is not None and manual.trace.is_file()


def test_a_window_past_the_scripts_end_counts_only_the_steps_it_ran(tmp_path: Path) -> None:
    """Issue 25, a newcomer's round: ``--iter-start 25 --iter-stop 40`` on a 30-step script kept
    steps 25-29 but reported "6 of 6 aggregated": the ``ProfilerStep#30`` stub torch.profiler
    opens as the script ends was counted as a step."""
    out = tmp_path / "out"
    res = _profile(str(_script(tmp_path, 30)), "--iter-start", "25", "--iter-stop", "40",
                   "--output-dir", str(out))  # fmt: skip
    assert res.exit_code == 0, res.output
    iters = _summary(out)["iterations"]
    assert isinstance(iters, dict)
    assert (iters["total"], iters["aggregated"]) == (5, 5)


def test_the_fixed_cnn_makes_no_batch_on_the_host_in_its_steps(tmp_path: Path) -> None:
    """``--fixed`` makes its batch once, on the device, before the steps: the profiled steps hold
    no host op drawing random numbers (``aten::normal_``, ``aten::randint``) and no copy to the
    device, so GP001 has no host wait to name. The plain script still draws one each step."""
    plain, fixed = tmp_path / "plain", tmp_path / "fixed"
    for out, extra in ((plain, []), (fixed, ["--fixed"])):
        result = _profile(str(CNN), "--output-dir", str(out), "--", *SMALL, *extra)
        assert result.exit_code == 0, result.output
    drawn = {"aten::normal_", "aten::randint", "aten::random_"}

    def ops(out: Path) -> set[str]:
        view = tcreport.api.analyze(tcreport.api.load(_run_dirs(out)[-1]))
        return {o.name for o in view.analysis.breakdown.ops}

    assert drawn & ops(plain), "the plain script draws its batch in every step"
    assert not drawn & ops(fixed), sorted(drawn & ops(fixed))
