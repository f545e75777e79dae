"""Did a kernel run on Tensor Cores? A verdict from its name, kept as versioned data.

The profilers that used to answer this (the TF profiler's ``kTensorCoreKernelNamePatterns``, the
PyTorch TensorBoard plugin's ``TC_Allowlist``, both descended from PyProf's 2020 list) stopped at
Ampere: they know ``h884``/``s1688``/``16816``/``xmma`` but not cuBLASLt's ``nvjet_*``, Hopper's
``gmma``, CUTLASS ``tensorop``, WMMA or FlashAttention, so on an H100 they report the GEMMs that
dominate the profile as CUDA-core work. The knowledge therefore lives in a rule pack
(``rulepacks/kernels.toml``) that can be reviewed, versioned and extended without touching code.

Verdicts are three-valued: ``True``/``False`` when a rule decides, ``None`` when the name cannot
tell (a Triton kernel without counter data). Being honest about "unknown" is what lets the report
say how much of the kernel time it actually judged (:func:`classified_share`).

Names are the fallback, not the authority: where an Nsight Compute CSV supplied tensor-pipe counters
(``counter_uses_tc``), the measurement decides and the name rules' verdict is kept only for the list
of disagreements (:mod:`tcreport.analysis.counters`).

Traces hold millions of launches of a few hundred distinct kernels, so rules run once per
dictionary entry and the result is mapped back to rows with ``take`` on the dictionary indices.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import tomllib
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from tcreport import schema
from tcreport._group_by import aggregate_by
from tcreport.errors import InputError

#: ``tc_rule`` value when our rules could not decide and the profiler's own label was used.
PROFILER_LABEL = "profiler-label"
#: ``tc_rule`` value when Nsight Compute's tensor-pipe counters decided (``counter_uses_tc``).
COUNTER_RULE = "ncu-counter"
#: ``tc_rule`` value when a Triton kernel's launching op decided (:mod:`.triton_ops`).
TRITON_OP_RULE = "triton-op-dtype"
#: ``tc_rule`` value when the device has no matrix units at all (:mod:`.no_matrix_units`).
NO_MATRIX_UNITS_RULE = "no-matrix-units"
#: ``tc_rule`` value when an XLA GEMM fusion's HLO precision decided (:mod:`.triton_ops`).
XLA_HLO_RULE = "xla-hlo-precision"
_RESERVED = (PROFILER_LABEL, COUNTER_RULE, TRITON_OP_RULE, NO_MATRIX_UNITS_RULE, XLA_HLO_RULE)
DEFAULT_PACK = "kernels.toml"
AMD_PACK = "amd-kernels.toml"


class Verdict(StrEnum):
    YES = "yes"
    NO = "no"
    UNKNOWN = "unknown"

    def as_bool(self) -> bool | None:
        return {Verdict.YES: True, Verdict.NO: False}.get(self)


class NameField(StrEnum):
    """Which kernel name a rule looks at: some inputs only have one of them."""

    ANY = "any"
    NAME = "name"
    LONG_NAME = "long_name"


@dataclass(frozen=True)
class KernelRule:
    id: str
    pattern: str
    verdict: Verdict
    arch: str
    precision: str
    source: str
    on: NameField = NameField.ANY
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", re.compile(self.pattern))

    def applies_to(self, name_field: NameField) -> bool:
        return self.on is NameField.ANY or self.on is name_field


@dataclass(frozen=True)
class RulePack:
    id: str
    version: str
    description: str
    rules: tuple[KernelRule, ...]

    def __post_init__(self) -> None:
        # Not a field (equality, repr and fields() stay the pack's): see ranks_seen.
        object.__setattr__(self, "_seen", {f: {} for f in NameField})

    def ranks_seen(self, name_field: NameField) -> dict[str, int]:
        """The rule rank of every name this pack has judged on ``name_field`` (``_rule_ranks``).
        A job's ranks, and the traces of one batch worker, share most kernel names; a name's rank
        under a pack never changes, so it is judged once per process, not once per trace."""
        seen: dict[NameField, dict[str, int]] = getattr(self, "_seen")  # noqa: B009
        return seen[name_field]

    def first_match(self, name: str | None, name_field: NameField = NameField.NAME) -> int | None:
        """Index of the first rule that matches ``name``; ``None`` when none does."""
        if not name:
            return None
        for i, rule in enumerate(self.rules):
            if rule.applies_to(name_field) and rule.regex.search(name):
                return i
        return None


def parse_rule_pack(text: str, origin: str = DEFAULT_PACK) -> RulePack:
    """Build a pack from TOML text; a malformed pack is bad input, named by ``origin``."""
    try:
        raw = tomllib.loads(text)
        head: dict[str, Any] = raw["pack"]
        rules = tuple(_rule(r) for r in raw.get("rule", []))
        pack = RulePack(
            id=str(head["id"]),
            version=str(head["version"]),
            description=str(head.get("description", "")),
            rules=rules,
        )
    except (tomllib.TOMLDecodeError, KeyError, TypeError, ValueError, re.error) as exc:
        raise InputError(f"not a valid kernel rule pack: {exc}", origin) from exc
    ids = [r.id for r in pack.rules]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    reserved = [i for i in _RESERVED if i in ids]
    if dupes or reserved:
        raise InputError(
            f"rule ids must be unique and not one of {list(_RESERVED)}: {dupes or reserved}",
            origin,
        )
    return pack


def _rule(raw: dict[str, Any]) -> KernelRule:
    return KernelRule(
        id=str(raw["id"]),
        pattern=str(raw["pattern"]),
        verdict=Verdict(raw["verdict"]),
        arch=str(raw.get("arch", "any")),
        precision=str(raw.get("precision", "n/a")),
        source=str(raw["source"]),
        on=NameField(raw.get("on", "any")),
    )


def load_rule_pack(path: str | Path) -> RulePack:
    """A user's own pack (e.g. for in-house kernels), same format as the shipped one."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read rule pack: {exc.strerror}", p) from exc
    return parse_rule_pack(text, str(p))


