"""The three eligible-op counts add up: using + not using (in any call) == eligible.

The A100 AlexNet sample's summary JSON said 2 eligible ops, 1 using Tensor Cores and 2 not using
them: its first convolution used them in some calls only and counted in both. DLProf's own counts
add up (its CNN: 5 eligible, 0 using, 5 not); now tcreport's do too, and an invariant holds them.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from trace_paths import REALTRACES, need, real_or_bundled

from tcreport import api
from tcreport.analysis import invariants
from tcreport.analysis.violation import Invariant

ALEXNET = real_or_bundled(
    "kineto/a100-tf32-alexnet/benchmark_result_2869224_1695835535_trace.json.gz"
)
DDP = REALTRACES / "kineto" / "a100-ddp-nccl-3step" / "nccl_data.json.gz"


@pytest.mark.realtraces
@pytest.mark.parametrize(
    ("path", "counts"),
    [(ALEXNET, (2, 1, 1, 1, 2)), (DDP, (4, 2, 2, 1, 3))],
    ids=["a100-alexnet", "a100-ddp"],
)
def test_real_counts_add_up_in_the_json(path: object, counts: tuple[int, ...]) -> None:
    from pathlib import Path

    assert isinstance(path, Path)
    view = api.analyze(api.load(need(path)))
    v = view.analysis.verdict
    got = (
        v.eligible_op_count,
        v.using_op_count,
        v.eligible_not_using_op_count,
        v.partly_using_op_count,
        v.missed_op_count,
    )
    assert got == counts
    tc = json.loads(api.render_json(view))["tensor_core"]
    assert tc["using_op_count"] + tc["eligible_not_using_op_count"] == tc["eligible_op_count"]


@pytest.mark.realtraces
def test_invariant_flags_counts_that_do_not_add_up() -> None:
    view = api.analyze(api.load(need(ALEXNET)))
    a = view.analysis
    assert not [x for x in invariants.check(a) if x.invariant is Invariant.COUNTS_ADD_UP]
    broken = dataclasses.replace(a, verdict=dataclasses.replace(a.verdict, using_op_count=2))
    found = [x for x in invariants.check(broken) if x.invariant is Invariant.COUNTS_ADD_UP]
    assert [x.figure for x in found] == ["verdict.eligible_not_using_op_count"]
