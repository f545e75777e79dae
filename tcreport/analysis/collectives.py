"""Collective bandwidth: algorithm and bus bandwidth per collective type and message size.

A collective's time says little until it is set against the bytes it moved. Where the trace
records each NCCL kernel's message (PyTorch writes ``Collective name``, ``In msg nelems``, ``Out
msg nelems``, ``dtype`` and ``Group size`` in the kernel's args; the canonical ``collectives``
table), the definitions of NVIDIA's nccl-tests apply (``doc/PERFORMANCE.md``, NVIDIA/nccl-tests
@ 03a204a):

* algorithm bandwidth ``algbw = S / t``, ``S`` the size of the whole array in bytes: the message
  itself for all-reduce, broadcast, reduce, send/receive; for all-gather the gathered output and
  for reduce-scatter the input (``count × size × n``); for all-to-all the buffer each rank sends.
  In every case the larger of the input and output sizes, which is what this module takes;
* bus bandwidth ``busbw = algbw × factor``: ``2(n-1)/n`` for all-reduce, ``(n-1)/n`` for
  all-gather, reduce-scatter and all-to-all, ``1`` for broadcast, reduce and send/receive, ``n``
  the ranks in the process group. It is the figure to hold against a link's peak, independent of
  ``n``; nccl-tests measure it in one direction.

The time ``t`` of one call is its kernel's duration on the rank that waited least: a collective
kernel starts when its rank arrives and ends when the last rank has, so on every other rank it
also holds the time spent waiting for the slowest (load imbalance, :mod:`tcreport.analysis.job`).
The k-th call of one (process group, collective, sizes, type) on each rank is the same call; with
one rank present its own duration is all there is, and the figures are a floor.

The link's peak needs the GPU model and the topology. Traces record the model, never which ranks
share an NVLink domain and which talk over PCIe or the network, so the NVLink figure of the device
table is shown as what busbw could reach inside one NVLink domain, labelled so, never as a verdict.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport._group_by import aggregate_by
from tcreport.analysis import device_table
from tcreport.ingest.common.plausible import MAX_BYTES

#: Bytes per element of the dtypes PyTorch names in NCCL kernel args (``c10::ScalarType`` names).
DTYPE_BYTES = {
    "double": 8, "float": 4, "half": 2, "bfloat16": 2, "long": 8, "int": 4, "short": 2,
    "char": 1, "byte": 1, "bool": 1, "complexfloat": 8, "complexdouble": 16, "complexhalf": 4,
    "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
    "uint16": 2, "uint32": 4, "uint64": 8,
}  # fmt: skip
#: Columns of a rank's calls (:func:`calls`).
CALL_COLUMNS = ("collective", "dtype", "in_nelems", "out_nelems", "group_size", "process_group")
SOURCE = "NVIDIA/nccl-tests doc/PERFORMANCE.md (@ 03a204a)"


class Family(StrEnum):
    ALL_REDUCE = "all-reduce"
    ALL_GATHER = "all-gather"
    REDUCE_SCATTER = "reduce-scatter"
    ALL_TO_ALL = "all-to-all"
    BROADCAST = "broadcast"
    REDUCE = "reduce"
    SEND_RECV = "send/receive"
    OTHER = "other"


_FAMILIES = (
    (re.compile(r"allreduce|barrier"), Family.ALL_REDUCE),
    (re.compile(r"allgather"), Family.ALL_GATHER),
    (re.compile(r"reducescatter"), Family.REDUCE_SCATTER),
    (re.compile(r"alltoall"), Family.ALL_TO_ALL),
    (re.compile(r"broadcast"), Family.BROADCAST),
    (re.compile(r"^reduce$"), Family.REDUCE),
    (re.compile(r"^(send|recv|sendrecv)$"), Family.SEND_RECV),
)


def family(name: str) -> Family:
    """``_allgather_base``, ``all_gather_into_tensor`` -> all-gather; unknown names: other."""
    flat = re.sub(r"[^a-z]", "", name.lower()).removesuffix("base").removesuffix("intotensor")
    flat = flat.removesuffix("tensor").removesuffix("coalesced")
    return next((f for pattern, f in _FAMILIES if pattern.search(flat)), Family.OTHER)


def bus_factor(f: Family, n: int | None) -> float | None:
    """nccl-tests' correction from algorithm to bus bandwidth for ``n`` ranks; None: undefined."""
    if f in (Family.BROADCAST, Family.REDUCE, Family.SEND_RECV):
        return 1.0
    if n is None or n < 1 or f is Family.OTHER:
        return None
    if f is Family.ALL_REDUCE:
        return 2 * (n - 1) / n
    return (n - 1) / n


