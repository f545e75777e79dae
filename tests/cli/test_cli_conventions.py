"""The habits users bring from other command-line tools: -h, -o -, names that match the format,
real metavars and choices in help, messages that count right, shell completion."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tcreport.cli import app, profile_cmd

ROOT = Path(__file__).resolve().parents[2]
KINETO = ROOT / "sample_traces" / "kineto-a100-tf32-alexnet"
NSYS = ROOT / "sample_traces" / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"
COMMANDS = ("report", "summary", "ingest", "profile", "diff", "check", "batch", "query")

runner = CliRunner()


@pytest.mark.parametrize("command", ("", *COMMANDS))
def test_dash_h_is_help_and_help_shows_real_metavars(command: str) -> None:
    res = runner.invoke(app, [command, "-h"] if command else ["-h"])
    assert res.exit_code == 0, res.output
    assert "Usage:" in res.stdout
    for placeholder in ("{", "<path>", "<int range>", "<list[str]>", "<str>", "<float range>"):
        assert placeholder not in res.stdout, (command, placeholder)


def test_choices_are_shown_in_help() -> None:
    assert "--backend [auto|torch|tf|dlprof|nsys]" in runner.invoke(app, ["profile", "-h"]).stdout
    assert "[markdown|json|html|terminal]" in runner.invoke(app, ["diff", "-h"]).stdout
    assert "[table|csv|json]" in runner.invoke(app, ["query", "-h"]).stdout


def test_profile_help_says_what_key_node_names_for_each_backend() -> None:
    """Issue #25: a user cannot guess that --key-node names a record_function range for torch
    but a tf.function for tf; the help says so, and the default step source."""
    text = " ".join(runner.invoke(app, ["profile", "-h"], terminal_width=200).stdout.split())
    assert (
        "torch: a torch.profiler.record_function (or NVTX) range name, an nn.Module class" in text
    )
    assert "(default: optimizer.step())" in text
    assert "tf: the Python name of the tf.function that runs one step" in text
    assert "dlprof: an op name, passed as DLProf's --key_node" in text
    assert "nsys: an NVTX range or op name" in text


def test_profile_help_says_where_the_outputs_go() -> None:
    """A newcomer read "beside it" as beside the script; they go to a new folder in the current
    directory (profile_cmd.default_output_dir), and the help says so."""
    text = " ".join(runner.invoke(app, ["profile", "-h"], terminal_width=200).stdout.split())
    assert "beside" not in text
    assert "into --output-dir (default: a new ./tcreport-<script>-<UTC time>/ folder" in text
    assert not profile_cmd.default_output_dir(Path("sub/train.py")).is_absolute()
    assert profile_cmd.default_output_dir(Path("sub/train.py")).parent == Path()


@pytest.mark.parametrize(
    ("args", "starts"),
    [
        (["report", str(KINETO), "--markdown", "-o", "-"], "### tcreport:"),
        (["report", str(KINETO), "-o", "-"], "<!DOCTYPE html>"),
        (["summary", str(KINETO), "--json", "-o", "-"], "{"),
        (["diff", str(KINETO), str(KINETO), "-f", "json", "-o", "-"], "{"),
        (["diff", str(KINETO), str(KINETO), "-o", "-"], "### tcreport diff"),
    ],
)
def test_dash_o_dash_writes_to_stdout_and_no_file(
    args: list[str], starts: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert res.stdout.lstrip().startswith(starts), res.stdout[:80]
    assert list(tmp_path.iterdir()) == []


def test_summary_json_to_a_file(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    res = runner.invoke(app, ["summary", str(KINETO), "--json", "-o", str(out)])
    assert res.exit_code == 0 and res.stdout == ""
    assert json.loads(out.read_text())["schema"] == "tcreport.summary/1"
    bad = runner.invoke(app, ["summary", str(KINETO), "-o", str(out)])
    assert bad.exit_code == 2 and "add --json" in bad.stderr


@pytest.mark.parametrize(
    ("flags", "name", "head"),
    [([], "tcreport.html", "<!DOCTYPE html>"), (["--markdown"], "tcreport.md", "### tcreport:")],
)
def test_default_output_name_matches_the_format(
    flags: list[str], name: str, head: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["report", str(KINETO), *flags])
    assert res.exit_code == 0, res.output
    assert [p.name for p in tmp_path.iterdir()] == [name]
    assert (tmp_path / name).read_text().lstrip().startswith(head)


def test_check_counts_gates_in_plain_english() -> None:
    one = runner.invoke(app, ["check", str(KINETO), "--min-tc-share", "0.1"])
    assert one.stdout.splitlines()[0] == "tcreport check: OK: 1 gate passed"
    two = runner.invoke(
        app, ["check", str(KINETO), "--min-tc-share", "0.1", "--max-eligible-not-tc-share", "1"]
    )
    assert two.stdout.splitlines()[0] == "tcreport check: OK: 2 gates passed"


def test_one_iteration_reads_naturally_in_markdown() -> None:
    md = runner.invoke(app, ["report", str(NSYS), "--markdown", "-o", "-"]).stdout
    # the sample is a 2-rank job: the line is its rank's, under the job's section
    line = next(ln for ln in md.splitlines() if ln.startswith("Nsight Systems "))
    assert line.endswith("· 1 iteration"), line
    assert not re.search(r"iterations \d+–\d+ of 1\b", md)


def test_shell_completion_is_offered_and_help_stays_light() -> None:
    res = runner.invoke(app, ["--help"])
    assert "--install-completion" in res.stdout and "--show-completion" in res.stdout
    code = (
        "import sys\nfrom tcreport.cli import main\nsys.argv = ['tcreport', '-h']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('HEAVY', sorted(m for m in ('pyarrow', 'jinja2', 'pandas') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "HEAVY []" in out


@pytest.mark.parametrize(("name", "starts"), [("d.html", "<!DOCTYPE html>"), ("d.json", "{")])
def test_diff_format_follows_the_output_suffix(tmp_path: Path, name: str, starts: str) -> None:
    """`diff A B -o diff.html` writes HTML: Markdown inside an .html file is nobody's wish."""
    trace = next(KINETO.glob("*.json.gz"))
    out = tmp_path / name
    res = runner.invoke(app, ["diff", str(trace), str(trace), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_text(encoding="utf-8").lstrip().startswith(starts)
    md = tmp_path / "d.md"
    assert runner.invoke(app, ["diff", str(trace), str(trace), "-o", str(md)]).exit_code == 0
    assert md.read_text(encoding="utf-8").lstrip().startswith("#")
