"""What both Kineto JSON parsers hand the reader: per-category Arrow frames and a few named
top-level fields.

There are two parsers (msgspec, streaming typed structs piece by piece; the stdlib ``json`` module,
whole document to dicts) and one place where raw JSON values become columns: both fill
:class:`Rows` with the raw values of the fields the reader uses and call :meth:`Collector.add`, so
that the tables cannot differ by parser. A category's rows are converted as soon as a piece is
parsed, which keeps the Python objects of at most one piece alive at a time.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tcreport.ingest.kineto import columns as col
from tcreport.schema import MAX_INTERVAL_NS, POSITIONS_NS

# Event categories, current spelling and the 2021 legacy one. RANGE: the CUPTI range profiler's
# per-kernel ranges (``cuda_profiler_range``), whose args hold the counters it measured.
KERNEL, RUNTIME, MEMCPY, MEMSET, OP, ANNOTATION, MODULE, RANGE = range(8)
KINDS = range(8)
CATEGORY = {
    "kernel": KERNEL,
    "Kernel": KERNEL,
    # MTIA's on-device work; libkineto now aliases MTIA_CCP_EVENTS to the kernel type
    "mtia_ccp_events": KERNEL,
    "cuda_runtime": RUNTIME,
    "cuda_driver": RUNTIME,
    "Runtime": RUNTIME,
    # host runtime calls of other accelerators (libkineto's ActivityType names)
    "mtia_runtime": RUNTIME,
    "xpu_runtime": RUNTIME,
    "privateuse1_runtime": RUNTIME,
    "privateuse1_driver": RUNTIME,
    "cuda_profiler_range": RANGE,
    "gpu_memcpy": MEMCPY,
    "Memcpy": MEMCPY,
    "gpu_memset": MEMSET,
    "Memset": MEMSET,
    "cpu_op": OP,
    "Operator": OP,
    "user_annotation": ANNOTATION,
    "python_function": MODULE,
}
LEGACY_CATEGORIES = frozenset({"Kernel", "Runtime", "Operator", "Memcpy", "Memset"})
#: Device activity tcreport does not read (device-side annotations, MTIA insight and counter
#: events, GPU PM counters): counted, so a trace holding only these is never called CPU-only.
UNREAD_DEVICE = frozenset(
    {"gpu_user_annotation", "mtia_insight", "mtia_counters", "gpu_pm_counter"}
)
STEP_PREFIX = "ProfilerStep#"
MODULE_PREFIX = "nn.Module: "

#: The ``args`` each category needs; nothing else of ``args`` is read (``Call stack`` strings, the
#: bulk of a 2021 trace, are never even decoded by the msgspec parser).
CORR, EID, DEVICE, STREAM, GRID, BLOCK, BYTES, DIMS, DTYPE, CONCRETE, TENSOR, GPU_TIME, COLL = (
    "corr",
    "eid",
    "device",
    "stream",
    "grid",
    "block",
    "bytes",
    "dims",
    "dtype",
    "concrete",
    "tensor",  # RANGE: the tensor-pipe counters' verdict (True/False/None)
    "gpu_time",  # RANGE: gpu__time_duration.sum, ns
    "coll",  # KERNEL: an NCCL kernel's message (Collective name, In/Out msg nelems, dtype, ...)
)
#: The columns :data:`COLL` fills: PyTorch's NCCL kernel args ``Collective name``, ``In msg
#: nelems``, ``Out msg nelems``, ``dtype``, ``Group size``, ``Process Group Name``.
COLL_COLUMNS = ("coll_name", "in_nelems", "out_nelems", "coll_dtype", "group_size", "pg_name")
_GPU_ARGS = (CORR, EID, DEVICE, STREAM)
ARGS: tuple[tuple[str, ...], ...] = (
    (*_GPU_ARGS, GRID, BLOCK, COLL),  # KERNEL
    (CORR, EID),  # RUNTIME
    (*_GPU_ARGS, BYTES),  # MEMCPY
    (*_GPU_ARGS, BYTES),  # MEMSET
    (EID, DIMS, DTYPE, CONCRETE),  # OP
    (EID,),  # ANNOTATION: CUDA-graph launches link to record_function ranges
    (),  # MODULE
    (CORR, EID, DEVICE, TENSOR, GPU_TIME),  # RANGE
)


def kind_of(cat: Any, ph: Any, name: Any) -> tuple[int | None, bool]:
    """The category an event goes to (None: not used), and whether its ``cat`` is a 2021 one.

    Only complete (``ph: X``) events count; ``python_function`` only for ``nn.Module`` scopes; a
    2021 ``Operator`` named ``ProfilerStep#N`` is the iteration mark, an annotation today."""
    if type(cat) is not str or ph != "X":
        return None, False
    kind = CATEGORY.get(cat)
    if kind == MODULE:
        if type(name) is not str or not name.startswith(MODULE_PREFIX):
            return None, False
    elif kind == OP and type(name) is str and name.startswith(STEP_PREFIX):
        kind = ANNOTATION
    return kind, cat in LEGACY_CATEGORIES


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Both parsers make objects by the hundred thousand (dicts, lists, structs) and no reference
    cycle, so every collection during a parse only scans them: with it, the ``json`` parse of
    the V100 x8 trace took 7.4 s of CPU instead of 3.6 s, the msgspec one 40 ms more. The
    collector runs again, as it was, when the parse ends."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


