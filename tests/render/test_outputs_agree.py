"""Every output formats the same sections: no figure, threshold or word is decided outside them.

For an NVIDIA run (the bundled A100 PyTorch trace) and an AMD one (the real MI250 ROCm trace),
the summary JSON, the terminal summary, the Markdown comment, the HTML report, the notebook view
and the batch index must show each section's figures as the section holds them (formatted by
``tcreport.fmt``) and its words (the matrix unit, the verdict line, the fix-first finding); on
the AMD run no output may say "Tensor Core" or "TC" of its matrix units.
"""

from __future__ import annotations

import html as html_text
import io
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import markupsafe
import pytest
from kineto_synthetic import cpu_only_trace
from rich.console import Console
from trace_paths import REALTRACES, ROOT, SAMPLES, need

from tcreport import api, fmt
from tcreport.render import html, markdown, notebook_html, summary_json, terminal
from tcreport.render.escape import markdown as md_escape
from tcreport.report import Report

NVIDIA = SAMPLES / "kineto-a100-tf32-alexnet" / "benchmark_result_2869224_1695835535_trace.json.gz"
AMD = REALTRACES / "kineto" / "mi250-rocm-minitoy" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"


@dataclass(frozen=True)
class Outputs:
    view: Report
    data: dict[str, object]
    text: str  # terminal
    md: str
    page: str  # HTML report
    fragment: str  # notebook view
    index_row: str  # this run's row of the batch index


def _index_row(trace: Path, tmp: Path) -> str:
    archive = tmp / "in"
    archive.mkdir()
    shutil.copy(trace, archive / trace.name)
    result = api.batch(archive, tmp / "out")
    assert result.processed == 1 and not result.failed
    rows = re.findall(r'<tr id="run-[^"]*">.*?</tr>', result.index.read_text(), re.DOTALL)
    assert len(rows) == 1
    return str(rows[0])


@pytest.fixture(scope="module", params=[NVIDIA, AMD], ids=["nvidia-a100", "amd-mi250"])
def outputs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Outputs:
    trace = need(request.param)
    view = api.analyze(api.load(trace), with_timeline=True)
    console = Console(width=250, record=True, file=io.StringIO())
    terminal.render(view, console)
    return Outputs(
        view=view,
        data=json.loads(summary_json.render(view)),
        text=console.export_text(),
        md=markdown.render(view),
        page=html.render(view),
        fragment=notebook_html.render(view),
        index_row=_index_row(trace, tmp_path_factory.mktemp("batch")),
    )


def _row(text: str, label: str, value: str) -> bool:
    """A terminal headline row: the label, spaces, the value."""
    return (
        re.search(rf"^{re.escape(label)}\s+{re.escape(value)}\s*$", text, re.MULTILINE) is not None
    )


pytestmark = pytest.mark.slow


