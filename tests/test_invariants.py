"""Invariants every analysed run must satisfy, on every trace we have (bundled samples, every real
trace under ``../shared/realtraces``, and generated runs): the figures add up, shares are shares,
nothing is negative, a figure is null exactly when its input is absent, and every renderer shows
the same number for the same figure."""

from __future__ import annotations

import io
import json
import math
import re
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import budget
from rich.console import Console
from trace_paths import REALTRACES, ROOT, SAMPLES

from tcreport import api, fmt
from tcreport.analysis.result import Analysis
from tcreport.compare import diff as _diff
from tcreport.model import Run, RunMeta, SourceFormat
from tcreport.render import html, markdown, summary_json, terminal
from tcreport.report import Report
from tcreport.schema import TableKind, conform


def _traces() -> list[Path]:
    found = sorted(SAMPLES.glob("*/*.json.gz")) + sorted(SAMPLES.glob("*/*.sqlite"))
    if REALTRACES.exists():
        for pattern in ("*/*/*.json.gz", "*/*/*.sqlite", "*/*/*.pb"):
            found += sorted(REALTRACES.glob(pattern))
        found += sorted(p for p in REALTRACES.glob("dlprof/*") if p.is_dir())
    found += sorted((ROOT / "tests" / "fixtures").glob("dlprof*synthetic*/*detailed.csv"))
    return found


TRACES = _traces()


@cache
def _report(path: Path) -> Report:
    return api.analyze(api.load(path))


def check_figures(a: Analysis) -> None:
    """The arithmetic between figures, for one analysis."""
    t, tc = a.time, a.verdict
    for name in ("wall_ns", "gpu_kernel_ns", "tc_kernel_ns", "memory_ns", "unknown_kernel_ns"):
        v = getattr(t, name)
        assert v is None or v >= 0, name
    if t.gpu_kernel_ns is not None and t.tc_kernel_ns is not None:
        assert t.tc_kernel_ns <= t.gpu_kernel_ns
    for share in (
        tc.tc_share,
        tc.classified_share,
        tc.eligible_not_tc_share,
        a.time.busy.share if a.time.busy else None,
        *(o.share for o in a.breakdown.ops),
        *(k.share for k in a.breakdown.kernels),
        *(d.tc_share for d in a.breakdown.devices),
    ):
        assert share is None or (0.0 <= share <= 1.0 and not math.isnan(share))
    # per op: TC + missed + the rest = the op's GPU time, none negative
    for o in a.breakdown.ops:
        assert min(o.tc_ns, o.missed_ns, o.other_ns) >= 0, o.name
        assert o.tc_ns + o.missed_ns + o.other_ns == (o.gpu_ns or 0), o.name
        assert o.gpu_ns is None or o.gpu_ns >= 0
    # ops' kernel time never exceeds the kernel time; the rest is shown as not attributed
    if a.breakdown.has_ops and t.gpu_kernel_ns is not None and a.breakdown.kernels:
        op_ns = sum(o.gpu_ns or 0 for o in a.breakdown.ops)
        assert op_ns <= t.gpu_kernel_ns
        assert a.breakdown.unattributed_kernel_ns == t.gpu_kernel_ns - op_ns
    # counts
    if tc.eligible_op_count is not None and tc.using_op_count is not None:
        assert tc.eligible_op_count >= tc.using_op_count >= 0
        assert tc.eligible_op_count >= (tc.eligible_not_using_op_count or 0)
    if tc.eligible_gpu_ns is not None and tc.eligible_not_using_gpu_ns is not None:
        assert 0 <= tc.eligible_not_using_gpu_ns <= tc.eligible_gpu_ns
    # per device sums to the totals
    if a.breakdown.devices:
        assert sum(d.gpu_kernel_ns for d in a.breakdown.devices) == t.gpu_kernel_ns
        assert sum(d.tc_kernel_ns for d in a.breakdown.devices) == t.tc_kernel_ns
        assert sum(d.memory_ns for d in a.breakdown.devices) == (t.memory_ns or 0)
        assert sum(d.launches for d in a.breakdown.devices) == t.kernel_launches
    # iterations: per-GPU stacks add up; no negative durations
    for r in a.iterations.rows:
        assert r.duration_ns >= 0 and r.idle_ns >= 0
        assert min(r.tc_ns, r.non_tc_ns, r.memory_ns) >= 0
        if r.gpus:
            assert sum(g.tc_ns for g in r.gpus) == r.tc_ns
            assert sum(g.non_tc_ns for g in r.gpus) == r.non_tc_ns
            assert all(g.idle_ns >= 0 for g in r.gpus)
    # null exactly when the input is absent
    assert (t.gpu_kernel_ns is None) == (
        not a.breakdown.has_kernels and a.meta.reported.gpu_kernel_ns is None
    )
    if not a.breakdown.has_ops:
        assert a.breakdown.unattributed_kernel_ns is None
    if a.breakdown.has_ops:
        assert tc.eligible_op_count is not None and tc.using_op_count is not None


