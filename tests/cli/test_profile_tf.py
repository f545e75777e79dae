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

from typer.testing import CliRunner, Result  # noqa: E402

import tcreport.cli.profile_cmd  # noqa: E402,F401  (registers the command until cli/app.py does)
from tcreport import api  # noqa: E402
from tcreport.cli import app  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
runner = CliRunner()

pytestmark = pytest.mark.slow


def _profile(args: list[str]) -> Result:
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
    # The summary lists the top 20 ops; a CPU run has no GPU time, so they rank by host time.
    assert any("MatMul" in (o["type"] or "") for o in summary["ops"]), summary["ops"]
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
    """A custom loop and no other step marker: nothing could be recorded; exit 2 (a usage
    error, issue #25) naming the tf.functions that did run."""
    result = _profile(
        [str(EXAMPLES / "gan_resize.py"), "--backend", "tf", "--key-node", "no_such_step",
         "--output-dir", str(tmp_path / "o"), "--", "--steps", "2"]
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--key-node 'no_such_step': no call of a tf.function of that name" in result.stderr
    assert "tf.functions it created: " in result.stderr and "train_step" in result.stderr


def test_custom_loop_without_a_step_marker_names_its_tf_functions(tmp_path: Path) -> None:
    """Issue #25: the GAN example without --key-node exited 5 after the run; the fix is an
    option, so it is a usage error, and it names the tf.function to pass."""
    result = _profile(
        [str(EXAMPLES / "gan_resize.py"), "--backend", "tf", "--output-dir", str(tmp_path / "o"),
         "--", "--steps", "2"]
    )  # fmt: skip
    assert result.exit_code == 2
    assert "pass --key-node with the name of the tf.function that runs one step" in result.stderr
    assert re.search(r"tf\.functions it created: [^)]*train_step", result.stderr)


def test_key_node_typo_beside_fit_keeps_the_run(tmp_path: Path) -> None:
    """Keras fit batches still count the steps: the window is recorded and reported, and the
    command exits 2 naming the report it kept; the typo is in no report header."""
    out = tmp_path / "o"
    result = _profile(
        [str(EXAMPLES / "mnist_keras.py"), "--backend", "tf", "--key-node", "train_stepp",
         "--output-dir", str(out), "--", "--steps", "4"]
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "--key-node 'train_stepp' never ran" in result.stderr
    assert str(out / "report.html") in result.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["iterations"]["key_node"] != "train_stepp"
    assert summary["iterations"]["aggregated"] == 3


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
    # One Model.fit and no loop around it: its step count is the run's, so the window is
    # refused when fit starts, before any training step runs (issue #25).
    assert (
        "--iter-start 50 is past the last step: Model.fit will run 3 steps (0 to 2); stopped "
        "before training"
    ) in result.stderr
    assert not (tmp_path / "o" / "plugins").exists()


def test_keras_model_audit_of_the_issue_model(tmp_path: Path) -> None:
    """Issue #25's model (mixed_float16, input 100, Dense 1000/333/77, a float16 softmax, a
    custom loop without loss scaling): each finding with the line that set it; the corrected
    script gets none."""
    out = tmp_path / "o"
    result = _profile([str(EXAMPLES / "keras_mixed.py"), "--output-dir", str(out)])
    assert result.exit_code == 0, result.output
    assert "backend tf: the script imports tensorflow/keras" in result.stderr
    found = {f["id"]: f for f in json.loads((out / "summary.json").read_text())["findings"]}
    assert {"AU001", "AU002", "PR002", "AU007"} <= set(found), sorted(found)
    sizes = found["AU001"]["detail"]
    for piece in ("features 100 → 104", "units 333 → 336", "units 77 → 80"):
        assert piece in sizes
    assert re.search(r"input_layer[_0-9]* \(keras_mixed\.py:\d+\)", sizes)
    assert re.search(r"optimizer Adam built at keras_mixed\.py:\d+", found["AU002"]["detail"])
    assert re.search(r"out_softmax \(keras_mixed\.py:\d+\)", found["PR002"]["detail"])
    fixed = tmp_path / "fixed"
    result = _profile(
        [str(EXAMPLES / "keras_mixed.py"), "--output-dir", str(fixed), "--", "--fixed"]
    )
    assert result.exit_code == 0, result.output
    left = [f["id"] for f in json.loads((fixed / "summary.json").read_text())["findings"]]
    assert not [i for i in left if i.startswith(("AU", "PR"))], left


def test_keras_callback(tmp_path: Path) -> None:
    import numpy as np
    import tensorflow as tf

    import tcreport

    keras = tf.keras
    model = keras.Sequential(
        [keras.Input(shape=(24,)), keras.layers.Dense(40), keras.layers.Dense(8)]
    )
    model.compile(optimizer="sgd", loss="mse")
    callback = tcreport.keras_callback(steps=range(1, 3), output_dir=tmp_path / "cb")
    x = np.zeros((32, 24), np.float32)
    model.fit(x, np.zeros((32, 8), np.float32), batch_size=8, callbacks=[callback], verbose=0)
    run = callback.run
    assert run.report == tmp_path / "cb" / "report.html" and run.report.is_file()
    assert run.analysed.summary()["iterations"]["aggregated"] == 2
    assert "AU006" in set(run.analysed.findings["id"])  # float32 model on a CPU


def test_diff_of_mnist_float32_vs_mixed_bfloat16_markdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #7: the same script profiled in float32 and mixed_bfloat16, diffed as Markdown.

    Times differ from run to run, so each line is checked for its exact shape and the cells that
    do not depend on timing (inputs, formats, iteration counts, the precision change) exactly.
    """
    monkeypatch.chdir(tmp_path)
    outs = {}
    for precision, name in (("float32", "fp32"), ("mixed_bfloat16", "bf16")):
        out = Path(name)
        result = _profile(
            [str(EXAMPLES / "mnist_keras.py"), "--backend", "tf", "--iter-start", "2",
             "--iter-stop", "5", "--output-dir", str(out), "--", "--precision", precision]
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        outs[precision] = out
    result = runner.invoke(app, ["diff", str(outs["float32"]), str(outs["mixed_bfloat16"])])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    fw = r"TensorFlow \d+\.\d+\.\d+"
    expected_head = [
        r"### tcreport diff",
        r"",
        r"\*\*Verdict: (better|worse|mixed|no change beyond noise)[^*]* \(precision changed: "
        r"fp32 → bf16 mixed\)\*\*",
        r"",
        r"\| \| base \| head \|",
        r"\|---\|---\|---\|",
        r"\| input \| fp32 \| bf16 \|",
        r"\| format \| tf-xplane \| tf-xplane \|",
        r"\| GPU \| unknown \| unknown \|",
        rf"\| framework \| {fw} \| {fw} \|",
        r"\| iterations aggregated \| 4 \| 4 \|",
        r"",
        r"\*\*Headline figures\*\* \(times per aggregated iteration\)",
        r"",
        r"\| figure \| base \| head \| Δ \| verdict \|",
        r"\|---\|---:\|---:\|---:\|---\|",
        r"\| GPU kernel time \| n/a \| n/a \| n/a \| unknown \|",
        r"\| Tensor Core kernel time \| n/a \| n/a \| n/a \| unknown \|",
        r"\| Tensor Core share \| n/a \| n/a \| n/a \| unknown \|",
    ]
    for pattern, line in zip(expected_head, lines, strict=False):
        assert re.fullmatch(pattern, line), (pattern, line)
    start = next(i for i, ln in enumerate(lines) if ln.startswith("**Ops** (host time) — "))
    # only the rows that changed beyond noise are listed, the rest counted (the diff's row model)
    assert re.fullmatch(
        r"\*\*Ops\*\* \(host time\) — \d+ of \d+ changed beyond noise, (top \d+ )?by \|Δ\|; "
        r"\d+ unchanged or within noise, not listed",
        lines[start],
    )
    assert lines[start + 2] == "| op | on | base | head | Δ | precision | – | verdict |"
    assert lines[start + 3] == "|---|---|---:|---:|---:|:-:|---:|---|"
    rows = []
    for line in lines[start + 4 :]:
        if not line.startswith("| "):
            break
        rows.append(line)
    cell = r"[^|]+"
    row = re.compile(
        rf"\| {cell} \| (?P<on>present|gone|new) \| {cell} \| {cell} \| {cell} "
        rf"\| (?P<prec>{cell}) \| – \| (?P<v>{cell}) \|"
    )
    verdicts = ("**improved**", "**regressed**", "changed", "new", "gone")  # changed rows only
    for line in rows:
        m = row.fullmatch(line)
        assert m, line
        assert m["v"].strip() in verdicts, line
        assert re.fullmatch(r"–|[a-z0-9]+|(–|[a-z0-9]+) → [a-z0-9]+", m["prec"].strip()), line
    # Every MatMul moved from float32 to bfloat16 (all rows are in the JSON form of the diff).
    result = runner.invoke(app, ["diff", "fp32", "bf16", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["op_clock"] == "host"
    # Both captures ran in this process, so Keras numbered the second model's scopes anew
    # (sequential_1 vs sequential_2): ops whose names differ are matched by op type.
    matmuls = [r for r in data["ops"] if "MatMul" in (r["type"] or "")]
    assert matmuls, [r["key"] for r in data["ops"]]
    assert {(r["base_dtype"], r["head_dtype"]) for r in matmuls} == {("float32", "bfloat16")}
    assert "ops compared by host time" in result.stdout