def test_the_verdict_section_reads_the_same_everywhere(outputs: Outputs) -> None:
    o, v = outputs, outputs.view.analysis.verdict
    w, share = v.words, fmt.pct(v.tc_share)
    tc, system = o.data["tensor_core"], o.data["system"]
    assert isinstance(tc, dict) and isinstance(system, dict) and system["matrix_unit"] == w.unit
    assert tc["tc_share"] == tc["kernel_time_share"] == v.tc_share  # the one name and its alias
    assert tc["classified_share"] == tc["classified_kernel_time_share"] == v.classified_share
    assert _row(o.text, f"{w.unit_one} share of kernel time", share)
    assert f"| {w.unit_one} share | eligible not on {w.short} |" in o.md
    assert f"\n| {share} | {v.miss_card.value} " in o.md
    card = f'<div class="v">{markupsafe.escape(share)}</div><div class="k">of GPU kernel time on {w.unit}</div>'
    assert card in o.page
    assert f"{html_text.escape(share)}</span> of GPU kernel time on {w.unit}" in o.fragment
    # the index names the unit in its column head and shows the bare number, sortable by data-v
    index_share = f'<td class="num" data-v="{v.tc_share}">{fmt.pct_number(v.tc_share)}</td>'
    assert index_share in o.index_row
    # the one-line verdict and its colour, decided by the section
    lead, rest = (markupsafe.escape(s) for s in v.sentence)
    assert (
        f'<p class="verdict {v.tone}" id="verdict">\n<strong>{lead}</strong>{rest}\n</p>' in o.page
    )
    assert f'<td class="v tone-{v.tone}">{lead}{rest}</td>' in o.index_row
    # eligible time not on the matrix units, and the eligible counts
    # named fix: every output shows the card's figure (per iteration over several iterations;
    # the terminal, Markdown and notebook showed the total beside the card's per iteration)
    miss, n = v.miss_card.value, fmt.count(v.eligible_not_using_op_count)
    assert tc["eligible_not_using_gpu_ns"] == v.eligible_not_using_gpu_ns
    beside = f" ({v.miss_share_words})" if v.miss_share_words else ""  # its share, by totals
    assert _row(o.text, f"Eligible GPU time not on {w.short}", miss + beside)
    assert f"{fmt.pct(v.eligible_not_tc_share)} of kernel time; {n} of " in o.page
    spread = fmt.count(v.missed_op_count)  # the ops the missed time is spread over
    assert f"eligible time not on {w.unit}: {miss} in {spread} " in o.fragment
    # named fix (hostile16): the index shows the card's figure, per iteration, as the JSON's
    per = tc["eligible_not_using_per_iteration_ns"]
    assert f'data-v="{per}">{fmt.ms_number(per)}</td>' in o.index_row
    counts = f"{fmt.count(v.eligible_op_count)} / {fmt.count(v.using_op_count)}"
    assert re.search(
        rf"^{re.escape(w.eligible)} ops / using {re.escape(w.short)}\s+{counts}",
        o.text,
        re.MULTILINE,
    )


def test_the_time_and_iteration_sections_read_the_same_everywhere(outputs: Outputs) -> None:
    o, a = outputs, outputs.view.analysis
    t, it, w = a.time, a.iterations, a.verdict.words
    gpu, tc = fmt.ns(t.gpu_kernel_ns), fmt.ns(t.tc_kernel_ns)
    assert o.data["time"] == {
        "wall_ns": t.wall_ns,
        "gpu_kernel_ns": t.gpu_kernel_ns,
        "tc_kernel_ns": t.tc_kernel_ns,
        "memory_ns": t.memory_ns,
    }
    assert _row(o.text, "GPU kernel time", gpu) and _row(o.text, f"{w.unit_one} kernel time", tc)
    assert _row(o.text, "Wall time (aggregated)", fmt.ns(t.wall_ns))
    assert f" | {gpu} |" in o.md
    assert f'<div class="d">{tc} of {gpu}</div>' in o.page
    assert f"({tc} of {gpu})" in o.fragment
    busy = t.busy_card
    if busy is not None:
        assert (
            f'<div class="v">{markupsafe.escape(busy.value)}</div><div class="k">GPU busy</div>'
            in o.page
        )
    agg, total = fmt.count(it.info.aggregated), fmt.count(it.info.total)
    iterations = o.data["iterations"]
    assert isinstance(iterations, dict)
    assert (iterations["aggregated"], iterations["total"]) == (it.info.aggregated, it.info.total)
    assert f"{agg} of {total} aggregated ({it.how or 'as reported'})" in o.text
    assert f"<dt>Iterations</dt><dd>{agg} of {total} aggregated; {it.how}</dd>" in o.page
    assert f" · {it.phrase}</div>" in o.fragment and f" · {it.phrase}\n" in o.md


def test_the_fix_first_finding_is_the_same_everywhere(outputs: Outputs) -> None:
    o, ff = outputs, outputs.view.fix_first
    if ff is None:
        assert o.data["fix_first"] is None
        assert "Fix first: no actionable finding" in o.text
        assert "**Fix first:** no actionable finding" in o.md
        assert "<strong>Fix first:</strong> no actionable finding." in o.page
        assert "<td></td><td><a href=" in o.index_row  # the index's fix-first cell is empty
        return
    first = o.data["fix_first"]
    assert isinstance(first, dict) and (first["id"], first["title"]) == (ff.id, ff.title)
    assert f"Fix first: {ff.id}: {ff.title}" in o.text
    assert f"**Fix first:** `{ff.id}` {md_escape(ff.title)}" in o.md
    assert f">{markupsafe.escape(ff.title)}</a>" in o.page.split('id="fix-first"')[1][:600]
    assert f"<td>{markupsafe.escape(f'{ff.id}: {ff.title}')}</td>" in o.index_row