def _shipped(name: str) -> RulePack:
    text = resources.files("tcreport.analysis").joinpath("rulepacks", name).read_text("utf-8")
    return parse_rule_pack(text, name)


@cache
def default_pack() -> RulePack:
    """The pack shipped inside the wheel (read once per process)."""
    return _shipped(DEFAULT_PACK)


@cache
def amd_pack() -> RulePack:
    """AMD's own kernel rules (MFMA/WMMA matrix cores), shipped beside the NVIDIA pack."""
    return _shipped(AMD_PACK)


@cache
def pack_for(vendor: str) -> RulePack:
    """The rules a run of ``vendor`` is judged by.

    AMD: the AMD pack first, then the NVIDIA pack for the vendor-neutral framework kernels
    (PyTorch's ``elementwise_kernel`` keeps its name under HIP). A vendor with no rules of its
    own (Intel): an empty pack, so every kernel stays unknown rather than "no". Anything else:
    the NVIDIA pack, whose names are what such traces carry.
    """
    nv = default_pack()
    if vendor == "amd":
        amd = amd_pack()
        return RulePack(
            id=f"{amd.id}+{nv.id}",
            version=f"{amd.version}+{nv.version}",
            description=f"{amd.description}; then {nv.description}",
            rules=amd.rules + nv.rules,
        )
    if vendor in ("intel", "meta"):
        return RulePack(
            id="no-rules", version="0", description="no rules for this vendor", rules=()
        )
    if vendor == "unknown":
        # Whose GPU is not known: a name rule may still say "yes" (those names are NVIDIA's own
        # instructions), but "no" would be a claim about hardware nobody identified.
        return dataclasses.replace(
            nv,
            id=f"{nv.id}-unknown-vendor",
            rules=tuple(
                dataclasses.replace(r, verdict=Verdict.UNKNOWN) if r.verdict is Verdict.NO else r
                for r in nv.rules
            ),
        )
    return nv


def classify_name(
    name: str | None, long_name: str | None = None, pack: RulePack | None = None
) -> tuple[bool | None, str | None]:
    """Verdict and deciding rule id for one kernel: the scalar twin of :func:`classify_kernels`."""
    p = pack or default_pack()
    hits = [
        i
        for i in (
            p.first_match(name, NameField.NAME),
            p.first_match(long_name, NameField.LONG_NAME),
        )
        if i is not None
    ]
    if not hits:
        return None, None
    rule = p.rules[min(hits)]
    return rule.verdict.as_bool(), rule.id


# --- tables -------------------------------------------------------------------------------------


