"""A kernel row's Tensor Core verdict is that of every launch in it, on the real H200 mix trace.

Nsight Compute counters decide launch by launch: mix.py's Triton ``tile_product`` ran twice under
one name, ``tl.dot`` in fp16 (Tensor Cores, 40.7 µs) and in ``input_precision="ieee"`` fp32 (not,
410.2 µs); GROUND_TRUTH.md of the sample lists it as two (kernel, verdict) rows. Grouped by name
alone, the kernel table showed one ``tile_product`` row, 450.9 µs, "TC yes" (its first launch's
verdict) beside a run whose whole Tensor Core kernel time is 312.0 µs.
"""

from __future__ import annotations

import dataclasses
import io
import json
import re
from functools import cache

import pytest
from rich.console import Console
from trace_paths import H200_NCU

from tcreport import api
from tcreport.analysis import invariants
from tcreport.analysis.figures import KernelRow
from tcreport.analysis.violation import Invariant
from tcreport.render import html, summary_json, terminal
from tcreport.report import Report

MIX = H200_NCU / "mix" / "kineto_mix_h.json.gz"
COUNTERS = H200_NCU / "ncu" / "ncu3_mix.csv"
#: tile_product's two launches as the trace timed them: (verdict, ns)
TILE_PRODUCT = {True: 40_736, False: 410_206}
#: the run's Tensor Core kernel time with the counters
TC_NS = 311_968


@cache
def _mix(counters: bool = True) -> Report:
    run = api.load(MIX)
    return api.analyze(api.attach_counters(run, COUNTERS) if counters else run)


def _tile_product(view: Report) -> list[KernelRow]:
    return [k for k in view.analysis.breakdown.kernels if k.name == "tile_product"]


def test_a_name_whose_launches_disagree_is_a_row_per_verdict() -> None:
    rows = _tile_product(_mix())
    assert [(k.uses_tc, k.calls, k.gpu_ns) for k in rows] == [
        (False, 1, TILE_PRODUCT[False]),  # by GPU time, as every row
        (True, 1, TILE_PRODUCT[True]),
    ]
    assert all(k.split and k.tc_rule == "ncu-counter" for k in rows)
    assert [k.key for k in rows] == ["tile_product", "tile_product (verdict: yes)"]


def test_the_tc_rows_sum_to_the_tc_kernel_time() -> None:
    a = _mix().analysis
    assert a.time.tc_kernel_ns == TC_NS
    assert sum(k.gpu_ns for k in a.breakdown.kernels if k.uses_tc) == TC_NS
    assert sum(k.gpu_ns for k in a.breakdown.kernels) == a.time.gpu_kernel_ns
    assert not a.violations
    keys = [k.key for k in a.breakdown.kernels]
    assert len(set(keys)) == len(keys)
    # every other name's launches agree: one row each, keyed by its name
    others = [k for k in a.breakdown.kernels if k.name != "tile_product"]
    assert not any(k.split for k in others) and all(k.key == k.name for k in others)
    assert a.verdict.counter_measured == 18  # kernel names, as the merge note counts them


def test_the_summary_json_rows_agree_with_the_tc_time() -> None:
    data = json.loads(summary_json.render(_mix()))
    rows = [(k["uses_tc"], k["gpu_ns"]) for k in data["kernels"] if k["name"] == "tile_product"]
    assert rows == [(False, TILE_PRODUCT[False]), (True, TILE_PRODUCT[True])]
    assert len(data["kernels"]) == 19  # 18 names, one of them split: all rows, under the top 20
    tc_rows = sum(k["gpu_ns"] for k in data["kernels"] if k["uses_tc"])
    assert tc_rows == data["time"]["tc_kernel_ns"] == TC_NS
    assert data["invariant_violations"] == []
    # the note that says why a name is listed twice, in every output's notes
    assert data["notes"][-1] == (
        "Kernels whose launches got different Tensor Core verdicts have a row per verdict: "
        "tile_product (1 of 2 launches on Tensor Cores)"
    )
    assert not any(
        "row per verdict" in n for n in json.loads(summary_json.render(_mix(False)))["notes"]
    )


def test_the_kernel_tables_show_the_two_verdicts() -> None:
    """Terminal and HTML (the Markdown report has no kernel table)."""
    view = _mix()
    console = Console(width=200, record=True, file=io.StringIO())
    terminal.render(view, console)
    text = console.export_text()
    tile = [line.split("│")[1:6] for line in text.splitlines() if "│ tile_product " in line]
    assert [[c.strip() for c in cells] for cells in tile] == [
        ["tile_product", "1", "410.2 µs", "28.0 %", "no"],
        ["tile_product", "1", "40.7 µs", "2.8 %", "yes"],
    ]
    page = html.render(view)
    ids = re.findall(r' id="(kernel-[^"]*)"', page)
    assert len(ids) == len(set(ids))  # the second row has an id of its own
    assert 'id="kernel-tile_product"' in page
    assert 'id="kernel-tile_product%20%28verdict%3A%20yes%29"' in page


def test_the_invariant_catches_a_row_that_speaks_for_other_launches() -> None:
    """The kernel rows as they were: one per name, with the first launch's verdict."""
    a = _mix().analysis
    rows = a.breakdown.kernels
    merged = tuple(k for k in rows if k.name != "tile_product") + (
        dataclasses.replace(
            _tile_product(_mix())[1], gpu_ns=sum(TILE_PRODUCT.values()), calls=2, split=False
        ),
    )
    old = dataclasses.replace(a, breakdown=dataclasses.replace(a.breakdown, kernels=merged))
    found = [(v.invariant, v.figure) for v in invariants.check(old)]
    assert found == [(Invariant.KERNEL_ROWS_SUM, "time.tc_kernel_ns")]
    (v,) = invariants.check(old)
    assert v.message == f"the kernel rows sum to {TC_NS + TILE_PRODUCT[False]}, not {TC_NS}"


def test_the_diff_keeps_one_row_per_kernel_name() -> None:
    """Base: the names alone (tile_product has no name rule: unknown); head: the counters."""
    d = api.diff(_mix(counters=False), _mix())
    (row,) = (r for r in d.kernels if r.key == "tile_product")
    assert row.base_ns == row.head_ns == sum(TILE_PRODUCT.values())
    assert (row.base_uses_tc, row.head_uses_tc) == (None, True)  # on Tensor Cores in a launch
    assert row.head_tc_share == pytest.approx(TILE_PRODUCT[True] / row.head_ns)
    same = api.diff(_mix(), _mix())
    (row,) = (r for r in same.kernels if r.key == "tile_product")
    assert row.type == "partly TC" and not row.tc_lost and not same.tc_lost
