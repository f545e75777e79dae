"""The headline figures and ranked tables of one run, computed from the canonical tables.

Each figure comes from the rows when the input has them and from the profiler's own reported value
otherwise (a DLProf folder with only ``dlprof_summary.csv``); when neither exists it is ``None``, never
a made-up 0. Aggregation is Arrow ``group_by``; nothing loops over launches in Python.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport._group_by import aggregate_by
from tcreport.analysis import _codes
from tcreport.analysis.wall import WallSource, wall
from tcreport.model import IterationInfo, Run


@dataclass(frozen=True)
class TimeFigures:
    wall_ns: int | None
    gpu_kernel_ns: int | None  # compute kernels only
    tc_kernel_ns: int | None
    memory_ns: int | None
    kernel_launches: int | None
    unique_kernels: int | None
    unknown_kernel_ns: int | None = None  # kernel time with no Tensor Core verdict
    #: which measure ``wall_ns`` is (:mod:`tcreport.analysis.wall`): two runs' are compared only
    #: where both are the same
    wall_source: WallSource | None = None


#: What an eligible op row with no GPU time of its own says (:attr:`OpRow.gpu_time_note`).
NO_GPU_TIME = "The input gives no GPU time for this op."
WRAPPER = "No GPU time of its own: its kernels are counted under the op it calls."


@dataclass(frozen=True)
class OpRow:
    name: str
    type: str | None
    calls: int | None
    gpu_ns: int | None
    share: float | None
    tc_eligible: bool
    uses_tc: bool
    dtype: str | None
    input_shapes: str | None = None
    cpu_ns: int | None = None
    # compute-kernel time of the eligible calls that used no Tensor Core kernel (None: not counted)
    missed_gpu_ns: int | None = None
    # False when no call has a known verdict (all its kernels unknown, e.g. on an unknown vendor):
    # such an op is not a miss, it is unjudged.
    tc_known: bool = True
    # time of the op's own Tensor Core kernels (None: no op/kernel link; see :attr:`tc_ns`)
    tc_gpu_ns: int | None = None
    scope: str | None = None  # the layer/module the op ran in, as the reader found it
    # the profiler labelled the op TC-eligible or not (DLProf): its flag decides, GPU time or none
    profiler_labelled: bool = False

    @property
    def tc_ns(self) -> int:
        """GPU time on Tensor Cores: the op's TC kernels where kernels link to ops, else (a
        profiler's per-op verdict alone) the time of the calls that did not miss."""
        gpu = self.gpu_ns or 0
        if self.tc_gpu_ns is not None:
            return min(self.tc_gpu_ns, max(0, gpu - self.missed_ns))
        return max(0, gpu - self.missed_ns) if self.uses_tc else 0

    @property
    def other_ns(self) -> int:
        """The rest of the op's GPU time: neither on Tensor Cores nor a Tensor Core miss, so
        ``tc_ns + missed_ns + other_ns == gpu_ns`` for every op."""
        return max(0, (self.gpu_ns or 0) - self.tc_ns - self.missed_ns)

    @property
    def counts_as_eligible(self) -> bool:
        """Eligible and did GPU work of its own. A wrapper op whose kernels are attributed to its
        child (``aten::linear`` over ``aten::addmm`` in a Kineto trace) ran nothing itself:
        counting it would double the op and claim a miss. Where the profiler labelled the op
        (DLProf's TC Eligible) its flag is the authority: DLProf counts an eligible
        ``_XlaCompile`` or ``PartitionedCall`` with no GPU time, and so do we."""
        return self.tc_eligible and (self.gpu_ns != 0 or self.profiler_labelled)

    @property
    def gpu_time_note(self) -> str | None:
        """Why an eligible op's GPU time says nothing of its Tensor Core use, in every output's
        words (the eligibility table, the op tables); ``None`` when its time is its own."""
        if not self.tc_eligible:
            return None
        if self.gpu_ns is None:
            return NO_GPU_TIME
        return None if self.counts_as_eligible else WRAPPER

    @property
    def missed_tc(self) -> bool:
        """An eligible op that never used Tensor Cores in any call."""
        return self.counts_as_eligible and not self.uses_tc and self.tc_known

    @property
    def partly_missed(self) -> bool:
        """An eligible op that used Tensor Cores in some calls and not in others (the first
        convolution's 3 input channels, one GEMM whose N is the vocabulary size): grouped by
        name, the calls that missed hide behind the ones that did."""
        return self.counts_as_eligible and self.uses_tc and (self.missed_gpu_ns or 0) > 0

    @property
    def has_misses(self) -> bool:
        """The one definition of "missed Tensor Cores" that figures, rules and renderers share:
        in every call, or in some."""
        return self.missed_tc or self.partly_missed

    @property
    def missed_ns(self) -> int:
        """GPU time of the eligible calls known to have missed (:attr:`missed_gpu_ns`), whether
        the op missed in every call with a verdict or in some: calls whose kernels have no
        verdict are unknown, not missed, and so are calls not eligible. All of the op's time only
        where the row has no per-call count (a profiler's per-op verdict alone)."""
        if not self.has_misses:
            return 0
        if self.missed_gpu_ns is None:
            return (self.gpu_ns or 0) if self.missed_tc else 0
        return self.missed_gpu_ns


