"""CPU-only host time over many threads: the union per thread is taken for every thread at once.
The H100 Kineto trace's ops with its GPU events removed (a CPU-only run), each op moved to a
thread of its own or all kept on theirs (synthetic edits of a real trace); the figure must be the
per-thread union a plain Python loop computes from the same events, and the rows (self time)
must add up to it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from trace_paths import REALTRACES, need

from tcreport import api
from tcreport.analysis import result

H100 = (
    REALTRACES
    / "kineto"
    / "h100-bf16-bert-small"
    / "gaunernst_bert-small-uncased__1016001.redacted.json.gz"
)
GPU_CATS = {
    "kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "cuda_runtime", "cuda_driver", "ac2g"
}  # fmt: skip


def _union_by_hand(ops: list[dict[str, Any]]) -> int:
    """Per (pid, tid): sort by start, merge, add up; in ns as the reader rounds (whole us * 1000
    plus the rounded fraction)."""

    def ns(us: float) -> int:
        whole = int(us // 1)
        return whole * 1000 + round((us - whole) * 1000)

    threads: dict[tuple[Any, Any], list[tuple[int, int]]] = {}
    for e in ops:
        s = ns(e["ts"])
        threads.setdefault((e["pid"], e["tid"]), []).append((s, s + max(ns(e["dur"]), 0)))
    total = 0
    for intervals in threads.values():
        reach: int | None = None
        for lo, hi in sorted(intervals):
            if reach is None or lo > reach:
                total += hi - lo
                reach = hi
            elif hi > reach:
                total += hi - reach
                reach = hi
    return total


@pytest.mark.parametrize("spread", [False, True], ids=["own threads", "one thread per op"])
def test_synthetic_cpu_only_host_time_is_the_union_per_thread(tmp_path: Path, spread: bool) -> None:
    doc = json.loads(gzip.decompress(need(H100).read_bytes()))
    events = [e for e in doc["traceEvents"] if e.get("cat") not in GPU_CATS]
    ops = [e for e in events if e.get("cat") == "cpu_op" and e.get("ph") == "X"]
    if spread:  # 479 threads of one op each: the union is each op's own time
        for i, e in enumerate(ops):
            e["tid"] = 10_000 + i
    doc["traceEvents"] = events
    path = tmp_path / "cpu_only.pt.trace.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    a = result.compute(api.load(path))
    assert a.host.total is not None
    assert a.host.total.ns == _union_by_hand(ops)


def test_synthetic_cpu_only_rows_are_self_time_summing_to_the_union(tmp_path: Path) -> None:
    """The rows' host time is each op's self time (nested time once, in the innermost op), so
    the rows add up to the headline's union and each share is of it."""
    doc = json.loads(gzip.decompress(need(H100).read_bytes()))
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") not in GPU_CATS]
    path = tmp_path / "cpu_only.pt.trace.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    a = result.compute(api.load(path))
    assert a.host.total is not None
    assert sum(r.cpu_ns for r in a.host.ops) == a.host.total.ns
    assert sum(r.cpu_ns for r in a.host.op_types) == a.host.total.ns
    assert all(r.cpu_ns <= r.inclusive_ns for r in a.host.ops)
    assert abs(sum(r.share or 0 for r in a.host.op_types) - 1) < 1e-9