#: The most names a pack keeps between columns (a few MiB); a column that takes it past this
#: empties it, as if nothing were kept.
_SEEN_MAX = 100_000


def _rule_ranks(col: pa.ChunkedArray, pack: RulePack, name_field: NameField) -> pa.ChunkedArray:
    """Per row, the index of the first matching rule (``len(rules)`` = none), computed once per
    distinct dictionary value. Chunks may carry different dictionaries; a memo shared across them
    (and across the traces the pack judges: :meth:`RulePack.ranks_seen`) keeps the work
    proportional to the distinct names, not to the chunks or the ranks of a job."""
    none = len(pack.rules)
    memo = pack.ranks_seen(name_field)
    out: list[pa.Array] = []
    for chunk in col.chunks:
        values = chunk.dictionary.to_pylist()
        ranks = []
        for v in values:
            rank = memo.get(v)
            if rank is None:  # read once, written once: safe beside another thread's clear()
                hit = pack.first_match(v, name_field)
                rank = memo[v] = none if hit is None else hit
            ranks.append(rank if v is not None else none)
        lookup = pa.array(ranks, pa.int32())
        out.append(pc.fill_null(pc.take(lookup, chunk.indices), none))
    if len(memo) > _SEEN_MAX:  # a run of unique names: keep none of them past this column
        memo.clear()
    return pa.chunked_array(out, pa.int32())


def classify_kernels(
    kernels: pa.Table, pack: RulePack | None = None, *, counters: bool = True
) -> pa.Table:
    """The canonical kernels table with ``uses_tc`` and ``tc_rule`` filled.

    ``profiler_uses_tc`` (DLProf's ``Uses TC``) is never changed: it is the profiler's verdict and
    stays comparable with ours (:func:`tc_agreement`). Only where our rules say unknown and the
    profiler did label the kernel do we adopt its label, marked ``tc_rule = "profiler-label"``.

    A measurement beats any reading of names: where Nsight Compute's tensor-pipe counters were
    collected (``counter_uses_tc`` not null) they decide, ``tc_rule = "ncu-counter"``, even against
    a name rule. ``counters=False`` gives the names' verdict alone, which is what
    :func:`tcreport.analysis.counters.disagreements` compares the counters with.
    """
    schema.validate(kernels, schema.TableKind.KERNELS)
    p = pack or default_pack()
    none = len(p.rules)
    rank = pc.min_element_wise(
        _rule_ranks(kernels.column("name"), p, NameField.NAME),
        _rule_ranks(kernels.column("long_name"), p, NameField.LONG_NAME),
    )
    verdicts = pa.array([r.verdict.as_bool() for r in p.rules] + [None], pa.bool_())
    ours = pc.take(verdicts, rank)
    prof = kernels.column("profiler_uses_tc")
    use_prof = pc.and_(pc.is_null(ours), pc.is_valid(prof))
    uses_tc = pc.if_else(use_prof, prof, ours)
    rule_idx = pc.if_else(pc.equal(rank, none), pa.scalar(None, pa.int32()), rank)
    rule_idx = pc.if_else(use_prof, pa.scalar(none, pa.int32()), rule_idx)
    if counters:
        measured = kernels.column("counter_uses_tc")
        has = pc.is_valid(measured)
        uses_tc = pc.if_else(has, measured, uses_tc)
        rule_idx = pc.if_else(has, pa.scalar(none + 1, pa.int32()), rule_idx)
    dictionary = pa.array([r.id for r in p.rules] + list(_RESERVED), pa.string())
    tc_rule = pa.chunked_array(
        [pa.DictionaryArray.from_arrays(c, dictionary) for c in _chunks(rule_idx, pa.int32())],
        schema.NAME,
    )
    out = _set(kernels, "uses_tc", _as_chunked(uses_tc, pa.bool_()))
    out = _set(out, "tc_rule", tc_rule)
    schema.validate(out, schema.TableKind.KERNELS)
    return out


def _chunks(values: pa.ChunkedArray | pa.Array, typ: pa.DataType) -> list[pa.Array]:
    chunked = _as_chunked(values, typ)
    return [c.cast(typ) for c in chunked.chunks] if chunked.num_chunks else [pa.array([], typ)]


