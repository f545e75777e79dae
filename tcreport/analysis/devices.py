"""Per-GPU figures: on multi-GPU runs an idle or fp32-only rank hides inside the total.

The rows sum to the run's totals (kernel, Tensor Core and memory time, launches); where the input
has memory time but no per-row device (a DLProf summary), it is the one GPU's, or, where kernels
ran on several, a row of no known GPU's.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from tcreport._group_by import aggregate_by
from tcreport.analysis.figures import _share
from tcreport.model import Run


@dataclass(frozen=True)
class DeviceRow:
    """Per-GPU figures: on multi-GPU runs an idle or fp32-only rank hides inside the total."""

    device_id: int | None
    name: str | None
    launches: int
    gpu_kernel_ns: int
    tc_kernel_ns: int
    memory_ns: int
    tc_share: float | None


def device_rows(run: Run) -> list[DeviceRow]:
    k = run.kernels
    if k is None or k.num_rows == 0:
        return []
    kt = pa.table(
        {
            "device_id": k.column("device_id"),
            "dur": k.column("duration_ns"),
            "tc": pc.if_else(pc.fill_null(k.column("uses_tc"), False), k.column("duration_ns"), 0),
            "calls": k.column("calls"),
        }
    )
    g = aggregate_by(
        kt, "device_id", [("dur", "sum"), ("tc", "sum"), ("calls", "sum")], use_threads=False
    )
    mem: dict[int | None, int] = {}
    if run.memory is not None and run.memory.num_rows:
        mt = pa.table(
            {"device_id": run.memory.column("device_id"), "dur": run.memory.column("duration_ns")}
        )
        for r in aggregate_by(mt, "device_id", [("dur", "sum")], use_threads=False).to_pylist():
            mem[r["device_id"]] = int(r["dur_sum"])
    elif run.memory is None and run.meta.reported.memory_ns is not None:
        # no memory rows, only the profiler's total (a DLProf CSV folder): one GPU had it all;
        # with several, no GPU is known to have had it (a row of its own, so the rows still sum)
        one = g.column("device_id")[0].as_py() if g.num_rows == 1 else None
        mem[one] = run.meta.reported.memory_ns
    names = {gpu.device_id: gpu.name for gpu in run.meta.gpus}
    found = {r["device_id"]: r for r in g.to_pylist()}
    # a GPU that only copied (device 1 of the TF multi-worker capture) is a row too, so the
    # rows' memory time sums to the run's
    for dev in mem.keys() - found.keys():
        found[dev] = {"device_id": dev, "calls_sum": 0, "dur_sum": 0, "tc_sum": 0}
    rows = [
        DeviceRow(
            device_id=r["device_id"],
            name=names.get(r["device_id"]) if r["device_id"] is not None else None,
            launches=int(r["calls_sum"]),
            gpu_kernel_ns=int(r["dur_sum"]),
            tc_kernel_ns=int(r["tc_sum"]),
            memory_ns=mem.get(r["device_id"], 0),
            tc_share=_share(int(r["tc_sum"]), int(r["dur_sum"])),
        )
        for r in found.values()
    ]
    return sorted(rows, key=lambda d: (d.device_id is None, d.device_id or 0))
