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

#: Op names of communication: the kernel names above, plus the ops PyTorch records around a
#: collective (``record_param_comms``, ``c10d::allreduce_``, ``nccl:all_reduce``,
#: ``torch.distributed`` calls). Their GPU time is the collective's; it is not compute, so no
#: compute rule (OP001's "cannot use Tensor Cores") judges it; the communication rules do.
COLLECTIVE_OP = COLLECTIVE + r"|record_param_comms|^nccl:|broadcast"


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
    # int32 where the canonical column is (device, iteration) or the value is a row number: a
    # multi-million-launch trace holds these arrays through the whole step analysis
    device: np.ndarray  # int32, -1 when unknown
    stream: np.ndarray  # int32 when every id fits (they are small in practice), else int64; -1
    iteration: np.ndarray  # int32, -1 outside every iteration
    process: np.ndarray  # as ``stream``, -1 when unknown
    kernel_row: np.ndarray  # int32 row in the kernels table, -1 for memory rows
    # int64 host time of the launching call, -1 where none is recorded (the idle split by queue
    # state, analysis.gaps); None only in hand-built activities of tests
    launch: np.ndarray | None = None
    memory_row: np.ndarray | None = None  # int32 row in the memory table, -1 for kernel rows

    def __len__(self) -> int:
        return int(self.start.size)


def is_collective(names: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Per row: is this kernel a collective? Regex once per distinct name."""
    return np.asarray(
        _codes.matches(names, COLLECTIVE, ignore_case=True).to_numpy(zero_copy_only=False), bool
    )


def kernel_categories(kernels: pa.Table) -> np.ndarray:
    """One :class:`Cat` per kernel row: collectives by name, then the Tensor Core verdict."""
    verdict = kernels.column("uses_tc")
    cat = np.full(kernels.num_rows, Cat.UNKNOWN, np.int8)  # int8 from the start: no int64 rows
    cat[np.asarray(pc.is_valid(verdict).to_numpy(zero_copy_only=False), bool)] = Cat.OTHER
    cat[np.asarray(pc.fill_null(verdict, False).to_numpy(zero_copy_only=False), bool)] = Cat.TC
    cat[is_collective(kernels.column("name"))] = Cat.COMM
    return cat


@dataclass(frozen=True)
class _Part:
    """The timed rows of one table: which rows (``keep``; None: all), their categories and
    kernel rows (-1 for memory)."""

    table: pa.Table
    keep: np.ndarray | None
    cat: np.ndarray
    kernel_row: np.ndarray
    memory_row: np.ndarray


def _timed(table: pa.Table) -> np.ndarray | None:
    """Rows with a start and one call (a launch, not an aggregate); None: every row."""
    ok = pc.and_(pc.is_valid(table.column("start_ns")), pc.equal(table.column("calls"), 1))
    keep = np.asarray(pc.fill_null(ok, False).to_numpy(zero_copy_only=False), bool)
    return None if keep.all() else keep


_INT32 = np.iinfo(np.int32)


def _fits_int32(parts: list[_Part], name: str) -> bool:
    for p in parts:
        col = p.table.column(name)
        if col.null_count < len(col):
            mm = pc.min_max(col)
            if not _INT32.min <= mm["min"].as_py() <= mm["max"].as_py() <= _INT32.max:
                return False
    return True


def _column(parts: list[_Part], name: str, dtype: type, fill: int = -1) -> np.ndarray:
    """One column of the kept rows of every part, nulls as ``fill``, in one new array. Filled
    chunk by chunk: the result is the only array of the whole column (no per-table array, no
    filtered table, no concatenation), which keeps the step analysis' first peak low."""
    out: np.ndarray = np.empty(sum(p.cat.size for p in parts), dtype)
    pos = 0
    for p in parts:
        at = 0
        for chunk in p.table.column(name).chunks:
            n = len(chunk)
            if chunk.null_count:
                chunk = pc.fill_null(chunk, fill)
            values = chunk.to_numpy(zero_copy_only=False)  # a view when it has no null
            if p.keep is not None:
                values = values[p.keep[at : at + n]]
            at += n
            out[pos : pos + values.size] = values
            pos += values.size
    return out


def collect(kernels: pa.Table | None, memory: pa.Table | None) -> Activity | None:
    """The timed intervals of a run; ``None`` when no launch has a timestamp (aggregated input)."""
    parts: list[_Part] = []
    if kernels is not None and kernels.num_rows:
        keep = _timed(kernels)
        if keep is None or keep.any():
            rows = np.arange(kernels.num_rows, dtype=np.int32)
            cat = kernel_categories(kernels)
            if keep is not None:
                cat, rows = cat[keep], rows[keep]
            parts.append(_Part(kernels, keep, cat, rows, np.full(rows.size, -1, np.int32)))
    if memory is not None and memory.num_rows:
        keep = _timed(memory)
        n = memory.num_rows if keep is None else int(np.count_nonzero(keep))
        if n:
            cat = np.full(n, Cat.MEMORY, np.int8)
            rows = np.arange(memory.num_rows, dtype=np.int32)
            rows = rows if keep is None else rows[keep]
            parts.append(_Part(memory, keep, cat, np.full(n, -1, np.int32), rows))
    if not parts:
        return None
    start = _column(parts, "start_ns", np.int64, 0)
    end = _column(parts, "duration_ns", np.int64, 0)
    np.maximum(end, 0, out=end)  # a negative duration is no time
    end += start  # in place: no third array of launches
    # stream and process ids are only compared and grouped, never added: int32 when they fit,
    # as they do outside hostile inputs (4 bytes a launch each, for the whole step analysis)
    ids = {n: np.int32 if _fits_int32(parts, n) else np.int64 for n in ("stream_id", "process_id")}
    return Activity(
        start=start,
        end=end,
        cat=np.concatenate([p.cat for p in parts]),
        device=_column(parts, "device_id", np.int32),
        stream=_column(parts, "stream_id", ids["stream_id"]),
        iteration=_column(parts, "iteration", np.int32),
        process=_column(parts, "process_id", ids["process_id"]),
        kernel_row=np.concatenate([p.kernel_row for p in parts]),
        launch=_column(parts, "launch_ns", np.int64),
        memory_row=np.concatenate([p.memory_row for p in parts]),
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
