"""The diff's verdict line: which moved figures it names, on real runs of one model."""

from __future__ import annotations

import pytest
from trace_paths import H200_NCU

from tcreport import api
from tcreport.compare import diff as compare
from tcreport.compare.model import Change


def _view(name: str) -> api.Report:
    path = H200_NCU / name
    return api.analyze(api.load(path), source_path=str(path))


@pytest.fixture(scope="module")
def fp16_to_bf16() -> compare.Diff:
    """The real H200 CNN, fp16 autocast then bf16: kernel time down, wall time per iteration up
    (+101.4 %), memory up, Tensor Core share up a little."""
    return compare.diff(_view("cnn_fp16"), _view("cnn_bf16fixed"))


def test_verdict_names_wall_time_per_iteration_beyond_noise(fp16_to_bf16: compare.Diff) -> None:
    d = fp16_to_bf16
    assert d.figure("wall_ns").verdict is Change.REGRESSED
    assert d.verdict.startswith(
        "mixed: GPU kernel time per iteration -28.7% (2.0 ms → 1.4 ms); "
        "Wall time per iteration +101.4% (17.4 ms → 35.0 ms); Tensor Core share +1.4 pt "
    ), d.verdict


def test_verdict_leads_with_kernel_wall_share_then_the_rest_in_table_order(
    fp16_to_bf16: compare.Diff,
) -> None:
    d = fp16_to_bf16
    moved = [f for f in d.figures if f.verdict in (Change.IMPROVED, Change.REGRESSED)]
    labels = [f.label for f in moved]
    assert labels == [
        "GPU kernel time",
        "Tensor Core share",
        "Eligible GPU time not on TC",
        "Memory (memcpy + memset)",
        "Wall time",
    ]  # the table's order: wall time last, after two figures the line has no room for
    assert d.verdict.endswith(
        "Tensor Core share +1.4 pt (precision changed: fp16 mixed → bf16 mixed)"
    )
    assert "Eligible" not in d.verdict and "Memory" not in d.verdict


def test_wall_time_takes_the_place_of_a_later_figure() -> None:
    """fp16 then the bf16 fix: wall time per iteration +101.4 %, beyond noise, is named before
    the eligible-not-TC and memory times that also moved, which the table still lists."""
    d = compare.diff(_view("cnn_fp16"), _view("cnn_bf16fixed"))
    assert "Wall time per iteration +101.4% (17.4 ms → 35.0 ms)" in d.verdict, d.verdict
    assert d.figure("eligible_not_using_gpu_ns").verdict is Change.REGRESSED
    assert "Eligible" not in d.verdict and "Memory" not in d.verdict


def test_wall_time_is_judged_by_its_own_spread() -> None:
    """fp32 then fp16: wall time per iteration -6.0 % (18.5 ms -> 17.4 ms) while the runs' own
    step times vary by 15-25 %: noise for wall time, whose spread is its own (hostile12), not
    the kernel time's ~1 %."""
    d = compare.diff(_view("cnn_fp32"), _view("cnn_fp16"))
    assert d.figure("wall_ns").verdict is Change.NOISE
    assert "Wall time" not in d.verdict


def test_wall_time_within_noise_is_not_named() -> None:
    same = _view("cnn_fp16")
    d = compare.diff(same, same)
    assert d.figure("wall_ns").verdict is Change.UNCHANGED
    assert d.verdict == "no change beyond noise"


def test_a_finding_whose_figures_moved_is_listed_not_counted_unchanged() -> None:
    """cnn_fp16 -> cnn_bf16fixed (real H200 runs): GP001 fires on both, its host wait 11.0 ms ->
    24.0 ms per step; "unchanged" hid the doubling that explains the step time's +101 %."""
    base = api.analyze(api.load(H200_NCU / "cnn_fp16"))
    head = api.analyze(api.load(H200_NCU / "cnn_bf16fixed"))
    d = api.diff(base, head)
    (gp001,) = (f for f in d.moved if f.id == "GP001")
    assert gp001.base_title is not None and "11.0 ms per step" in gp001.base_title
    assert "24.0 ms per step" in gp001.title
    assert f"{len(d.moved)} with new figures" in d.findings_line
    for fmt_ in ("markdown", "terminal", "html"):
        text = api.render_diff(d, fmt_)
        assert "11.0 ms per step" in text and "24.0 ms per step" in text, fmt_


def test_a_mixed_verdict_names_what_got_worse() -> None:
    """The real JAX runs, fp32 at HIGHEST precision then default fp32 (TF32): three figures
    improved and only memory got worse (+1.3 µs per iteration). The line read "mixed:" followed by
    three improvements; it now names the regression in the last place."""
    pytest.importorskip("xprof")
    root = H200_NCU.parent / "h200-jax-xla-ncu"
    views = [api.analyze(api.load(root / n), source_path=n) for n in ("fp32-highest", "fp32")]
    d = compare.diff(*views)
    assert d.figure("memory_ns").verdict is Change.REGRESSED
    assert d.verdict.startswith("mixed: GPU kernel time per iteration -48.5%")
    parts = d.verdict.split(": ", 1)[1].split("; ")
    assert len(parts) == compare.VERDICT_PARTS
    assert parts[-1].startswith("Memory (memcpy + memset) per iteration +17.7%")


def test_a_figure_that_grows_from_zero_shows_both_sides_in_the_verdict_line() -> None:
    """torch.compile's fp32 MLP then the fp16 mix: eligible time not on Tensor Cores goes from 0 to
    595.1 µs per iteration, which has no relative change; the line said only "... regressed"."""
    base = api.analyze(api.load(H200_NCU.parent / "h200-torch-compile-tf32"))
    head = _view("mix")
    d = compare.diff(base, head, force=True)
    assert "Eligible GPU time not on TC per iteration regressed (0 ns → 595.1 µs)" in d.verdict