@dataclass
class Rows:
    """Raw JSON values of one category's events (one piece of the trace), a list per field.

    Argument lists the category does not need (see :data:`ARGS`) stay empty. ``eid`` is
    ``External id``, or ``external id`` when that key is absent; ``dims``, ``dtype`` and
    ``concrete`` (``Concrete Inputs``) are already reduced to text, as a list or a string column
    (the parsers memoise that work differently)."""

    name: list[Any]
    pid: list[Any]
    tid: list[Any]
    ts: list[Any]
    dur: list[Any]
    corr: list[Any] = field(default_factory=list)
    eid: list[Any] = field(default_factory=list)
    device: list[Any] = field(default_factory=list)
    stream: list[Any] = field(default_factory=list)
    #: raw values, or (as the msgspec parser hands them) the x, y and z columns already
    grid: list[Any] | tuple[pa.Array, pa.Array, pa.Array] = field(default_factory=list)
    block: list[Any] | tuple[pa.Array, pa.Array, pa.Array] = field(default_factory=list)
    nbytes: list[Any] = field(default_factory=list)
    dims: list[str | None] | pa.Array = field(default_factory=list)
    dtype: list[str | None] | pa.Array = field(default_factory=list)
    concrete: list[str | None] | pa.Array = field(default_factory=list)
    tensor: list[bool | None] = field(default_factory=list)
    gpu_time: list[Any] = field(default_factory=list)
    #: KERNEL: the raw values of :data:`COLL_COLUMNS`, one list per column
    coll: tuple[list[Any], ...] = field(default_factory=tuple)


def _collective_columns(values: tuple[list[Any], ...], n: int) -> dict[str, pa.Array]:
    """The NCCL message of each kernel (nulls for the others): names as text, counts as int."""
    name, n_in, n_out, dtype, group, pg = values if values else ([None] * n,) * 6
    return {
        "coll_name": col.str_column(name),
        "in_nelems": col.int_column(n_in, lo=0),
        "out_nelems": col.int_column(n_out, lo=0),
        "coll_dtype": col.str_column(dtype),
        "group_size": col.int_column(group, lo=1, hi=2**31 - 1),
        "pg_name": col.str_column([None if v is None else str(v) for v in pg]),
    }


def _strings(values: list[str | None] | pa.Array) -> pa.Array:
    return values if isinstance(values, pa.Array) else pa.array(values, pa.string())


def _table(kind: int, r: Rows) -> tuple[pa.Table, int]:
    """Columns of one piece of one category, and how many events were dropped.

    Events without a name, a start or a non-negative duration are dropped (and counted) so that
    later joins never see half an event; so are those lasting 2**50 ns (13 days) or more, damage
    that would wrap the int64 differences of the step breakdown and the timeline."""
    need = ARGS[kind]
    name = col.str_column(r.name)
    start = col.ns_column(r.ts)
    dur = col.ns_column(r.dur)
    cols: dict[str, pa.Array] = {
        "name": name,
        "pid": col.int_column(r.pid, parse_str=True),
        "tid": col.int_column(r.tid, parse_str=True),
        "start_ns": start,
        "dur_ns": dur,
    }
    if CORR in need:
        cols[CORR] = col.int_column(r.corr)
    if EID in need:
        cols[EID] = col.int_column(r.eid)
    if DEVICE in need:
        cols[DEVICE] = col.int_column(r.device, lo=-(2**31), hi=2**31 - 1)
    if STREAM in need:
        cols[STREAM] = col.int_column(r.stream)
    for key, values in ((GRID, r.grid), (BLOCK, r.block)):
        if key in need:
            axes = values if isinstance(values, tuple) else col.dims_columns(values)
            for axis, arr in zip("xyz", axes, strict=True):
                cols[f"{key}_{axis}"] = arr
    if BYTES in need:
        cols[BYTES] = col.int_column(r.nbytes, lo=0)
    if DIMS in need:
        cols[DIMS] = _strings(r.dims)
    if DTYPE in need:
        cols[DTYPE] = _strings(r.dtype)
    if CONCRETE in need:
        cols[CONCRETE] = _strings(r.concrete)
    if TENSOR in need:
        cols[TENSOR] = pa.array(r.tensor, pa.bool_())
    if GPU_TIME in need:
        cols[GPU_TIME] = col.int_column(r.gpu_time, lo=0, hi=MAX_INTERVAL_NS - 1)
    if COLL in need:
        cols.update(_collective_columns(r.coll, len(r.name)))
    table = pa.table(cols)
    if not (name.null_count or start.null_count or dur.null_count) and col.within(
        dur, 0, MAX_INTERVAL_NS - 1
    ):
        return table, 0  # the usual piece: every event kept, no mask to build
    ok = pc.and_(
        pc.and_(pc.is_valid(name), pc.is_valid(start)),
        pc.fill_null(pc.and_(pc.greater_equal(dur, 0), pc.less(dur, MAX_INTERVAL_NS)), False),
    )
    kept = pc.sum(ok).as_py() or 0
    return (table if kept == len(ok) else table.filter(ok)), len(ok) - kept


