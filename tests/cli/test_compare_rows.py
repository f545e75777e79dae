"""``tcreport diff``'s one row model: present/gone/new first, then deltas, for ops, op types and
kernels alike; a lost matrix-unit verdict is a regression; the Markdown lists only what changed.

On the two bundled samples (a forced diff: an A100 Kineto trace against a 2x H100 Nsight export)
and on a real pair (the two ranks of one Kineto capture), plus a synthetic row for the one case no
real pair shows: an op that got faster while leaving the Tensor Cores.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest
from synthetic import synthetic_run
from trace_paths import H200_NCU, REALTRACES, SAMPLES

from tcreport import api, fmt
from tcreport.analysis.sections.verdict import words_for
from tcreport.analysis.vendor import Vendor
from tcreport.compare import diff as compare
from tcreport.compare import gates, rows
from tcreport.compare.model import CHANGED, ROW_NOISE_FLOOR_NS, Change, Diff, Presence, RowDiff
from tcreport.render import diff_html, diff_json, diff_markdown
from tcreport.render.escape import markdown as esc
from tcreport.report import Report

A100 = SAMPLES / "kineto-a100-tf32-alexnet"
H100X2 = SAMPLES / "nsys-h100x2-bf16"
RANKS = REALTRACES / "kineto" / "two-rank-sampled"
WORDS = words_for(Vendor.NVIDIA)


@cache
def _report(path: Path) -> Report:
    return api.analyze(api.load(path), source_path=path.name)


def _tables(d: Diff) -> tuple[tuple[str, tuple[RowDiff, ...]], ...]:
    return (("op", d.ops), ("type", d.op_types), ("kernel", d.kernels))


def _assert_one_row_model(d: Diff) -> None:
    """Every row says where it ran first; only rows on both sides have deltas, and none of them
    is 'x → 0 ns' (a side that ran nothing is not on that side)."""
    for _, table in _tables(d):
        for r in table:
            if r.presence is Presence.BOTH:
                assert r.base_ns != 0 and r.head_ns != 0, r
                assert r.verdict not in (Change.NEW, Change.GONE), r
            else:
                assert r.delta_ns is None and r.rel is None, r
                assert r.verdict.value == r.presence.value, r
                assert (r.base_ns is None) == (r.presence is Presence.NEW), r


@pytest.mark.parametrize("order", ["a100-first", "h100-first"])
def test_an_op_absent_on_one_side_is_gone_or_new_in_every_table(order: str) -> None:
    base, head = (A100, H100X2) if order == "a100-first" else (H100X2, A100)
    d = compare.diff(_report(base), _report(head), force=True)
    _assert_one_row_model(d)
    # aten::linear did GPU work only in the H100 run (in the A100 trace it is a wrapper whose
    # kernels count under aten::addmm): it was "52.2 ms → 0 ns, yes → no, improved" in the ops
    # and "gone" in the op types
    want = Change.NEW if order == "a100-first" else Change.GONE
    linear = [r for _, t in _tables(d) for r in t if r.key.endswith("aten::linear")]
    assert len(linear) == 2  # "ops of type aten::linear" in the ops, "aten::linear" in the op types
    assert {r.verdict for r in linear} == {want}
    assert all(r.key != "aten::linear" for r in d.ops)


def test_self_diff_lists_no_row_in_markdown_but_every_row_in_json_and_html() -> None:
    r = _report(A100)
    d = compare.diff(r, r)
    md = diff_markdown.render(d, "0")
    assert "| present |" not in md and "| op |" not in md
    for title, table in (("Ops", d.ops), ("Op types", d.op_types), ("Kernels", d.kernels)):
        assert f"**{title}** — none of {len(table)} changed beyond noise" in md
        assert table and not any(x.changed for x in table)
    data = json.loads(diff_json.render(d, "0"))
    assert [x["key"] for x in data["ops"]] == [x.key for x in d.ops]
    assert {x["presence"] for x in data["kernels"]} == {"present"}
    page = diff_html.render(d, "0")
    assert page.count("<td>present</td>") == len(d.ops) + len(d.op_types) + len(d.kernels)


def test_markdown_lists_exactly_the_changed_rows_and_counts_the_rest() -> None:
    """A real pair: the two ranks of one data-parallel capture (same GPU, same framework)."""
    b, h = RANKS / "sampled_rank-0.json.gz", RANKS / "sampled_rank-1.json.gz"
    if not b.exists():
        pytest.skip("real traces not available")
    d = compare.diff(_report(b), _report(h))
    _assert_one_row_model(d)
    md = diff_markdown.render(d, "0")
    for title, table in (("Ops", d.ops), ("Op types", d.op_types), ("Kernels", d.kernels)):
        changed = [x for x in table if x.verdict in CHANGED]
        assert 0 < len(changed) < len(table)
        rest = len(table) - len(changed)
        head = f"**{title}** — {len(changed)} of {len(table)} changed beyond noise"
        line = next(x for x in md.splitlines() if x.startswith(head))
        assert line.endswith(f"; {rest} unchanged or within noise, not listed")
    # every listed row is one that changed, and the JSON keeps the unchanged ones too
    listed = re.findall(r"^\| .* \| (?:present|gone|new) \| .* \| ([^|]+) \|$", md, flags=re.M)
    assert listed and not {v.strip("* ") for v in listed} & {"no change", "noise"}
    data = json.loads(diff_json.render(d, "0"))
    assert len(data["kernels"]) == len(d.kernels)
    assert sum(x["changed"] for x in data["kernels"]) == sum(x.changed for x in d.kernels)


def test_long_kernel_names_are_shortened_in_the_middle() -> None:
    d = compare.diff(_report(A100), _report(H100X2), force=True)
    md = diff_markdown.render(d, "0")
    shown = [x for x in d.kernels if x.changed][: diff_markdown.ROW_CAPS[0]]
    long = [x for x in shown if len(x.key) > diff_markdown.NAME_W]
    assert long
    for x in long:
        short = fmt.middle(x.key, diff_markdown.NAME_W)
        assert short.startswith(x.key[:30]) and short.endswith(x.key[-30:])
        assert f"| {esc(short)} |" in md
    assert "| …" not in md  # nothing is cut from the front any more


def _acc(ns: float, uses_tc: bool) -> rows._Acc:
    return rows._Acc(ns, ns if uses_tc else 0.0, 0.0, "linear", True, True, "float32", uses_tc)


def test_synthetic_lost_tensor_cores_is_a_regression_even_when_faster() -> None:
    # µs-sized rows: a change under ROW_NOISE_FLOOR_NS is noise whatever its share
    faster_off_tc = rows._row("fc", _acc(100_000.0, True), _acc(50_000.0, False), "name", 0.01)
    assert faster_off_tc is not None and faster_off_tc.tc_lost
    assert faster_off_tc.verdict is Change.REGRESSED
    assert faster_off_tc.tc_note(WORDS) == "no longer on TC"
    # on Tensor Cores now and slower: the two disagree, so neither "regressed" nor "improved"
    slower_on_tc = rows._row("fc", _acc(50_000.0, False), _acc(100_000.0, True), "name", 0.01)
    assert slower_on_tc is not None and slower_on_tc.verdict is Change.CHANGED
    assert slower_on_tc.changed and slower_on_tc.tc_note(WORDS) == "now on TC, slower"
    same_on_tc = rows._row("fc", _acc(100_000.0, False), _acc(100_000.0, True), "name", 0.01)
    assert same_on_tc is not None and same_on_tc.verdict is Change.IMPROVED
    assert same_on_tc.tc_note(WORDS) == "now on TC"


def test_synthetic_lost_tensor_cores_counts_in_verdict_line_and_gate() -> None:
    bf16 = api.analyze(synthetic_run("bf16", "model"), source_path="synthetic-bf16")
    fp32 = api.analyze(synthetic_run("fp32", "model"), source_path="synthetic-fp32")
    d = compare.diff(bf16, fp32)
    assert d.tc_lost == ("model/fc1/linear", "model/fc2/linear")
    assert d.ops[0].tc_lost and d.ops[1].tc_lost  # listed first: a capped table keeps them
    assert d.verdict.startswith("worse:") and "2 ops no longer on Tensor Cores" in d.verdict
    result = gates.check(fp32, gates.Gates(max_regression=10.0), baseline=bf16)
    lost = [g for g in result.failures if "no longer do" in g.message]
    assert len(lost) == 1 and "model/fc1/linear" in lost[0].message
    # a generous time limit does not excuse it; a self-check passes
    assert gates.check(bf16, gates.Gates(max_regression=10.0), baseline=bf16).passed


def test_sub_microsecond_row_changes_are_noise_not_regressions() -> None:
    """The H200 CNN in fp16 against its bf16 fix (real): aten::_log_softmax_backward_data moves
    by 32 ns per iteration (+1.7 %, above the 1 % floor) and aten::fill_ by 815 ns; neither is a
    regression, and the Markdown bolds neither. The floor is the diff model's, not a renderer's."""
    cnn = H200_NCU
    d = api.diff(
        api.analyze(api.load(cnn / "cnn_fp16")),
        api.analyze(api.load(cnn / "cnn_bf16fixed")),
        force=True,
    )
    by = {r.key: r for r in d.ops}
    for name in ("aten::_log_softmax_backward_data", "aten::fill_"):
        r = by[name]
        assert r.delta_ns is not None and 0 < abs(r.delta_ns) < ROW_NOISE_FLOOR_NS
        assert r.verdict is Change.NOISE and r.threshold_ns == ROW_NOISE_FLOOR_NS
    assert by["aten::_foreach_add_"].verdict is Change.IMPROVED  # -1.2 µs: beyond the floor
    md = api.render_diff(d, "markdown")
    assert "\\_log\\_softmax\\_backward\\_data" not in md and "fill\\_" not in md
    assert "never under 1.0 µs per iteration" in md
