"""The diff's data model: verdicts, figures, row and finding changes (no logic beyond lookups).

:mod:`tcreport.compare.diff` builds these, :mod:`tcreport.compare.rows` matches rows into them, and
the renderers and gates read them; keeping them here lets the builders import each other's types
without a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from tcreport.analysis.sections.verdict import UnitWords
from tcreport.errors import UsageError

#: The noise threshold, decided here once for every figure and row of the diff and the gates: a
#: change under ``NOISE_SIGMAS`` pooled standard deviations is noise, and never under
#: ``NOISE_FLOOR`` (relative for times, absolute for shares) where no spread is known or it is
#: smaller. Renderers read each figure's and row's verdict; none compares a delta to a threshold.
NOISE_FLOOR = 0.01
NOISE_SIGMAS = 2.0
#: An op, op type or kernel row whose per-iteration time moves by less than this is noise
#: whatever its relative change: a 32 ns step of a 2 µs kernel (+1.7 %) is below what a
#: profiler's timestamps resolve reliably across two runs, and no PR is judged by it.
ROW_NOISE_FLOOR_NS = 1_000
#: The label of a row that pools the ops of one type whose names ran on one side only.
TYPE_ROW = "ops of type {type}"


class NotComparableError(UsageError):
    """Two runs that do not measure the same thing (GPU, framework, iteration count)."""


class Change(StrEnum):
    """How one figure or row moved between base and head."""

    IMPROVED = "improved"
    REGRESSED = "regressed"
    CHANGED = "changed"  # a real change in a figure with no better direction
    NOISE = "noise"
    UNCHANGED = "no change"
    NEW = "new"
    GONE = "gone"
    UNKNOWN = "unknown"


#: The row verdicts that are a change beyond noise: what the Markdown comment lists.
CHANGED = frozenset({Change.IMPROVED, Change.REGRESSED, Change.CHANGED, Change.NEW, Change.GONE})


class Presence(StrEnum):
    """Whether a row ran on both sides, the first thing every row says (then its deltas).

    A row is on a side when that side lists it with time of its own on the diff's clock (or with
    no time known at all): an op listed with 0 ns ran nothing itself (``aten::linear`` whose
    kernels count under ``aten::addmm`` in a Kineto trace), so it is not "52 ms → 0 ns, improved"
    against a run where it did the work; it is new or gone, in the ops, op types and kernels alike.
    """

    BOTH = "present"
    GONE = "gone"  # base only
    NEW = "new"  # head only


class TcMove(StrEnum):
    """How a row's matrix-unit verdict (the report's yes/no) moved. Its share of time on them is
    no such move: it falls when its Tensor Core kernels get faster and its others do not (a
    cuDNN convolution in fp16 against TF32 on the H200 CNN runs: 41 % -> 24 %, all of it faster)."""

    NONE = ""
    GAINED = "gained"  # no -> yes
    LOST = "lost"  # yes -> no: a regression whatever the time did (the gates count it)


class Better(StrEnum):
    LOWER = "lower"
    HIGHER = "higher"
    NEITHER = "neither"


class Unit(StrEnum):
    NS = "ns"
    SHARE = "share"
    COUNT = "count"


@dataclass(frozen=True)
class Side:
    """What the diff shows about one input (whitelisted fields only)."""

    path: str
    format: str
    gpu: str | None
    framework: str | None
    aggregated: int | None
    spread: str  # where the noise estimate came from


@dataclass(frozen=True)
class Figure:
    key: str
    label: str
    unit: Unit
    better: Better
    base: float | None
    head: float | None
    delta: float | None
    rel: float | None  # delta / base
    threshold: float | None  # |delta| below this is noise
    verdict: Change


@dataclass(frozen=True)
class RowDiff:
    """One op, op type or kernel: on which side it ran, then per-iteration time, matrix-unit use
    and eligible-not-TC time. Ops, op types and kernels are all this one model, judged one way."""

    key: str
    type: str | None
    #: "name", "type", XLA's "framework op and shapes" / "framework op" (:mod:`.op_keys`), or ""
    #: (present on one side only)
    matched_by: str
    presence: Presence
    base_ns: float | None
    head_ns: float | None
    delta_ns: float | None
    rel: float | None
    verdict: Change
    base_tc_share: float | None  # of the row's time on the matrix units (1/0 for a kernel)
    head_tc_share: float | None
    base_missed_ns: float | None  # eligible for the matrix units, not on them (OpRow.missed_ns)
    head_missed_ns: float | None
    eligible: bool
    base_dtype: str | None = None  # an op's data type, to show a precision change
    head_dtype: str | None = None
    #: the report's own verdict (OpRow/KernelRow.uses_tc), so the diff says what the report says
    base_uses_tc: bool | None = None
    head_uses_tc: bool | None = None
    threshold_ns: float | None = None  # |Δ| below this is noise (the diff's one noise rule)
    tc_move: TcMove = TcMove.NONE  # how its matrix-unit use moved; the verdict weighs it
    #: the report's ops summed into an op or op-type row on each side (XLA's HLO instructions
    #: under one framework op); empty for kernels and for a side the row is not on
    base_ops: tuple[str, ...] = ()
    head_ops: tuple[str, ...] = ()

    def tc_note(self, w: UnitWords) -> str:
        """The row's matrix-unit move in words, beside its verdict ("" when none): the verdict
        "changed" is a move and a time that disagree ("now on TC, slower")."""
        if self.tc_move is TcMove.NONE:
            return ""
        if self.tc_move is TcMove.LOST:
            return f"no longer on {w.short}"
        return f"now on {w.short}" + (", slower" if self.verdict is Change.CHANGED else "")

    @property
    def tc_lost(self) -> bool:
        """On the matrix units in base and not in head: a regression whatever the time did."""
        return (
            self.presence is Presence.BOTH
            and self.base_uses_tc is True
            and (self.head_uses_tc is False)
        )

    @property
    def tc_gained(self) -> bool:
        return (
            self.presence is Presence.BOTH
            and self.base_uses_tc is False
            and (self.head_uses_tc is True)
        )

    @property
    def changed(self) -> bool:
        """Changed beyond noise (or new, gone, or its matrix-unit verdict moved)."""
        return self.verdict in CHANGED


def changed(rows: tuple[RowDiff, ...]) -> tuple[RowDiff, ...]:
    """The rows a reader must see (changed beyond noise, new or gone), in the rows' order; the
    renderers list these and count the rest, so none of them decides what changed."""
    return tuple(r for r in rows if r.changed)


@dataclass(frozen=True)
class FindingChange:
    id: str
    title: str
    severity: str
    #: a finding on both sides whose title moved (its wait, share or count): the base's title;
    #: None for one that reads the same, or that is on one side only
    base_title: str | None = None


@dataclass(frozen=True)
class Diff:
    base: Side
    head: Side
    not_comparable: tuple[str, ...]  # reasons; non-empty only when forced
    forced: bool
    matching: str  # how ops were paired, in words
    noise_rule: str
    figures: tuple[Figure, ...]
    ops: tuple[RowDiff, ...]
    op_types: tuple[RowDiff, ...]
    kernels: tuple[RowDiff, ...]
    added: tuple[FindingChange, ...]
    resolved: tuple[FindingChange, ...]
    persisting: tuple[FindingChange, ...]
    notes: tuple[str, ...]
    words: UnitWords  # what the runs' matrix units are called (comparable runs share a vendor)
    op_clock: str = "GPU"  # "host" when neither run has op GPU time (a CPU-only capture)
    verdict: str = ""  # one line: better / worse / mixed / no change, by how much, per iteration
    #: ops (op rows, else kernels where no op was compared) whose matrix-unit verdict went from
    #: yes to no: each a regression that the verdict line and the ``check`` gates count
    tc_lost: tuple[str, ...] = ()
    #: why the matrix-unit figures and ops' verdicts are not judged ("" when they are): counters
    #: measured them on one side only (:func:`tcreport.compare.diff.counters_one_side`)
    tc_not_judged: str = ""
    #: why the wall times are not judged ("" when they are): the two runs' are different measures
    #: (:func:`tcreport.analysis.wall.unlike`), say DLProf's Wall Clock Time and a kernel span
    wall_not_judged: str = ""

    def figure(self, key: str) -> Figure:
        return next(f for f in self.figures if f.key == key)

    @property
    def moved(self) -> tuple[FindingChange, ...]:
        """The findings on both sides whose figures moved: listed, not counted as unchanged."""
        return tuple(f for f in self.persisting if f.base_title is not None)

    @property
    def findings_line(self) -> str:
        """The findings' count in every output's words: a rule that fired on both sides with
        other figures (a host wait that doubled) is no "unchanged" finding."""
        still = len(self.persisting) - len(self.moved)
        moved = f", {len(self.moved)} with new figures" if self.moved else ""
        return f"{len(self.added)} added, {len(self.resolved)} resolved{moved}, {still} unchanged"