def test_an_amd_run_is_never_said_to_use_tensor_cores(outputs: Outputs) -> None:
    o, w = outputs, outputs.view.analysis.verdict.words
    if outputs.view.analysis.verdict.vendor.value != "amd":
        assert w.unit == "Tensor Cores" and "Tensor Core" in o.page
        return
    assert w.unit == "AMD Matrix Cores"
    for name, text in (("terminal", o.text), ("markdown", o.md), ("html", o.page),
                       ("notebook", o.fragment), ("json", json.dumps(o.data))):  # fmt: skip
        said = re.findall(r".{0,40}(?:Tensor Core|\bTC\b|TC-eligible|TF32).{0,40}", text)
        assert said == [], (name, said)


def test_the_roofline_speaks_the_verdict_sections_words(outputs: Outputs) -> None:
    """The roofline's matrix-unit word is the verdict section's; its note, legend and column
    head are the Roofline's, shown as it holds them."""
    a, page = outputs.view.analysis, outputs.page
    r = a.throughput.roofline if a.throughput is not None else None
    if r is None:
        assert 'id="roofline"' not in page
        return
    assert r.matrix_unit == a.verdict.words.unit
    section = page.split('<section id="roofline"', 1)[1].split("</section>", 1)[0]
    if r.note is not None:
        assert str(markupsafe.escape(r.note)) in section
    for use in {p.matrix_units for p in r.points}:
        assert str(markupsafe.escape(r.use_words(use))) in section
    if r.points:
        assert f'<th scope="col">{markupsafe.escape(r.matrix_unit)}</th>' in section


def test_the_op_level_figures_read_the_same_everywhere() -> None:
    """A DLProf 0.x detailed report (no kernel table, synthetic) has only op-level figures: every
    output shows the verdict section's card, sentence and figures, labelled op-level."""
    detailed = ROOT / "tests" / "fixtures" / "dlprof-0x-tf1-xla-synthetic" / "tf1_xla_detailed.csv"
    view = api.analyze(api.load(detailed), with_timeline=True)
    v = view.analysis.verdict
    card, sentence = v.op_level_card, v.op_level_sentence
    assert card is not None and sentence is not None and v.op_level_gpu_ns is not None
    data = json.loads(summary_json.render(view))["tensor_core"]
    assert (data["op_level_gpu_ns"], data["op_level_share"]) == (
        v.op_level_gpu_ns,
        v.op_level_tc_share,
    )
    assert sentence in markdown.render(view) and "(op-level)" in card.label
    page = html.render(view)
    assert (
        f'<div class="v">{markupsafe.escape(card.value)}</div><div class="k">'
        f'{markupsafe.escape(card.label)}</div><div class="d">{markupsafe.escape(card.detail)}'
        in page
    )
    console = Console(width=250, record=True, file=io.StringIO())
    terminal.render(view, console)
    text = console.export_text()
    assert _row(text, f"{v.words.unit_one} share of op GPU time (op-level)", card.value)
    assert _row(text, "Op GPU time (op-level)", fmt.ns(v.op_level_gpu_ns))


# --- a CPU-only run: every output says "unknown without a GPU", none says 0 ----------------------


@pytest.fixture(scope="module")
def cpu_outputs(tmp_path_factory: pytest.TempPathFactory) -> Outputs:
    trace = cpu_only_trace(tmp_path_factory.mktemp("cpu") / "cpu_synthetic.json")
    view = api.analyze(api.load(trace))
    console = Console(width=250, record=True, file=io.StringIO())
    terminal.render(view, console)
    return Outputs(
        view=view,
        data=json.loads(summary_json.render(view)),
        text=console.export_text(),
        md=markdown.render(view),
        page=html.render(view),
        fragment=notebook_html.render(view),
        index_row=_index_row(trace, tmp_path_factory.mktemp("batch")),
    )


