"""A name whose ranges nest inside or overlap each other does not mark iterations
(analysis.iteration_marks): found on its own it is rejected with the reason in the notes; given
as --key-node, only its outermost occurrences cut iterations."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from synthetic import range_row, synthetic_rows_run
from trace_paths import real_or_bundled

from tcreport import api
from tcreport.analysis import iterations, key_nodes
from tcreport.analysis.slicing import Slice
from tcreport.model import IterationMethod

MS = 1_000_000


@pytest.fixture(scope="module")
def all_train_step(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 2xH100 Nsight Systems export with every NVTX range renamed ``train_step``
    (synthetic from real: 8,557 ranges per process, most of them nested)."""
    src = real_or_bundled("nsys/h100x2-bf16-fastvideo") / "mfu_2gpu_after.sqlite"
    if not src.exists():
        pytest.skip("needs the 2xH100 export")
    path = tmp_path_factory.mktemp("nest") / "train_step_synthetic.sqlite"
    shutil.copyfile(src, path)
    path.chmod(0o644)
    con = sqlite3.connect(path)
    con.execute("UPDATE NVTX_EVENTS SET text = 'train_step', textId = NULL WHERE eventType = 59")
    con.commit()
    con.close()
    return path


def test_nesting_ranges_are_not_iterations_and_the_report_says_why(all_train_step: Path) -> None:
    a = api.analyze(api.load(all_train_step)).analysis
    info = a.iterations.info
    assert (info.method, info.total, info.key_node) == ("whole run", 1, None)
    (note,) = [n for n in a.meta.notes if "train_step" in n]
    assert "6,718 of its 8,557 occurrences nest inside or overlap another" in note
    assert "whole run is aggregated as one iteration" in note
    assert "train_step" not in a.iterations.candidates
    assert all(c.name != "train_step" for c in a.iterations.suggestions)
    assert a.time.gpu_kernel_ns == sum(k.gpu_ns for k in a.breakdown.kernels)  # no kernel time lost


def test_a_nesting_key_node_cuts_at_its_outermost_ranges(all_train_step: Path) -> None:
    a = api.analyze(api.load(all_train_step), api.Slice(key_node="train_step")).analysis
    assert a.iterations.info.total == 8_557 - 6_718
    assert any("iterations are cut at the outermost ones only" in n for n in a.meta.notes)


def test_nested_counts_ranges_inside_or_across_an_earlier_one() -> None:
    starts = np.array([0, 10, 20, 100, 150], np.int64)
    ends = np.array([90, 30, 25, 160, 200], np.int64)  # 10 and 20 inside 0; 150 crosses 100
    assert iterations.nested(starts, ends) == 3
    assert iterations.nested(np.array([0, 10]), np.array([10, 20])) == 0  # touching is fine


def test_synthetic_repeating_range_that_nests_is_passed_over_for_one_that_does_not() -> None:
    """``step`` ranges nest (an outer one per step and an inner one inside it); ``train_step``
    ranges do not: the repeating range taken is ``train_step``, and no note is needed for it."""
    ranges = []
    for k in range(4):
        b = k * 10 * MS
        ranges += [range_row("step", b, b + 9 * MS), range_row("step", b + MS, b + 2 * MS, 1)]
        ranges.append(range_row("train_step", b, b + 8 * MS))
    run = synthetic_rows_run(
        kernels=[
            {
                "name": "k",
                "start_ns": k * 10 * MS + MS,
                "launch_ns": k * 10 * MS + 1,
                "duration_ns": MS,
            }
            for k in range(4)
        ],
        ranges=ranges,
    )
    _, sel = iterations.select(run, Slice())
    info = sel.info
    assert (info.method, info.key_node, info.total) == (
        IterationMethod.REPEATING_RANGE,
        "train_step",
        4,
    )
    found = key_nodes.validated_candidates(run)
    assert "step" not in {c.name for c in found}
