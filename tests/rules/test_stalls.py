"""Host synchronisation, pageable copies and tiny copies: the GPU idle each causes per step, the op,
and the findings ST001-ST003 (analysis.stalls, rules/st00*)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kineto_synthetic import KERNEL, Trace
from trace_paths import REALTRACES

from tcreport import api
from tcreport.analysis.stalls import StallKind
from tcreport.report import Report

US = 1_000
STEP = 4000  # µs
PAGEABLE = "Memcpy HtoD (Pageable -> Device)"
READBACK = "Memcpy DtoH (Device -> Pageable)"


def _item_and_pageable(path: Path, steps: int = 5) -> Path:
    """Each step: the input is copied from pageable memory (``aten::copy_``; the host blocks until
    the copy lands, then takes 300 µs to launch the matmul), the matmul runs 2 ms, then
    ``loss.item()`` (``aten::item`` > ``aten::_local_scalar_dense``) reads 4 bytes back: the host
    waits for the GPU to drain and launches the next step's copy 1.5 ms later."""
    t = Trace()
    for k in range(steps):
        b = k * STEP
        t.step(k + 1, b, STEP)
        copy = t.op("aten::copy_", b + 10, 200)
        t.launch("cudaMemcpyAsync", b + 20, "gpu_memcpy", PAGEABLE, b + 30, 150, eid=copy,
                 nbytes=4 << 20)  # fmt: skip
        mm = t.op("aten::mm", b + 470, 30)
        t.launch("cudaLaunchKernel", b + 480, "kernel", KERNEL, b + 490, 2000, eid=mm)
        t.op("aten::item", b + 600, 2000)
        dense = t.op("aten::_local_scalar_dense", b + 610, 1980)
        t.launch("cudaMemcpyAsync", b + 620, "gpu_memcpy", READBACK, b + 2490, 5, eid=dense,
                 nbytes=4)  # fmt: skip
    return t.write(path)


def test_synthetic_item_sync_and_pageable_copies_are_named_with_their_idle(tmp_path: Path) -> None:
    report = api.analyze(api.load(_item_and_pageable(tmp_path / "stalls_synthetic.json.gz")))
    a = report.analysis
    assert len(a.steps.rows) == 5
    for r in a.steps.rows:
        by_kind = {s.kind: s for s in r.stalls}
        pageable = by_kind[StallKind.PAGEABLE]
        assert (pageable.op, pageable.copies, pageable.bytes) == ("aten::copy_", 1, 4 << 20)
        assert pageable.idle_ns == (490 - 180) * US  # copy ends at 180, matmul starts at 490
        if r.window_ns is None:  # the last step: nothing on the GPU after its readback
            assert StallKind.SYNC not in by_kind
            continue
        sync = by_kind[StallKind.SYNC]  # the readback's gap runs to the next step's copy
        assert (sync.op, sync.gaps) == ("aten::_local_scalar_dense", 1)
        assert sync.idle_ns == (STEP + 30 - 2495) * US
        assert r.window_ns == STEP * US
    found = {f.id: f for f in report.findings}
    st001, st002 = found["ST001"], found["ST002"]
    assert "aten::_local_scalar_dense" in st001.title and "1.2 ms per step" in st001.title
    assert "aten::copy_" in st002.title and "310.0 µs per step" in st002.title
    assert "pin_memory=True" in (st002.fix or "")
    assert "ST003" not in found  # one tiny readback a step is not many


def test_synthetic_idle_split_by_queue_state(tmp_path: Path) -> None:
    """HTA's vocabulary: the matmul was launched (480 µs) after the copy ended on the GPU
    (180 µs): host wait; nothing else idles inside a step's span."""
    a = api.analyze(api.load(_item_and_pageable(tmp_path / "split_synthetic.json.gz"))).analysis
    for r in a.steps.rows:
        assert r.idle_queue == ((490 - 180) * US, 0, 0)
        assert sum(r.idle_queue) == r.idle_launch_ns + r.idle_host_ns


def _findings(path: Path) -> Report:
    return api.analyze(api.load(path))


REAL = {
    # trace: the stall findings it shows (only the BERT step reads a scalar back with .item()
    # while the GPU has nothing queued: 3.9 % of its step)
    "kineto/h100-bf16-bert-small": {"ST001"},
    # one whole-run "step" whose tiny copies are model.cuda() set-up: no step, no finding
    "dlprof/v1.8-pytorch-cnn": set(),
    "kineto/a100-ddp-nccl-3step": set(),
    "kineto/a100-tf32-alexnet": set(),
    "kineto/v100-legacy-resnet50": set(),
    "kineto/two-rank-sampled": set(),
    "kineto/mi250-rocm-minitoy": set(),
    "nsys/h100x2-bf16-fastvideo": set(),
    "tf_profiler/gpu-multiworker-xplane": set(),
}


@pytest.mark.parametrize("folder", sorted(REAL))
def test_stall_findings_fire_only_where_the_trace_shows_them(folder: str) -> None:
    where = REALTRACES / folder
    if not where.exists():
        pytest.skip("needs ../shared/realtraces")
    for path in sorted(p for p in where.iterdir() if p.suffix in (".gz", ".sqlite", ".pb")):
        if path.name.startswith("dlprof_dldb"):
            continue  # DLProf's own aggregation: no per-launch timestamps, no steps
        ids = {f.id for f in _findings(path).findings if f.id.startswith("ST")}
        assert ids == REAL[folder], path.name


def test_bert_item_sync_names_the_op_and_its_idle() -> None:
    where = REALTRACES / "kineto" / "h100-bf16-bert-small"
    if not where.exists():
        pytest.skip("needs ../shared/realtraces")
    report = _findings(next(where.glob("*.json.gz")))
    (f,) = [f for f in report.findings if f.id == "ST001"]
    assert "aten::_local_scalar_dense" in f.title and "153.9 µs per step" in f.title
