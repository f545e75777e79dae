"""CM002's fix follows the kind of collective that holds the most time (the analysis decides the
kind, :func:`tcreport.analysis.communication.collective_kind`; the rule the words).

The real multi-rank traces hold three: the DDP trace's ``ncclKernel_AllReduce`` (all-reduce), and
``SendRecv`` kernels that are all-to-alls on the 2x H100 sequence-parallel run (``AllToAll4D``)
and on the 128-rank DLRM job's sampled ranks (``nccl:all_to_all``). All-gather, reduce-scatter
and plain send/receive, which no real trace here holds, are checked on names alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from trace_paths import NSYS_H100, REALTRACES

from tcreport import api
from tcreport.analysis.collectives import Family
from tcreport.analysis.communication import collective_kind
from tcreport.rules import _common as c
from tcreport.rules import cm002_comm_overlap as cm002

DDP = REALTRACES / "kineto" / "a100-ddp-nccl-3step" / "nccl_data.json.gz"
SAMPLED0 = REALTRACES / "kineto" / "two-rank-sampled" / "sampled_rank-0.json.gz"


def _cm002(path: Path) -> tuple[Family | None, str]:
    if not path.exists():
        pytest.skip(f"{path} is not in this checkout")
    view = api.analyze(api.load(path))
    (f,) = [f for f in view.findings if f.id == "CM002"]
    assert f.fix is not None
    return view.analysis.communication.kind, f.fix


@pytest.mark.parametrize("path", [NSYS_H100, SAMPLED0], ids=["h100x2-alltoall4d", "dlrm-rank0"])
def test_an_all_to_all_gets_all_to_all_advice_not_ddps(path: Path) -> None:
    kind, fix = _cm002(path)
    assert kind is Family.ALL_TO_ALL
    assert "all-to-all" in fix and "chunk" in fix
    assert "DDP" not in fix and "FSDP" not in fix and "gradient bucket" not in fix


def test_a_ddp_all_reduce_gets_bucket_advice() -> None:
    kind, fix = _cm002(DDP)
    assert kind is Family.ALL_REDUCE
    assert "DDP" in fix and "bucket" in fix and "all-to-all" not in fix


@pytest.mark.parametrize(
    ("names", "ops", "kind"),
    [
        (("ncclDevKernel_AllGather_RING_LL(ncclDevComm*)",), (), Family.ALL_GATHER),
        (("ncclKernel_ReduceScatter_RING_LL_Sum_bfloat16",), (), Family.REDUCE_SCATTER),
        (("ncclDevKernel_SendRecv",), ("nccl:send", "aten::mm"), Family.SEND_RECV),
        (("ncclDevKernel_SendRecv",), ("c10d::alltoall_base_",), Family.ALL_TO_ALL),
        (("ncclDevKernel_Broadcast_RING_LL",), (), Family.BROADCAST),
        ((), ("c10d::alltoall_base_",), None),
    ],
)
def test_collective_kind_from_names(names: tuple[str, ...], ops: tuple[str, ...], kind: Family | None) -> None:  # fmt: skip
    assert collective_kind(names, ops) is kind


def test_sharded_and_point_to_point_advice_synthetic() -> None:
    for fl in c.Flavour:
        gather = cm002._fix(Family.ALL_GATHER, fl)
        assert gather == cm002._fix(Family.REDUCE_SCATTER, fl) and "all-gather" in gather
        assert "micro-batches" in cm002._fix(Family.SEND_RECV, fl)
        assert cm002._fix(Family.BROADCAST, fl) == cm002._fix(None, fl)  # the generic advice