def check_renderers(view: Report) -> None:
    """Terminal, Markdown, HTML, JSON and a diff of the run against itself show the same counts
    and times (each as its format writes them)."""
    a = view.analysis
    t, tc = a.time, a.verdict
    data = json.loads(summary_json.render(view))
    assert data["time"]["gpu_kernel_ns"] == t.gpu_kernel_ns
    assert data["time"]["tc_kernel_ns"] == t.tc_kernel_ns
    assert data["time"]["wall_ns"] == t.wall_ns
    assert data["tensor_core"]["eligible_op_count"] == tc.eligible_op_count
    assert data["tensor_core"]["using_op_count"] == tc.using_op_count
    assert data["tensor_core"]["eligible_not_using_op_count"] == tc.eligible_not_using_op_count
    assert data["tensor_core"]["eligible_not_using_gpu_ns"] == tc.eligible_not_using_gpu_ns
    console = Console(width=240, record=True, file=io.StringIO())
    terminal.render(view, console)
    text = console.export_text()
    assert re.search(rf"GPU kernel time\s+{re.escape(fmt.ns(t.gpu_kernel_ns))}", text)
    assert re.search(rf"Wall time \(aggregated\)\s+{re.escape(fmt.ns(t.wall_ns))}", text)
    assert f"{fmt.count(tc.eligible_op_count)} / {fmt.count(tc.using_op_count)}" in text
    md = markdown.render(view)
    assert (
        f"| {fmt.ns(tc.eligible_not_using_gpu_ns)} ({fmt.count(tc.eligible_not_using_op_count)} "
        f"ops) | {fmt.ns(t.gpu_kernel_ns)} |" in md
    )
    page = html.render(view)
    assert f"{fmt.ns(t.tc_kernel_ns)} of {fmt.ns(t.gpu_kernel_ns)}" in page
    if tc.eligible_op_count is not None and a.breakdown.has_ops:
        assert (
            f"{fmt.count(tc.eligible_not_using_op_count)} of {fmt.count(tc.eligible_op_count)} "
            "eligible ops" in page
        )
    d = _diff.diff(view, view, force=True)
    n = max(1, a.iterations.info.aggregated or 1)
    for key, value in (
        ("gpu_kernel_ns", t.gpu_kernel_ns),
        ("tc_kernel_ns", t.tc_kernel_ns),
        ("wall_ns", t.wall_ns),
        ("eligible_not_using_gpu_ns", tc.eligible_not_using_gpu_ns),
    ):
        f = d.figure(key)
        assert f.base == (None if value is None else value / n), key
    assert d.figure("eligible_op_count").base == tc.eligible_op_count
    assert d.figure("eligible_not_using_op_count").base == tc.eligible_not_using_op_count
    for row in d.ops:
        o = next(x for x in a.breakdown.ops if x.name == row.key)
        assert row.base_uses_tc == o.uses_tc


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_figures_add_up(path: Path) -> None:
    check_figures(_report(path).analysis)


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_every_renderer_shows_the_same_numbers(path: Path) -> None:
    check_renderers(_report(path))


def test_the_suite_covers_samples_and_real_traces() -> None:
    assert len([p for p in TRACES if SAMPLES in p.parents]) == 2
    if REALTRACES.exists():
        assert len(TRACES) >= 12


# -- generated runs ------------------------------------------------------------------------------

_KERNEL_NAMES = (
    "ampere_sgemm_128x64_nn",
    "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32",
    "volta_h884gemm_64x64_ldg8_nn",
    "elementwise_kernel",
    "flash_fwd_kernel",
)
_OPS = (("aten::mm", "mm"), ("aten::add", "add"), ("aten::conv2d", "conv2d"))


@st.composite
def _runs(draw: st.DrawFn) -> Run:
    n = draw(st.integers(1, 30))
    # drawn in this order (the derandomized cases depend on it); typed lists for the op sums below
    names = [draw(st.sampled_from(_KERNEL_NAMES)) for _ in range(n)]
    devices = [draw(st.integers(0, 2)) for _ in range(n)]
    starts = [draw(st.integers(0, 10**9)) for _ in range(n)]
    durations = [draw(st.integers(0, 10**7)) for _ in range(n)]
    op_ids = [draw(st.sampled_from(("0", "1", "2", None))) for _ in range(n)]
    kernels = {
        "name": names,
        "device_id": devices,
        "start_ns": starts,
        "duration_ns": durations,
        "calls": [1] * n,
        "op_id": op_ids,
    }
    with_ops = draw(st.booleans())
    ops = None
    if with_ops:
        op_keys = ["0", "1", "2"]
        ops_rows = {
            "op_id": op_keys,
            "name": [o for o, _ in _OPS],
            "type": [t for _, t in _OPS],
            "calls": [1, 1, 1],
        }
        gpu = [sum(d for d, o in zip(durations, op_ids, strict=True) if o == k) for k in op_keys]
        ops = conform({**ops_rows, "gpu_ns": gpu}, TableKind.OPS)
    memory = None
    if draw(st.booleans()):
        m = draw(st.integers(0, 5))
        memory = conform(
            {
                "kind": ["memcpy_htod"] * m,
                "device_id": [draw(st.integers(0, 2)) for _ in range(m)],
                "start_ns": [draw(st.integers(0, 10**9)) for _ in range(m)],
                "duration_ns": [draw(st.integers(0, 10**6)) for _ in range(m)],
                "calls": [1] * m,
            },
            TableKind.MEMORY,
        )
    meta = RunMeta(format=SourceFormat.KINETO_JSON, path="synthetic.json")
    return Run(meta=meta, kernels=conform(kernels, TableKind.KERNELS), memory=memory, ops=ops)


@settings(max_examples=budget(40), deadline=None)
@given(_runs())
def test_synthetic_generated_runs_keep_the_invariants(run: Run) -> None:
    view = api.analyze(run)
    check_figures(view.analysis)
    check_renderers(view)