def _visible(page: str) -> str:
    """The HTML report's text as a reader sees it: no script (the embedded summary), no tags."""
    body = re.sub(r"<script.*?</script>|<style.*?</style>", "", page, flags=re.DOTALL)
    return html_text.unescape(re.sub(r"<[^>]+>", " ", body))


def test_a_cpu_only_run_says_unknown_not_zero_in_every_output(cpu_outputs: Outputs) -> None:
    o = cpu_outputs
    a, host = o.view.analysis, o.view.analysis.host
    assert host.cpu_only and host.unknown == "unknown without a GPU"
    # the analysis holds no 0 where the answer needs a GPU (which eligible ops count, too: a
    # wrapper is told from the op doing the work by its GPU time)
    v = a.verdict
    assert (v.eligible_op_count, v.using_op_count, v.eligible_not_using_op_count) == (None,) * 3
    assert (v.eligible_gpu_ns, v.eligible_not_using_gpu_ns) == (None, None)
    # summary JSON: null, never 0 or false (docs/summary-json.md)
    tc = o.data["tensor_core"]
    assert isinstance(tc, dict)
    for key in ("eligible_op_count", "using_op_count", "eligible_not_using_op_count"):
        assert tc[key] is None, key
    for key in ("eligible_gpu_ns", "eligible_not_using_gpu_ns", "tc_share", "classified_share"):
        assert tc[key] is None, key
    assert o.data["time"] == {
        "wall_ns": a.time.wall_ns,
        "gpu_kernel_ns": None,
        "tc_kernel_ns": None,
        "memory_ns": None,
    }
    ops = o.data["ops"]
    assert isinstance(ops, list) and ops
    assert all(r["uses_tc"] is None and r["gpu_ns"] is None for r in ops)
    page = _visible(o.page)
    for out, name in ((o.text, "terminal"), (o.md, "markdown"), (page, "html")):
        assert host.unknown in out, name
        assert host.gpu_run_adds and " ".join(host.gpu_run_adds.split()) in " ".join(out.split())
        assert "0 ns" not in out and "n/a" not in out, name
        assert "not on Tensor Cores" not in out and "not on TC" not in out, name
        assert "unknown GPU" not in out and host.device in out, name  # type: ignore[operator]
    fragment = html_text.unescape(o.fragment)
    assert "CPU-only" in fragment and host.unknown in fragment
    assert "unknown GPU" not in fragment and "No findings" not in fragment
    assert "0 ns" not in fragment and "n/a" not in fragment


def test_a_cpu_only_run_leads_with_the_dtype_finding_and_a_top_n_host_table(
    cpu_outputs: Outputs,
) -> None:
    """PR002 fires on the float16 softmax of a CPU trace and is the fix-first finding everywhere;
    the host table shows the top N and counts (Markdown, terminal) or folds (HTML) the rest."""
    o = cpu_outputs
    host = o.view.analysis.host
    first = o.view.fix_first
    assert first is not None and first.id == "PR002"
    assert o.data["fix_first"]["id"] == "PR002"  # type: ignore[index]
    assert f"Fix first: {first.id}: {first.title}" in o.text
    assert f"**Fix first:** `{first.id}`" in o.md
    assert "PR002" in o.fragment
    # findings come before the host tables in every output that has both
    assert o.text.index("PR002") < o.text.index("Top ops by host time")
    assert o.md.index("`PR002`") < o.md.index("| op | type | host time |")
    assert o.page.index('id="findings"') < o.page.index('id="host"')
    more = host.more_ops
    assert len(host.ops) == 32 and more == 32 - host.top
    assert f"and {more} more ops" in o.text and f"and {more} more ops" in o.md
    assert len(re.findall(r"^\| aten::", o.md, re.MULTILINE)) == host.top
    visible, folded = o.page.split("<details", 1)
    host_rows = r'<tr id="op-[^"]*"><th scope="row" class="name">aten::'
    assert len(re.findall(host_rows, visible)) == host.top
    assert len(re.findall(host_rows, folded.split("</details>", 1)[0])) == more
    assert f"Show the other {more} ops" in folded