def in_some_calls_only(partly: int, total: int) -> str:
    """The remark after a count of ops that missed Tensor Cores, for the ``partly`` of ``total``
    that missed only in some of their calls; "" when none did. One wording for the verdict line
    and every rule, read after "1 eligible op did not" as after "3 eligible ops did not"."""
    if partly <= 0:
        return ""
    if total <= 1:
        return " (only in some of its calls)"
    if partly >= total:
        return " (each only in some of its calls)"
    their = "its" if partly == 1 else "their"
    return f" ({partly} of them only in some of {their} calls)"


@dataclass(frozen=True)
class KernelRow:
    """The launches of one kernel name that got one Tensor Core verdict. A name's launches can
    disagree (Nsight Compute counters decide launch by launch: one ``tile_product`` launch on
    Tensor Cores, one not); each verdict is then a row of its own, so a row's ``uses_tc`` is true
    of every launch in it and the rows with ``uses_tc`` sum to the run's TC kernel time."""

    name: str
    calls: int
    gpu_ns: int
    share: float | None
    uses_tc: bool | None
    tc_rule: str | None
    profiler_uses_tc: bool | None
    #: unique among the rows: the name, or for a name's later rows ``name (verdict: no)`` (the
    #: HTML row id; evidence names a kernel and so links to the name's first, longest row)
    key: str = ""
    #: other rows carry the same name with another verdict (``key`` tells them apart)
    split: bool = False


def _sum(col: pa.ChunkedArray) -> int:
    value = pc.sum(col).as_py()
    return int(value) if value is not None else 0


def _share(part: int | None, whole: int | None) -> float | None:
    if part is None or whole is None or whole <= 0:
        return None
    return min(1.0, max(0.0, part / whole))


def time_figures(run: Run, info: IterationInfo) -> TimeFigures:
    """The headline times of ``run``, sliced to the iterations ``info`` says were aggregated."""
    rep = run.meta.reported
    k = run.kernels
    gpu: int | None
    if k is not None:
        gpu = _sum(k.column("duration_ns"))
        tc_mask = pc.fill_null(pc.equal(k.column("uses_tc"), True), False)
        tc: int | None = _sum(k.column("duration_ns").filter(tc_mask))  # not the wide table
        if (
            k.num_rows
            and k.column("uses_tc").null_count == k.num_rows
            and rep.tc_kernel_ns is not None
        ):
            tc = rep.tc_kernel_ns  # nothing classified: the profiler's own figure is better than 0
        unknown: int | None = _sum(k.column("duration_ns").filter(pc.is_null(k.column("uses_tc"))))
        if tc == rep.tc_kernel_ns and k.num_rows and k.column("uses_tc").null_count == k.num_rows:
            unknown = max(0, (gpu or 0) - (tc or 0))
        launches: int | None = _sum(k.column("calls"))
        unique: int | None = _codes.count_distinct(k.column("name"))
    else:
        gpu, tc, launches, unique = rep.gpu_kernel_ns, rep.tc_kernel_ns, None, rep.unique_kernels
        unknown = None
    memory = _sum(run.memory.column("duration_ns")) if run.memory is not None else rep.memory_ns
    w = wall(run, info)
    return TimeFigures(
        wall_ns=w.ns,
        wall_source=w.source,
        gpu_kernel_ns=gpu,
        tc_kernel_ns=tc,
        memory_ns=memory,
        kernel_launches=launches,
        unique_kernels=unique,
        unknown_kernel_ns=unknown,
    )