def _as_chunked(values: pa.ChunkedArray | pa.Array, typ: pa.DataType) -> pa.ChunkedArray:
    if isinstance(values, pa.Array):
        return pa.chunked_array([values.cast(typ)], typ)
    return values.cast(typ)


def _set(table: pa.Table, name: str, values: pa.ChunkedArray) -> pa.Table:
    i = table.schema.get_field_index(name)
    return table.set_column(i, table.schema.field(i), values)


# --- measures -----------------------------------------------------------------------------------


class Disagreement(NamedTuple):
    name: str
    ours: bool | None
    profiler: bool | None
    rows: int


@dataclass(frozen=True)
class Agreement:
    """Our verdict against the profiler's own label, over rows where both exist and our rules (not
    the profiler fallback) decided: agreement with a copy of the label would prove nothing."""

    compared: int
    agreeing: int
    disagreements: tuple[Disagreement, ...]

    @property
    def rate(self) -> float | None:
        return self.agreeing / self.compared if self.compared else None

    @property
    def disagreeing(self) -> int:
        return self.compared - self.agreeing


def tc_agreement(kernels: pa.Table) -> Agreement:
    """Kernel-level agreement of ``uses_tc`` with ``profiler_uses_tc``, disagreements by name."""
    t = (
        kernels
        if kernels.column("uses_tc").null_count < kernels.num_rows
        else classify_kernels(kernels)
    )
    return compare_labels(t, "uses_tc", "profiler_uses_tc", "name", exclude_rule=True)


def compare_labels(
    table: pa.Table, ours: str, theirs: str, key: str, exclude_rule: bool = False
) -> Agreement:
    """Shared by kernel and op agreement: group the compared rows by ``key`` and the two verdicts."""
    mask = pc.and_(pc.is_valid(table.column(ours)), pc.is_valid(table.column(theirs)))
    if exclude_rule:
        mask = pc.and_(
            mask,
            pc.fill_null(
                pc.not_equal(table.column("tc_rule").cast(pa.string()), PROFILER_LABEL), True
            ),
        )
    sub = table.filter(mask)
    if sub.num_rows == 0:
        return Agreement(0, 0, ())
    grouped = aggregate_by(
        pa.table(
            {"k": sub.column(key).cast(pa.string()), "o": sub.column(ours), "t": sub.column(theirs)}
        ),
        ["k", "o", "t"],
        [([], "count_all")],
    )
    agreeing = 0
    bad: list[Disagreement] = []
    for row in grouped.to_pylist():  # one row per distinct (name, verdict, verdict): small
        if row["o"] == row["t"]:
            agreeing += row["count_all"]
        else:
            bad.append(Disagreement(row["k"], row["o"], row["t"], row["count_all"]))
    bad.sort(key=lambda d: (-d.rows, d.name))
    return Agreement(compared=sub.num_rows, agreeing=agreeing, disagreements=tuple(bad))


def _time_share(kernels: pa.Table, mask: pa.ChunkedArray | pa.Array) -> float | None:
    dur = kernels.column("duration_ns")
    total = pc.sum(dur).as_py()
    if not total:
        return None
    part = pc.sum(pc.if_else(pc.fill_null(mask, False), dur, 0)).as_py() or 0
    return float(part) / float(total)


def classified_share(kernels: pa.Table) -> float | None:
    """Share of kernel time whose verdict is known (ours or the profiler's); ``None`` without
    kernel time. A low share means the TC share is a lower bound, and the report says so."""
    return _time_share(kernels, pc.is_valid(kernels.column("uses_tc")))


# --- documentation ------------------------------------------------------------------------------


def rules_markdown(pack: RulePack | None = None) -> str:
    """The rule table for docs/tensor-core-rules.md, generated so the doc cannot drift."""
    p = pack or default_pack()
    lines = [
        f"Rule pack `{p.id}` version `{p.version}`: {p.description}.",
        "",
        "| # | id | pattern | verdict | arch | precision | source |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for i, r in enumerate(p.rules, 1):
        pattern = r.pattern.replace("|", "\\|")
        lines.append(
            f"| {i} | `{r.id}` | `{pattern}` | {r.verdict} | {r.arch} | {r.precision} | {r.source} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # regenerate the doc tables: python -m tcreport.analysis.tc_kernels
    sys.stdout.write(rules_markdown() + "\n" + rules_markdown(amd_pack()))
