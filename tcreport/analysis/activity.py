"""GPU activity as flat numpy arrays: one interval per launch or copy, with a category and a group.

The step breakdown, the communication overlap and the HTML timeline all ask the same questions of
the same intervals (which kind of work, on which GPU and stream, in which iteration), so the
kernel and memory tables are turned into arrays here once, with the category decided by kernel
name and Tensor Core verdict:

* communication: NCCL/RCCL kernels and other collectives (custom all-reduce, NVSHMEM), by name;
* Tensor Core compute, other compute (verdict no) and compute of unknown verdict;
* memory: memcpy and memset rows.

:mod:`tcreport.analysis.sweep` then cuts these intervals into elementary segments and counts
overlapped time once, by category priority, with no per-launch Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.analysis import _codes

#: Kernel names of collectives. NCCL's ``ncclDevKernel_*`` / ``ncclKernel_*``, ROCm's RCCL, and the
#: custom collectives frameworks ship instead of NCCL (vLLM/TensorRT-LLM all-reduce, NVSHMEM,
#: multimem); matched case-insensitively.
COLLECTIVE = (
    r"nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|cross_device_reduce"
    r"|nvshmem|multimem|c10d::|broadcast_kernel|sendrecv"
)


class Cat(IntEnum):
    """Activity categories, in the priority that decides overlapped time (lowest value wins)."""

    TC = 0
    OTHER = 1
    UNKNOWN = 2
    COMM = 3
    MEMORY = 4


N_CATS = len(Cat)
IDLE = N_CATS  # the category index of a segment with no activity
COMPUTE_MASK = (1 << Cat.TC) | (1 << Cat.OTHER) | (1 << Cat.UNKNOWN)


@dataclass(frozen=True)
class Activity:
    """Timed GPU work of a run; every array has one entry per interval."""

    start: np.ndarray  # int64 ns
    end: np.ndarray
    cat: np.ndarray  # int8, a Cat value
    device: np.ndarray  # int64, -1 when unknown
    stream: np.ndarray  # int64, -1 when unknown
    iteration: np.ndarray  # int64, -1 outside every iteration
    process: np.ndarray  # int64, -1 when unknown
    kernel_row: np.ndarray  # row in the kernels table, -1 for memory rows

    def __len__(self) -> int:
        return int(self.start.size)


def _i64(col: pa.ChunkedArray, fill: int = -1) -> np.ndarray:
    return np.asarray(pc.fill_null(col, fill).to_numpy(zero_copy_only=False), np.int64)


def is_collective(names: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Per row: is this kernel a collective? Regex once per distinct name."""
    return np.asarray(
        _codes.matches(names, COLLECTIVE, ignore_case=True).to_numpy(zero_copy_only=False), bool
    )


def kernel_categories(kernels: pa.Table) -> np.ndarray:
    """One :class:`Cat` per kernel row: collectives by name, then the Tensor Core verdict."""
    verdict = kernels.column("uses_tc")
    tc = np.asarray(pc.fill_null(verdict, False).to_numpy(zero_copy_only=False), bool)
    known = np.asarray(pc.is_valid(verdict).to_numpy(zero_copy_only=False), bool)
    cat = np.where(tc, Cat.TC, np.where(known, Cat.OTHER, Cat.UNKNOWN)).astype(np.int8)
    cat[is_collective(kernels.column("name"))] = Cat.COMM
    return cat


def _timed(table: pa.Table) -> pa.Table:
    table = table.select(["start_ns", "duration_ns", "calls", "device_id", "stream_id",
                          "iteration", "process_id"])  # fmt: skip
    ok = pc.and_(pc.is_valid(table.column("start_ns")), pc.equal(table.column("calls"), 1))
    return table.filter(pc.fill_null(ok, False))


def collect(kernels: pa.Table | None, memory: pa.Table | None) -> Activity | None:
    """The timed intervals of a run; ``None`` when no launch has a timestamp (aggregated input)."""
    parts: list[tuple[pa.Table, np.ndarray, np.ndarray]] = []
    if kernels is not None and kernels.num_rows:
        rows = np.arange(kernels.num_rows, dtype=np.int64)
        ok = pc.and_(pc.is_valid(kernels.column("start_ns")), pc.equal(kernels.column("calls"), 1))
        keep = np.asarray(pc.fill_null(ok, False).to_numpy(zero_copy_only=False), bool)
        if keep.any():
            cols = ["name", "uses_tc", "start_ns", "duration_ns", "device_id", "stream_id",
                    "iteration", "process_id"]  # fmt: skip
            k = kernels.select(cols)  # filter only what is used: kernel tables are wide
            k = k if keep.all() else k.filter(pa.array(keep))
            parts.append((k, kernel_categories(k), rows[keep]))
    if memory is not None and memory.num_rows:
        m = _timed(memory)
        if m.num_rows:
            parts.append((m, np.full(m.num_rows, Cat.MEMORY, np.int8), np.full(m.num_rows, -1)))
    if not parts:
        return None
    start = np.concatenate([_i64(t.column("start_ns"), 0) for t, _, _ in parts])
    dur = np.concatenate([np.maximum(_i64(t.column("duration_ns"), 0), 0) for t, _, _ in parts])
    return Activity(
        start=start,
        end=start + dur,
        cat=np.concatenate([c for _, c, _ in parts]),
        device=np.concatenate([_i64(t.column("device_id")) for t, _, _ in parts]),
        stream=np.concatenate([_i64(t.column("stream_id")) for t, _, _ in parts]),
        iteration=np.concatenate([_i64(t.column("iteration")) for t, _, _ in parts]),
        process=np.concatenate([_i64(t.column("process_id")) for t, _, _ in parts]),
        kernel_row=np.concatenate([r for _, _, r in parts]).astype(np.int64),
    )


def order_by(groups: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Sort order by (group, time): one argsort of a packed key when it fits in int64."""
    if times.size == 0:
        return np.empty(0, np.int64)
    t0, width = int(times.min()), int(times.max()) - int(times.min()) + 1
    g0, ngroups = int(groups.min()), int(groups.max()) - int(groups.min()) + 1
    if ngroups * width < (1 << 62):
        key = (groups - g0) * width + (times - t0)
        result: np.ndarray = np.argsort(key)
        return result
    fallback: np.ndarray = np.lexsort((times, groups))
    return fallback