#: What op_rows keeps of each op name's instances.
_OP_AGGREGATES = [
    ("type", "first"),
    ("dtype", "first"),
    ("scope", "first"),
    ("tc", "sum"),
    ("tc", "count"),
    ("shapes", "first"),
    ("calls", "sum"),
    ("gpu_ns", "sum"),
    ("gpu_ns", "count"),
    ("cpu_ns", "sum"),
    ("cpu_ns", "count"),
    ("elig", "any"),
    ("uses", "any"),
    ("known", "any"),
    ("missed", "sum"),
    ("labelled", "any"),
]


def op_rows(run: Run, gpu_kernel_ns: int | None, by_dtype: bool = False) -> list[OpRow]:
    """Ops grouped by full name (instances of one op become one row), by GPU time, descending.
    Grouped on name codes, with type and dtype as codes too: one string per group, not per row.

    ``by_dtype``: one row per name and data type instead, for the precision mix: an ``aten::mm``
    called in float32, float16 and bfloat16 is three rows there, not one under its first call's
    float32 (its row in the op table keeps that first dtype)."""
    ops = run.ops
    if ops is None or ops.num_rows == 0:
        return []
    (names, name), (types, typ), (dtypes, dtype), (scopes, scope) = (
        _codes.index_column(ops.column(c)) for c in ("name", "type", "dtype", "scope")
    )
    t = pa.table(
        {
            "name": name,
            "type": typ,
            "dtype": dtype,
            "scope": scope,
            "tc": _op_tc_ns(ops, run.kernels),
            "shapes": ops.column("input_shapes"),
            "calls": ops.column("calls"),
            "gpu_ns": _op_gpu_ns(ops, run.kernels),
            "cpu_ns": ops.column("cpu_ns"),
            "elig": pc.fill_null(ops.column("tc_eligible"), False),
            "uses": pc.fill_null(ops.column("uses_tc"), False),
            "known": pc.is_valid(ops.column("uses_tc")),
            "labelled": pc.is_valid(ops.column("profiler_tc_eligible")),
        }
    )
    # per call: eligible and known to use no Tensor Core kernel, so its time counts as missed
    call_missed = pc.and_(t.column("elig"), pc.fill_null(pc.invert(ops.column("uses_tc")), False))
    t = t.append_column("missed", pc.if_else(call_missed, pc.fill_null(t.column("gpu_ns"), 0), 0))
    if by_dtype:
        aggs = [a for a in _OP_AGGREGATES if a[0] != "dtype"]
        g = aggregate_by(t, ["name", "dtype"], aggs, use_threads=False)
        g = g.append_column("dtype_first", g.column("dtype"))
    else:
        g = aggregate_by(t, "name", _OP_AGGREGATES, use_threads=False)
    del t, name, typ, dtype, scope
    g = g.append_column("name_text", names.take(g.column("name")))
    # GPU time first; host time breaks ties, which orders a CPU-only capture by where time went.
    g = g.sort_by(
        [("gpu_ns_sum", "descending"), ("cpu_ns_sum", "descending"), ("name_text", "ascending")]
    )
    rows: list[OpRow] = []
    for r, op_type, op_dtype, op_scope in zip(
        g.to_pylist(),
        types.take(g.column("type_first")).to_pylist(),
        dtypes.take(g.column("dtype_first")).to_pylist(),
        scopes.take(g.column("scope_first")).to_pylist(),
        strict=True,
    ):  # small
        gpu = int(r["gpu_ns_sum"]) if r["gpu_ns_count"] else None
        rows.append(
            OpRow(
                name=r["name_text"],
                type=op_type,
                calls=None if r["calls_sum"] is None else int(r["calls_sum"]),
                gpu_ns=gpu,
                share=_share(gpu, gpu_kernel_ns),
                tc_eligible=bool(r["elig_any"]),
                uses_tc=bool(r["uses_any"]),
                dtype=op_dtype,
                input_shapes=r["shapes_first"],
                cpu_ns=int(r["cpu_ns_sum"]) if r["cpu_ns_count"] else None,
                missed_gpu_ns=int(r["missed_sum"]) if gpu is not None else None,
                tc_gpu_ns=int(r["tc_sum"]) if r["tc_count"] else None,
                scope=op_scope,
                tc_known=bool(r["known_any"]),
                profiler_labelled=bool(r["labelled_any"]),
            )
        )
    return rows