@dataclass(frozen=True)
class Frame:
    """One category's events as columns (``name pid tid start_ns dur_ns`` and its ``ARGS``)."""

    table: pa.Table

    def __len__(self) -> int:
        return int(self.table.num_rows)

    def col(self, key: str) -> pa.Array:
        c = self.table.column(key)
        return c.chunk(0) if c.num_chunks == 1 else c.combine_chunks()  # combine would copy

    @property
    def name(self) -> pa.Array:
        return self.col("name")

    @property
    def pid(self) -> pa.Array:
        return self.col("pid")

    @property
    def tid(self) -> pa.Array:
        return self.col("tid")

    @property
    def start_ns(self) -> pa.Array:
        return self.col("start_ns")

    @property
    def dur_ns(self) -> pa.Array:
        return self.col("dur_ns")


@dataclass(frozen=True)
class Header:
    """The named top-level fields the reader uses, raw; nothing else of the document is kept
    (``metadata`` holds the capturing machine's environment, tokens included)."""

    schema_version: Any = None
    cuda_runtime_version: Any = None
    base_time_ns: Any = None
    torch_version: Any = None  # metadata.system.torch_env_info.torch_version
    #: ``(id, name, computeMajor, computeMinor, numSms)`` of each object in ``deviceProperties``
    devices: tuple[tuple[Any, Any, Any, Any, Any], ...] = ()
    distributed: Any = None  # ``distributedInfo``: the job rank (ingest.common.distributed)


@dataclass(frozen=True)
class Parsed:
    header: Header
    frames: tuple[Frame, ...]  # indexed by KERNEL, RUNTIME, ...
    malformed: int  # entries of traceEvents that are not JSON objects
    dropped: int  # events without a name, start or non-negative duration
    legacy: bool  # 2021 category names seen
    parser: str  # "msgspec" or "json"
    unread_device: dict[str, int] = field(default_factory=dict)  # UNREAD_DEVICE category counts


#: The GPU activity categories, named as a note names them.
_DEVICE_KINDS = {KERNEL: "kernel", MEMCPY: "gpu_memcpy", MEMSET: "gpu_memset"}


class Collector:
    """Gathers the pieces of each category as they are parsed."""

    def __init__(self) -> None:
        self._parts: list[list[pa.Table]] = [[] for _ in KINDS]
        self.malformed = 0
        self.dropped = 0
        self.legacy = False
        self.unread_device: dict[str, int] = {}

    def unread(self, cat: Any) -> None:
        """Count an event the reader skips if its category is device activity."""
        if type(cat) is str and cat in UNREAD_DEVICE:
            self.unread_device[cat] = self.unread_device.get(cat, 0) + 1

    def add(self, kind: int, rows: Rows) -> None:
        if rows.name:
            table, dropped = _table(kind, rows)
            self._parts[kind].append(table)
            self._drop(kind, dropped)

    def _drop(self, kind: int, n: int) -> None:
        """Count ``n`` dropped events; dropped GPU events (a kernel that ends before it starts)
        also count as device events not read, so a trace whose every kernel was malformed is not
        taken for a capture without a GPU (:func:`tcreport.analysis.host_time.is_cpu_only`)."""
        self.dropped += n
        if n and kind in _DEVICE_KINDS:
            label = f"malformed {_DEVICE_KINDS[kind]}"
            self.unread_device[label] = self.unread_device.get(label, 0) + n

    def _placed(self, kind: int, table: pa.Table) -> pa.Table:
        """The events starting inside :data:`schema.POSITIONS_NS` (base time added); the others
        are counted as dropped (a ``ts`` of 4e15 us on a base time, a negative epoch)."""
        lo, hi = POSITIONS_NS
        start = table.column("start_ns")
        ok = pc.fill_null(pc.and_(pc.greater_equal(start, lo), pc.less(start, hi)), False)
        kept = pc.sum(ok).as_py() or 0
        if kept == table.num_rows:
            return table
        self._drop(kind, table.num_rows - kept)
        return table.filter(ok)

    def finish(self, header: Header, parser: str) -> Parsed:
        base = header.base_time_ns
        base_ns = base if type(base) is int and 0 <= base <= col.MAX_BASE_NS else 0
        frames = []
        for kind in KINDS:
            parts = self._parts[kind] or [_table(kind, Rows([], [], [], [], []))[0]]
            table = pa.concat_tables(parts).combine_chunks()
            if base_ns:
                i = table.schema.get_field_index("start_ns")
                table = table.set_column(i, "start_ns", pc.add(table.column(i), base_ns))
            frames.append(Frame(self._placed(kind, table)))
        self._parts = [[] for _ in KINDS]
        return Parsed(
            header,
            tuple(frames),
            self.malformed,
            self.dropped,
            self.legacy,
            parser,
            dict(self.unread_device),
        )
