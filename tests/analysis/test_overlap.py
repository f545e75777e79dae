"""Communication overlap and CM002 on the 2xH100 FSDP sample (NCCL on the compute stream, nothing
hidden), and on synthetic tables where a side stream hides the collective."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from tcreport import api, schema
from tcreport.analysis import activity, overlap, result
from tcreport.rules import cm002_comm_overlap

ROOT = Path(__file__).resolve().parents[2]
H100X2 = ROOT / "sample_traces" / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"
US = 1_000


def test_h100x2_nccl_on_the_compute_stream_with_no_overlap() -> None:
    view = api.analyze(api.load(H100X2))
    cm = view.analysis.communication.overlap
    assert cm is not None
    assert [d.device_id for d in cm.devices] == [0, 1]
    assert cm.overlap_ns == 0
    assert cm.exposed_ns == cm.collective_ns > 0
    assert cm.names == ("ncclDevKernel_SendRecv",)
    # one stream per GPU carries both the model's kernels and NCCL's
    assert [(s.device_id, s.stream_id, s.is_compute_stream) for s in cm.streams] == [
        (0, 7, True),
        (1, 15, True),
    ]
    assert all(s.launches == 31 for s in cm.streams)
    # the per-iteration breakdown agrees: the one step's collective time is the same union
    assert sum(r.communication_total_ns for r in view.analysis.steps.rows) == cm.collective_ns
    (f,) = [f for f in view.findings if f.id == "CM002"]
    assert "compute stream" in f.title
    assert f.estimated_saving_ns == int(cm.exposed_ns / 2 * 0.5)
    d = json.loads(api.render_json(view))["communication_overlap"]
    assert d["overlap_ns"] == 0 and d["collective_ns"] == cm.collective_ns
    assert [s["is_compute_stream"] for s in d["streams"]] == [True, True]


def _synthetic_run_tables(nccl_stream: int) -> pa.Table:
    return schema.conform(
        {
            "name": ["sm90_xmma_gemm_bf16", "sm90_xmma_gemm_bf16", "ncclDevKernel_AllReduce"],
            "start_ns": [0, 100 * US, 20 * US],
            "duration_ns": [100 * US, 100 * US, 50 * US],
            "uses_tc": pa.array([True, True, False]),
            "stream_id": [7, 7, nccl_stream],
            "device_id": [0, 0, 0],
            "calls": [1, 1, 1],
        },
        schema.TableKind.KERNELS,
    )


def test_synthetic_side_stream_hides_the_collective() -> None:
    k = _synthetic_run_tables(nccl_stream=20)
    cm = overlap.comm_overlap(activity.collect(k, None), k)
    assert cm is not None
    assert cm.overlap_share == 1.0
    assert cm.on_compute_stream == ()
    assert cm.streams[0].stream_id == 20 and cm.streams[0].compute_ns == 0


def test_no_collectives_no_communication_figures() -> None:
    a = result.compute(
        api.load(
            ROOT
            / "sample_traces"
            / "kineto-a100-tf32-alexnet"
            / "benchmark_result_2869224_1695835535_trace.json.gz"
        )
    )
    assert a.communication.overlap is None
    assert cm002_comm_overlap.check(a) == []


def test_h100x2_collective_total_says_summed_only_over_several_gpus() -> None:
    """Read whole, the export's two GPUs are summed (and listed per GPU); as the job's rank 0 (one
    GPU in view, what `tcreport summary` of the export shows) nothing is summed over GPUs."""
    whole = api.analyze(api.load(H100X2))
    (f,) = [f for f in whole.findings if f.id == "CM002"]
    assert "take 33.7 ms summed over 2 GPUs," in f.detail and "GPU 1: 23.8 ms" in f.detail
    rank0 = api.analyze_job(H100X2, rank=0).detail
    (f,) = [f for f in rank0.findings if f.id == "CM002"]
    assert "take 10.0 ms on GPU 0," in f.detail and "summed" not in f.detail
    assert "GPU 0: 10.0 ms" not in f.detail  # the one GPU's figures are the totals already given