def calls(collectives: pa.Table | None) -> pa.Table | None:
    """A rank's collective calls, the columns the bandwidth needs; None without any."""
    if collectives is None or collectives.num_rows == 0:
        return None
    t = collectives.select([*CALL_COLUMNS, "start_ns", "duration_ns"])
    return pa.table(
        {
            c: t[c].cast(pa.string()) if pa.types.is_dictionary(t[c].type) else t[c]
            for c in t.schema.names
        }
    )


@dataclass(frozen=True)
class BandwidthRow:
    """One (collective, element type, message size, group size): its calls and bandwidth."""

    collective: str  # a Family value
    name: str  # as the profiler wrote it
    dtype: str | None
    message_bytes: int | None  # S of nccl-tests; None when the element size is unknown
    group_size: int | None
    calls: int  # distinct calls (one per call, however many ranks ran it)
    ranks: int  # ranks present that ran them
    time_ns: int  # the calls' time on the rank that waited least, summed
    algbw_gbs: float | None
    busbw_gbs: float | None
    nvlink_share: float | None  # busbw / the NVLink peak in one direction (topology unknown)


@dataclass(frozen=True)
class Bandwidth:
    rows: tuple[BandwidthRow, ...]  # longest total time first
    recorded: bool  # whether any rank's trace recorded message sizes
    note: str  # what the figures are against, or what is missing
    nvlink_gbs: float | None = None  # one direction, of the GPU model the ranks report


def _keyed(per_rank: Sequence[tuple[int, pa.Table]]) -> pa.Table:
    parts = [
        t.append_column("rank", pa.array(np.full(t.num_rows, r, np.int32))) for r, t in per_rank
    ]
    t = pa.concat_tables(parts).sort_by([("rank", "ascending"), ("start_ns", "ascending")])
    text = [pc.fill_null(t[c].cast(pa.string()), "") for c in CALL_COLUMNS]
    key = pc.binary_join_element_wise(*text, "\x1f")
    codes = pc.dictionary_encode(key).combine_chunks().indices.to_numpy(zero_copy_only=False)
    rank = t["rank"].to_numpy()
    # the k-th call of each key on each rank: position within its (rank, key) run
    order = np.lexsort((np.arange(codes.size), codes, rank))
    group = rank[order].astype(np.int64) * (int(codes.max(initial=0)) + 1) + codes[order]
    first = np.r_[True, group[1:] != group[:-1]]
    starts = np.maximum.accumulate(np.where(first, np.arange(group.size), 0))
    occurrence = np.empty(codes.size, np.int64)
    occurrence[order] = np.arange(group.size) - starts
    return t.append_column("key", pa.array(codes)).append_column("k", pa.array(occurrence))


