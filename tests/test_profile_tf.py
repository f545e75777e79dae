"""``tcreport profile --backend tf``: the real TensorFlow profiler around the bundled examples.

Runs on a CPU in seconds (the examples default to small sizes). Needs the ``[tf]`` extra.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")
pytest.importorskip("xprof")

from typer.testing import CliRunner  # noqa: E402

import tcreport.cli.profile_cmd  # noqa: E402,F401  (registers the command until cli/app.py does)
from tcreport import api  # noqa: E402
from tcreport.cli import app  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
runner = CliRunner()

pytestmark = pytest.mark.slow


def _profile(args: list[str]) -> object:
    return runner.invoke(app, ["profile", *args])


def test_keras_fit_window_report(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _profile(
        [str(EXAMPLES / "mnist_keras.py"), "--backend", "tf", "--iter-start", "2", "--iter-stop", "5",
         "--output-dir", str(out), "--", "--precision", "mixed_bfloat16"]
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["source"]["format"] == "tf-xplane"
    it = summary["iterations"]
    assert (it["aggregated"], it["start"], it["stop"], it["total"]) == (4, 2, 5, 10)
    # The summary lists the top 20 ops by GPU time; a CPU run has none, so until the analysis
    # falls back to host time the MatMul ops are checked in the report and the canonical tables.
    html = (out / "report.html").read_text()
    # Keras numbers scopes per process (sequential_1, dense_1_1, ...): match the pattern.
    assert re.search(r"sequential[_0-9]*/dense_1[_0-9]*/MatMul", html)
    run = api.load(next((out / "plugins" / "profile").iterdir()))
    assert run.ops is not None
    matmuls = [r for r in run.ops.to_pylist() if "MatMul" in (r["type"] or "")]
    assert len(matmuls) >= 6, [r["name"] for r in run.ops.to_pylist()]  # 3 forward, 5 gradient
    assert {r["dtype"] for r in matmuls} == {"bfloat16"}  # the float32 softmax has no MatMul
    assert "Tensor Core analysis needs a GPU run" in html
    assert "Precision mix" in html and "Op time share" in html
    profiles = list((out / "plugins" / "profile").glob("*/*.xplane.pb"))
    assert len(profiles) == 1, "raw profile kept beside the report"


def test_custom_loop_key_node(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _profile(
        [str(EXAMPLES / "gan_resize.py"), "--backend", "tf", "--key-node", "train_step",
         "--iter-start", "1", "--iter-stop", "2", "--output-dir", str(out), "--", "--steps", "4"]
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    it = summary["iterations"]
    assert (it["key_node"], it["aggregated"], it["total"]) == ("train_step", 2, 4)
    types = {o["type"] for o in json.loads((out / "summary.json").read_text())["ops"]}
    assert types, "ops were read"


def test_key_node_that_never_runs(tmp_path: Path) -> None:
    result = _profile(
        [str(EXAMPLES / "gan_resize.py"), "--backend", "tf", "--key-node", "no_such_step",
         "--output-dir", str(tmp_path / "o"), "--", "--steps", "2"]
    )  # fmt: skip
    assert result.exit_code == 5
    assert "no call of a tf.function named 'no_such_step'" in result.stderr


def test_script_failure_is_partial_and_propagates(tmp_path: Path) -> None:
    script = tmp_path / "dies.py"
    script.write_text(
        "import sys, runpy\n"
        f"sys.argv = [{str(EXAMPLES / 'mnist_keras.py')!r}, '--steps', '4']\n"
        "import tensorflow as tf\n"
        "class Stop(tf.keras.callbacks.Callback):\n"
        "    def on_train_batch_end(self, batch, logs=None):\n"
        "        if batch == 2:\n"
        "            raise SystemExit(3)\n"
        "orig = tf.keras.Model.fit\n"
        "tf.keras.Model.fit = lambda self, *a, **k: orig(self, *a, callbacks=[Stop()], **k)\n"
        f"runpy.run_path({str(EXAMPLES / 'mnist_keras.py')!r}, run_name='__main__')\n"
    )
    out = tmp_path / "out"
    result = _profile(
        [
            str(script),
            "--backend",
            "tf",
            "--iter-start",
            "1",
            "--iter-stop",
            "3",
            "--output-dir",
            str(out),
        ]
    )
    assert result.exit_code == 3, result.output
    assert "the script exited with code 3" in result.stderr
    html = (out / "report.html").read_text()
    assert "Partial profile: the script exited with code 3" in html
    summary = json.loads((out / "summary.json").read_text())
    # Step 1 completed; step 2 was cut short by the exit (its end callback never ran), so the
    # window holds one whole step.
    assert (summary["iterations"]["start"], summary["iterations"]["aggregated"]) == (1, 1)


def test_iter_start_past_the_end(tmp_path: Path) -> None:
    result = _profile(
        [str(EXAMPLES / "mnist_keras.py"), "--backend", "tf", "--iter-start", "50",
         "--output-dir", str(tmp_path / "o"), "--", "--steps", "3"]
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--iter-start 50 is past the last step; the script ran 3" in result.stderr