def _op_gpu_ns(ops: pa.Table, kernels: pa.Table | None) -> pa.ChunkedArray:
    """The ops' kernel time; where the input gives none at all but the profiler's own per-op GPU
    time and no kernel table (a DLProf 0.x detailed report alone), that time: it is what the
    profiler reported. Beside a kernel table it is not kernel time (DLProf's op-type totals count
    an op's copies too), so op time would outgrow the kernel time it is a part of."""
    gpu = ops.column("gpu_ns")
    if (
        gpu.null_count == ops.num_rows
        and ops.column("gpu_total_ns").null_count < ops.num_rows
        and (kernels is None or kernels.num_rows == 0)
    ):
        return ops.column("gpu_total_ns")
    return gpu


def _op_tc_ns(ops: pa.Table, kernels: pa.Table | None) -> pa.Array:
    """Per op row, the time of its Tensor Core kernels (null where no kernel links to ops):
    an op that used Tensor Cores also launches layout and helper kernels that do not."""
    n = ops.num_rows
    if (
        kernels is None
        or kernels.num_rows == 0
        or kernels.column("op_id").null_count == len(kernels)
    ):
        return pa.nulls(n, pa.int64())
    j = _codes.joint(ops.column("op_id"), kernels.column("op_id"))
    tc = np.asarray(pc.fill_null(kernels.column("uses_tc"), False).to_numpy(zero_copy_only=False))
    linked = np.zeros(j.size, bool)  # per op key: does any kernel link to it (no int64 counts)
    linked[j.other[j.other >= 0]] = True
    ok = np.flatnonzero((j.other >= 0) & tc.astype(bool))
    dur = np.asarray(pc.fill_null(kernels.column("duration_ns"), 0).to_numpy(), dtype=np.int64)
    per = np.zeros(j.size, np.int64)  # exact int64 sums, without bincount's float64 copies
    np.add.at(per, j.other[ok], dur[ok])
    del dur, ok
    if not j.size:
        return pa.array(np.zeros(n, dtype=np.int64), mask=np.ones(n, dtype=bool))
    at = np.maximum(j.ops, 0)  # int32, like the keys (np.take would copy them to intp)
    has = (j.ops >= 0) & linked[at]
    vals = per[at]
    del per, at
    return pa.array(vals, mask=~has)


def kernel_rows(run: Run, gpu_kernel_ns: int | None) -> list[KernelRow]:
    """Kernels grouped by name and verdict, by GPU time, descending (a name's rows in the order
    yes, no, unknown where their times tie). Grouped on name codes: one string per group."""
    k = run.kernels
    if k is None or k.num_rows == 0:
        return []
    (names, name), (rules, rule) = (_codes.index_column(k.column(c)) for c in ("name", "tc_rule"))
    t = pa.table(
        {
            "name": name,
            "uses_tc": k.column("uses_tc"),
            "calls": k.column("calls"),
            "dur": k.column("duration_ns"),
            "rule": rule,
            "prof": k.column("profiler_uses_tc"),
        }
    )
    aggs = [("calls", "sum"), ("dur", "sum"), ("rule", "first"), ("prof", "first")]
    g = aggregate_by(t, ["name", "uses_tc"], aggs, use_threads=False)
    g = g.append_column("name_text", names.take(g.column("name")))
    order = pc.fill_null(pc.if_else(g.column("uses_tc"), 0, 1), 2)  # yes, no, unknown
    g = g.append_column("order", order)
    g = g.sort_by([("dur_sum", "descending"), ("name_text", "ascending"), ("order", "ascending")])
    rule_ids = rules.take(g.column("rule_first")).to_pylist()
    seen: dict[str, int] = {}
    rows = g.to_pylist()
    for r in rows:  # one per (name, verdict): small
        seen[r["name_text"]] = seen.get(r["name_text"], 0) + 1
    first: set[str] = set()
    out: list[KernelRow] = []
    for r, tc_rule in zip(rows, rule_ids, strict=True):
        text, verdict = r["name_text"], r["uses_tc"]
        key = text if text not in first else f"{text} (verdict: {_VERDICT_KEY[verdict]})"
        first.add(text)
        out.append(
            KernelRow(
                name=text,
                calls=int(r["calls_sum"]),
                gpu_ns=int(r["dur_sum"]),
                share=_share(int(r["dur_sum"]), gpu_kernel_ns),
                uses_tc=verdict,
                tc_rule=tc_rule,
                profiler_uses_tc=r["prof_first"],
                key=key,
                split=seen[text] > 1,
            )
        )
    return out


#: How a name's later verdict rows are told apart in :attr:`KernelRow.key`.
_VERDICT_KEY = {True: "yes", False: "no", None: "unknown"}
