"""GP001 when the step breakdown names the host work the GPU waited for, and when it names none.

Each step: one 200 µs kernel, then the GPU idles until the next step while the host is in the
named range (``aten::normal_``: a batch drawn on the CPU; a synchronisation; other host work).
"""

from __future__ import annotations

import pytest
from synthetic import MS, US, kernel_row, range_row, synthetic_rows_run

from tcreport import api
from tcreport.model import Run
from tcreport.rules import Finding


def _run(host: str | None, steps: int = 4, step_ms: float = 1.0) -> Run:
    step = int(step_ms * MS)
    ranges = [range_row("train_step", i * step, (i + 1) * step - 1) for i in range(steps)]
    if host is not None:  # the host's work after the step's kernel, up to the next step
        ranges += [
            range_row(host, i * step + 300 * US, (i + 1) * step - 10, depth=1) for i in range(steps)
        ]
    kernels = [
        kernel_row("volta_h884gemm_128x128_nn", None, i * step + 100, 200 * US)
        for i in range(steps)
    ]
    return synthetic_rows_run(kernels=kernels, ranges=ranges)


def _gp001(run: Run) -> Finding:
    (f,) = [f for f in api.analyze(run).findings if f.id == "GP001"]
    return f


def test_random_data_on_the_host_is_named_with_its_idle_per_step_synthetic() -> None:
    f = _gp001(_run("aten::normal_"))
    assert f.title.startswith("The GPU waits for the host in aten::normal_")
    assert "per step" in f.title and "device='cuda'" in (f.fix or "")
    hw = api.analyze(_run("aten::normal_")).analysis.steps.host_wait
    assert hw is not None and hw.steps == 3 and hw.causes[0].work == "random data"
    # the wait of the three measured steps: each 1 ms step less its 200 µs kernel
    assert hw.causes[0].idle_per_step_ns == pytest.approx(0.8 * MS, rel=0.01)
    assert f.estimated_saving_ns == hw.causes[0].idle_ns


@pytest.mark.parametrize(
    ("host", "work", "words"),
    [
        ("cudaStreamSynchronize", "synchronisation", ".item()"),
        ("log_metrics", "host work", "every N steps"),
    ],
)
def test_the_fix_follows_the_kind_of_host_work_synthetic(host: str, work: str, words: str) -> None:
    hw = api.analyze(_run(host)).analysis.steps.host_wait
    assert hw is not None and hw.causes[0].work == work
    f = _gp001(_run(host))
    assert (f.fix or "").startswith(f"Take {host} off the step's critical path.")
    assert words in (f.fix or "")


def test_without_a_named_host_range_the_words_stay_generic_synthetic() -> None:
    f = _gp001(_run(None))
    assert f.title.startswith("Low GPU utilisation")
    assert f.assumptions == "no saving claimed: the profile does not show what the GPU waited for"
    assert f.estimated_saving_ns is None


def _two_kernel_steps(second_at: int, name: str, start: int, end: int) -> Run:
    """Four 1 ms ``train_step`` ranges, each with a 200 µs GEMM at its start and a 20 µs one at
    ``second_at``, and the host range ``name`` open from ``start`` to ``end`` in each step."""
    kernels = [
        kernel_row("volta_h884gemm_128x128_nn", None, i * MS + at, d)
        for i in range(4)
        for at, d in ((100, 200 * US), (second_at, 20 * US))
    ]
    ranges = [range_row("train_step", i * MS, (i + 1) * MS - 1) for i in range(4)]
    ranges += [range_row(name, i * MS + start, i * MS + end, 1) for i in range(4)]
    return synthetic_rows_run(kernels=kernels, ranges=ranges)


def test_a_small_named_range_beside_unnamed_idle_explains_nothing_synthetic() -> None:
    """Named host work under half the idle is no cause: the generic words stay. A second kernel at
    350 µs splits each step's idle: the gap before it (midpoint 275 µs) is under aten::normal_,
    the longer one after it under nothing."""
    run = _two_kernel_steps(350 * US, "aten::normal_", 250 * US, 300 * US)
    hw = api.analyze(run).analysis.steps.host_wait
    assert hw is not None and not hw.dominant
    assert [c.name for c in hw.causes] == ["aten::normal_"]  # listed, but not the cause
    assert _gp001(run).title.startswith("Low GPU utilisation")


def test_a_range_that_launches_gpu_work_is_no_cause_synthetic() -> None:
    """``## backward ##`` encloses the gap but launched a kernel itself (at 900 µs): the GPU did
    not wait for it as host work, so nothing is named and the words stay generic."""
    run = _two_kernel_steps(900 * US, "## backward ##", 300 * US, MS - 10)
    view = api.analyze(run)
    assert any(c.name == "## backward ##" for r in view.analysis.steps.rows for c in r.host_causes)
    hw = view.analysis.steps.host_wait
    assert hw is not None and hw.causes == () and not hw.dominant
    assert _gp001(run).title.startswith("Low GPU utilisation")


def test_a_hostile_host_range_name_is_data_in_every_output_synthetic() -> None:
    """The cause's name goes into GP001's title, detail and fix: escaped like any trace string."""
    evil = "</script><img src=x onerror=alert(1)>"
    view = api.analyze(_run(evil))
    (f,) = [f for f in view.findings if f.id == "GP001"]
    assert evil in f.title
    html = api.render_html(view)
    assert evil not in html and "<img src=x" not in html
    assert "<img src=x" not in api.render_markdown(view)
