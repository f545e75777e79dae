"""The notebook API, used as a notebook would: tcreport.open on each bundled sample, DataFrames
with Arrow-backed dtypes, the summary dict, the HTML report, a batch dataset, the docs' example."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from trace_paths import batch_samples
from typer.testing import CliRunner

import tcreport
from tcreport import api
from tcreport.analysis.derived import IterationRow
from tcreport.analysis.figures import KernelRow, OpRow
from tcreport.analysis.groups import OpTypeRow
from tcreport.cli import app
from tcreport.cli._common import FLAGS
from tcreport.notebook_job import AnalysedJob
from tcreport.rules.base import Finding

ROOT = Path(__file__).resolve().parents[2]
KINETO = ROOT / "sample_traces" / "kineto-a100-tf32-alexnet"
NSYS = ROOT / "sample_traces" / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"

#: sample -> (kernels, ops, op_types, iterations, findings, launches) rows: the bundled files' own
SHAPES = {
    # findings: TC001 (TF32 off for addmm), TC004 (cuDNN chose CUDA-core kernels), GP001, IT001
    KINETO: (16, 37, 36, 0, 4, 79),
    # the nsys sample is a 2-process torchrun export, read as a job: the figures are rank 0's
    # (process 148 on GPU 0, the straggler shown in full), 1,793 of the file's 3,587 launches
    NSYS: (11, 76, 32, 1, 2, 1793),
}
#: kernel rows rank 1 of the nsys sample adds to a batch dataset
NSYS_RANK1_KERNELS = 11
#: the report's row types, field for field (tuple fields and a renderer's colour slot left out)
ROW_TYPES = {
    "kernels": KernelRow,
    "ops": OpRow,
    "op_types": OpTypeRow,
    "iterations": IterationRow,
    "findings": Finding,
}


def _columns(name: str) -> list[str]:
    cols = [
        f.name
        for f in dataclasses.fields(ROW_TYPES[name])
        if not str(f.type).startswith("tuple") and f.name != "css"
    ]
    extra = {
        "ops": ["missed_tc", "partly_missed", "has_misses", "missed_ns"],
        "findings": ["evidence"],
    }.get(name, [])
    cols = ["type" if (name, c) == ("op_types", "name") else c for c in cols]
    return cols + extra


runner = CliRunner()


@pytest.fixture(
    scope="module",
    params=sorted(SHAPES),
    ids=lambda p: (p if p.is_dir() else p.parent).name,  # the sample folder's name
)
def opened(request: pytest.FixtureRequest) -> tuple[Path, tcreport.notebook.AnalysedRun]:
    got = tcreport.open(request.param)
    return request.param, got.detail if isinstance(got, AnalysedJob) else got


def test_frames_have_the_samples_shapes_and_arrow_dtypes(
    opened: tuple[Path, tcreport.notebook.AnalysedRun],
) -> None:
    path, run = opened
    names = ("kernels", "ops", "op_types", "iterations", "findings", "launches")
    frames = {n: getattr(run, n) for n in names}
    assert tuple(len(frames[n]) for n in names) == SHAPES[path]
    for name in ROW_TYPES:
        assert list(frames[name].columns) == _columns(name), name
    assert {"name", "calls", "gpu_ns", "share", "uses_tc", "tc_rule"} <= set(frames["kernels"])
    assert {"type", "ops", "calls", "gpu_ns", "share"} <= set(frames["op_types"])
    for name, df in frames.items():
        assert isinstance(df, pd.DataFrame)
        bad = {c: str(t) for c, t in df.dtypes.items() if not isinstance(t, pd.ArrowDtype)}
        assert not bad, (name, bad)
    k = frames["kernels"]
    assert str(k.dtypes["gpu_ns"]) == "int64[pyarrow]"
    assert str(k.dtypes["name"]) == "string[pyarrow]"
    assert str(k.dtypes["uses_tc"]) == "bool[pyarrow]"
    assert str(frames["findings"].dtypes["evidence"]).startswith("list<")


def test_frames_are_the_reports_own_figures(
    opened: tuple[Path, tcreport.notebook.AnalysedRun],
) -> None:
    path, run = opened
    s = run.summary()
    assert s["time"]["gpu_kernel_ns"] == run.kernels["gpu_ns"].sum()
    tc = run.kernels.loc[run.kernels["uses_tc"].fillna(False), "gpu_ns"].sum()
    assert s["time"]["tc_kernel_ns"] == tc
    assert s["time"]["gpu_kernel_ns"] == run.launches["duration_ns"].sum()
    assert list(run.findings["id"]) == [f["id"] for f in s["findings"]]
    # named fix: the frame's missed_tc is OpRow.missed_tc, "missed in every call" (the JSON's
    # eligible_not_using_op_count, which adds up with using_op_count to the eligible); "in all or
    # some calls" is has_misses (the JSON's missed_op_count); it was missed_tc here
    ops, tc = run.ops, s["tensor_core"]
    assert tc["eligible_not_using_op_count"] == int(ops["missed_tc"].sum())
    assert tc["missed_op_count"] == int(ops["has_misses"].sum())
    assert (ops["has_misses"] == (ops["missed_tc"] | ops["partly_missed"])).all()
    assert tc["eligible_not_using_gpu_ns"] == int(ops["missed_ns"].sum())


def test_summary_is_the_summary_json_and_to_html_the_report(
    opened: tuple[Path, tcreport.notebook.AnalysedRun], tmp_path: Path
) -> None:
    path, run = opened
    cli = runner.invoke(app, ["summary", str(path), "--json"])
    doc = json.loads(cli.stdout)
    assert run.summary() == (doc["detail"]["summary"] if "job" in doc else doc)  # a job: its rank
    html = run.to_html(tmp_path / "r.html")
    assert html == api.render_html(run.report)
    assert (tmp_path / "r.html").read_text(encoding="utf-8") == html


def test_inline_html_has_the_verdict_and_findings_and_nothing_that_loads(
    opened: tuple[Path, tcreport.notebook.AnalysedRun],
) -> None:
    _, run = opened
    frag = run._repr_html_()
    share = run.summary()["tensor_core"]["kernel_time_share"]
    assert f"{share * 100:.1f} %" in frag
    for fid in run.findings["id"]:
        assert fid in frag
    assert not re.search(r"<(script|style|link|img|iframe|object|embed|meta)\b", frag, re.I)
    assert not re.search(r"\b(src|href|srcset)\s*=", frag, re.I)
    assert "url(" not in frag and "@import" not in frag
    assert "Tensor Core share" in repr(run)


def test_iteration_options_reach_the_analysis() -> None:
    full = tcreport.open(KINETO)
    sliced = tcreport.open(KINETO, iter_start=0, iter_stop=0)
    assert sliced.summary()["iterations"]["start"] == 0
    assert sliced.summary()["tensor_core"] == full.summary()["tensor_core"]
    with pytest.raises(tcreport.errors.UsageError, match="iter_stop 0 is before iter_start 1"):
        tcreport.open(KINETO, iter_start=1, iter_stop=0)


def test_open_refuses_an_unknown_key_node_like_the_cli() -> None:
    cli = runner.invoke(app, ["summary", str(KINETO), "--key-node", "nosuch"])
    assert cli.exit_code == 2
    with pytest.raises(tcreport.errors.OptionError) as raised:
        tcreport.open(KINETO, key_node="nosuch")
    # the same sentence, each naming the option as its user spells it
    assert str(raised.value).endswith(": key_node 'nosuch' never occurs in this trace, so nothing "
                                      "would be sliced; key nodes that repeat once per iteration "
                                      "here: none found (allow_empty to aggregate the whole run "
                                      "anyway)")  # fmt: skip
    spelt = raised.value.spelt(FLAGS)
    assert f"tcreport: error: {raised.value.path}: {spelt}" == cli.stderr.strip()
    assert "\n" not in str(raised.value)
    assert tcreport.open(KINETO, key_node="nosuch", allow_empty=True).summary()["iterations"]


def test_open_and_summary_json_agree_on_a_folder_path_with_a_slash() -> None:
    arg = f"{KINETO}/"
    cli = runner.invoke(app, ["summary", arg, "--json"])
    assert (
        tcreport.open(arg).summary()["source"]["path"] == json.loads(cli.stdout)["source"]["path"]
    )


def test_read_dataset_gives_the_batch_tables(tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = runner.invoke(app, ["batch", str(batch_samples(tmp_path / "in")), "-o", str(out)])
    assert res.exit_code == 0, res.output
    tables = tcreport.read_dataset(out)
    assert sorted(tables) == ["findings", "kernels", "ops", "runs", "steps"]  # steps: issue 23
    runs = tables["runs"]
    assert runs["rank"].isna().sum() == 2 and len(runs) == 4  # the nsys job: a row per rank
    assert {"gpu", "month", "gpu_model", "tc_share"} <= set(runs.columns)
    assert all(isinstance(t, pd.ArrowDtype) for t in runs.dtypes)
    kernels = sum(s[0] for s in SHAPES.values()) + NSYS_RANK1_KERNELS
    assert len(tables["kernels"]) == kernels
    with pytest.raises(tcreport.errors.InputError, match="no tcreport batch dataset"):
        tcreport.read_dataset(tmp_path)
    # the docs' example keeps the run whose trace names no GPU (gpu_model null): a newcomer's
    # groupby("gpu_model") dropped it silently
    assert runs["gpu_model"].isna().sum() == 3  # the nsys job's row and its two ranks' rows
    assert set(runs.loc[runs["gpu_model"].isna(), "gpu"]) == {"unknown"}
    text = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    example = re.search(r"^(runs\.groupby\(.*?\))\s*(?:#.*)?$", text, re.M)
    assert example is not None
    described = eval(example.group(1), {"runs": runs})  # the docs' line, as a reader runs it
    assert described["count"].sum() == len(runs)


def test_the_docs_example_runs() -> None:
    text = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", text, re.S)
    assert code is not None
    out = subprocess.run(
        [sys.executable, "-c", code.group(1)], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "0.1696" in out.stdout


def test_import_tcreport_stays_light() -> None:
    code = (
        "import sys, tcreport\n"
        "print(sorted(m for m in ('pandas', 'pyarrow', 'jinja2', 'numpy') if m in sys.modules))\n"
        "tcreport.open\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[0] == "[]"
    assert out[1] == "False"  # tcreport.open exists without importing pandas: the call imports it


def test_launches_are_numbered_like_the_iterations() -> None:
    """``.launches`` carries the analysis's iteration numbers, not the reader's: split at a key
    node, the launches' iterations are the rows of ``.iterations``."""
    job = tcreport.open(NSYS, key_node="FlashAttnFunc")
    assert isinstance(job, AnalysedJob)
    run = job.detail
    numbers = set(run.iterations["iteration"].tolist())
    assert len(numbers) > 1
    assert set(run.launches["iteration"].dropna().unique().tolist()) <= numbers
    assert run.launches["iteration"].dropna().nunique() > 1