def bandwidth(
    per_rank: Sequence[tuple[int, pa.Table | None]],
    gpu_names: Sequence[str],
    missing: str | None = None,
) -> Bandwidth:
    """The bandwidth table of the ranks' calls (:func:`calls` of each rank); ``missing`` says why
    there are no sizes where the format knows better than Kineto's words."""
    present = [(r, t) for r, t in per_rank if t is not None and t.num_rows]
    if not present:
        return Bandwidth((), False, missing or "message sizes not recorded: the collective kernels "
                         "carry no 'In msg nelems' / 'dtype' args (PyTorch records them in recent "
                         "versions)")  # fmt: skip
    t = _keyed(present)
    per_call = aggregate_by(t, ["key", "k"], [("duration_ns", "min"), ("rank", "count_distinct")])
    per_key = aggregate_by(
        per_call,
        "key",
        [("duration_ns_min", "sum"), ("k", "count"), ("rank_count_distinct", "max")],
    )
    firsts = aggregate_by(t, "key", [(c, "first") for c in CALL_COLUMNS], use_threads=False)
    meta = {r["key"]: r for r in firsts.to_pylist()}  # one per distinct message: small
    peak, note = _peak(gpu_names)
    rows = [_row(meta[r["key"]], r, peak) for r in per_key.to_pylist()]
    rows.sort(key=lambda r: (-r.time_ns, r.collective, -(r.message_bytes or 0)))
    if bad := sum(1 for r in meta.values() if _message(r)[1]):
        note += (
            f"; {bad} message size{'s' if bad > 1 else ''} past 32 PiB (no profile's: damaged "
            "args) left without a size or bandwidth"
        )
    return Bandwidth(tuple(rows), True, note, peak)


def _message(m: dict[str, object]) -> tuple[int | None, bool]:
    """nccl-tests' ``S`` of a call: the larger of its input and output element counts times the
    element size (``None`` when the dtype is unknown), and whether it is past ingest's bound on
    any size (damaged args: then ``None`` too, never a bandwidth)."""
    dtype = m["dtype_first"]
    size = DTYPE_BYTES.get(str(dtype).lower()) if dtype is not None else None
    elems = max(x for x in (m["in_nelems_first"], m["out_nelems_first"], 0) if isinstance(x, int))
    if size is None:
        return None, False
    return (None, True) if elems * size > MAX_BYTES else (elems * size, False)


def _row(m: dict[str, object], r: dict[str, int], peak: float | None) -> BandwidthRow:
    name = str(m["collective_first"])
    fam = family(name)
    dtype = m["dtype_first"]
    group = m["group_size_first"] if isinstance(m["group_size_first"], int) else None
    message, _ = _message(m)
    time_ns, count = int(r["duration_ns_min_sum"]), int(r["k_count"])
    algbw = (
        message * count / time_ns if message is not None and time_ns > 0 else None
    )  # B/ns = GB/s
    factor = bus_factor(fam, group)
    busbw = algbw * factor if algbw is not None and factor is not None else None
    return BandwidthRow(
        collective=fam.value,
        name=name,
        dtype=str(dtype) if dtype is not None else None,
        message_bytes=message,
        group_size=group,
        calls=count,
        ranks=int(r["rank_count_distinct_max"]),
        time_ns=time_ns,
        algbw_gbs=algbw,
        busbw_gbs=busbw,
        nvlink_share=busbw / peak if busbw is not None and peak else None,
    )


def _peak(gpu_names: Sequence[str]) -> tuple[float | None, str]:
    """The NVLink peak in one direction of the ranks' GPU model, and the words that go with it."""
    rows = {m.model: m for m in (device_table.for_name(n) for n in set(gpu_names)) if m is not None}
    missing = (
        "no link peak: the traces do not record the topology (which ranks share NVLink, which "
    )
    if not gpu_names:
        return None, missing + "talk over PCIe or the network) nor the GPU model"
    if len(rows) != 1:
        return None, missing + "talk over PCIe or the network), and the GPU model is " + (
            "not in the device table" if not rows else "not the same on every rank"
        )
    (model,) = rows.values()
    if model.nvlink_gbs is None:
        return (
            None,
            missing
            + f"talk over PCIe or the network); the device table has no NVLink figure for {model.model}",
        )
    one_way = model.nvlink_gbs / 2
    return one_way, (
        f"bus bandwidth ({SOURCE}) against {model.model} NVLink: {model.nvlink_gbs:g} GB/s both "
        f"directions, {one_way:g} GB/s each way ({model.nvlink_source}); only ranks that share "
        "one NVLink domain can reach it, and the traces do not record the topology"
    )
