"""Row and finding matching for :mod:`tcreport.compare.diff`: ops, op types, kernels, findings.

Ops are paired by name; ops whose names appear on one side only are pooled by op type and paired
that way, because two readers of one run may name an op differently (a DLProf scope path against
another profiler's op path). XLA's ops, named by the compiler, are paired by the framework op
they record instead (:mod:`tcreport.compare.op_keys`). Rows are per aggregated iteration, like
the headline figures; a row's verdict weighs its Tensor Core move beside its time.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from tcreport import fmt
from tcreport.compare import op_keys
from tcreport.compare.model import (
    ROW_NOISE_FLOOR_NS,
    TYPE_ROW,
    Better,
    Change,
    FindingChange,
    Presence,
    RowDiff,
    TcMove,
)
from tcreport.compare.noise import judge

if TYPE_CHECKING:
    from tcreport.analysis.figures import KernelRow
    from tcreport.analysis.result import Analysis
    from tcreport.rules.base import Finding

# -- rows -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Acc:
    ns: float
    tc_ns: float
    miss_ns: float
    type: str | None
    eligible: bool
    has_time: bool
    dtype: str | None = None
    uses_tc: bool | None = None
    names: tuple[str, ...] = ()  # the ops summed into it


def _on(x: _Acc | None) -> bool:
    """Whether the side ran the row: listed with time of its own, or listed with no time known."""
    return x is not None and (not x.has_time or x.ns != 0)


def _presence(b: _Acc | None, h: _Acc | None) -> Presence | None:
    on_b, on_h = _on(b), _on(h)
    if on_b and on_h:
        return Presence.BOTH
    if on_b or on_h:
        return Presence.GONE if on_b else Presence.NEW
    return None  # ran on neither side: not a row of the diff


def _verdict(presence: Presence, time: Change, move: TcMove) -> Change:
    """The row's one verdict: new or gone first; a lost matrix-unit verdict is a regression
    whatever the time did; a gained one an improvement unless the time regressed beyond noise,
    and then the row "changed" (on Tensor Cores now, and slower), neither won nor lost."""
    if presence is not Presence.BOTH:
        return Change.NEW if presence is Presence.NEW else Change.GONE
    if move is TcMove.LOST:
        return Change.REGRESSED
    if move is TcMove.GAINED:
        return Change.CHANGED if time is Change.REGRESSED else Change.IMPROVED
    return time


def _tc_move(r: RowDiff) -> TcMove:
    return TcMove.LOST if r.tc_lost else TcMove.GAINED if r.tc_gained else TcMove.NONE


def _row(
    key: str,
    b: _Acc | None,
    h: _Acc | None,
    matched_by: str,
    rel_thr: float,
) -> RowDiff | None:
    presence = _presence(b, h)
    if presence is None:
        return None
    b = b if presence is not Presence.NEW else None
    h = h if presence is not Presence.GONE else None
    bn = b.ns if b and b.has_time else None
    hn = h.ns if h and h.has_time else None
    thr = max(rel_thr * abs(bn), ROW_NOISE_FLOOR_NS) if bn is not None else None
    delta, rel, time = judge(bn, hn, thr, Better.LOWER)
    if presence is not Presence.BOTH:
        delta, rel = None, None
    row = RowDiff(
        key=key,
        type=b.type if b is not None else h.type if h is not None else None,
        matched_by=matched_by if presence is Presence.BOTH else "",
        presence=presence,
        base_ns=bn,
        head_ns=hn,
        delta_ns=delta,
        rel=rel,
        verdict=time,
        base_tc_share=(b.tc_ns / b.ns if b.ns else None) if b else None,
        head_tc_share=(h.tc_ns / h.ns if h.ns else None) if h else None,
        base_missed_ns=b.miss_ns if b else None,
        head_missed_ns=h.miss_ns if h else None,
        eligible=bool((b and b.eligible) or (h and h.eligible)),
        base_dtype=b.dtype if b else None,
        head_dtype=h.dtype if h else None,
        base_uses_tc=b.uses_tc if b else None,
        head_uses_tc=h.uses_tc if h else None,
        threshold_ns=thr,
        base_ops=tuple(sorted(b.names)) if b else (),
        head_ops=tuple(sorted(h.names)) if h else (),
    )
    move = _tc_move(row)
    return replace(row, verdict=_verdict(presence, time, move), tc_move=move)


def _rows(candidates: list[RowDiff | None]) -> tuple[RowDiff, ...]:
    return _sorted([r for r in candidates if r is not None])


def op_clock(base: Analysis, head: Analysis) -> str:
    """GPU time when either run has it; host time for CPU-only captures, which have none."""
    if any(o.gpu_ns for o in (*base.breakdown.ops, *head.breakdown.ops)):
        return "GPU"
    return "host" if any(o.cpu_ns for o in (*base.breakdown.ops, *head.breakdown.ops)) else "GPU"


def _op_accs(a: Analysis, clock: str = "GPU") -> dict[str, _Acc]:
    n = max(1, a.iterations.info.aggregated or 1)
    out: dict[str, _Acc] = {}
    for o in a.breakdown.ops:  # one row per distinct op name: small
        t = o.gpu_ns if clock == "GPU" else o.cpu_ns
        ns = (t or 0) / n
        miss = o.missed_ns / n if clock == "GPU" else 0.0
        out[o.name] = _Acc(
            ns=ns,
            tc_ns=(o.tc_ns or 0) / n if clock == "GPU" else 0.0,  # the analysis' per-op TC time
            miss_ns=miss,
            type=o.type,
            eligible=o.tc_eligible,
            has_time=t is not None,
            dtype=o.dtype,
            uses_tc=o.uses_tc,
            names=(o.name,),
        )
    return out


def _by_type(accs: dict[str, _Acc], names: set[str]) -> dict[str, _Acc]:
    return _pool(accs, {n: accs[n].type or "(unknown)" for n in names}, typed=True)


def _pool(accs: dict[str, _Acc], keys: dict[str, str], typed: bool = False) -> dict[str, _Acc]:
    """The ops of one row key summed: an op type's (``typed``: the key is the type) or an XLA
    framework op's (:mod:`tcreport.compare.op_keys`), whose type is its ops' where they agree."""
    out: dict[str, _Acc] = {}
    for name, key in keys.items():
        x = accs[name]
        typ = key if typed else x.type
        prev = out.get(key)
        if prev is None:
            out[key] = replace(x, type=typ)
        else:
            out[key] = _Acc(
                prev.ns + x.ns,
                prev.tc_ns + x.tc_ns,
                prev.miss_ns + x.miss_ns,
                typ if prev.type == typ else None,
                prev.eligible or x.eligible,
                prev.has_time or x.has_time,
                prev.dtype if prev.dtype == x.dtype else None,
                bool(prev.uses_tc or x.uses_tc),
                prev.names + x.names,
            )
    return out


def _sorted(rows: list[RowDiff]) -> tuple[RowDiff, ...]:
    def size(r: RowDiff) -> float:
        if r.delta_ns is not None:
            return abs(r.delta_ns)
        return max(r.base_ns or 0.0, r.head_ns or 0.0)

    def ns(r: RowDiff) -> float:
        return max(r.base_ns or 0.0, r.head_ns or 0.0)

    # a lost matrix-unit verdict first: the regression a capped table must not cut
    return tuple(sorted(rows, key=lambda r: (not r.tc_lost, -size(r), -ns(r), r.key)))


def _ran(accs: dict[str, _Acc]) -> dict[str, _Acc]:
    return {k: x for k, x in accs.items() if _on(x)}


def idle_ops(base: Analysis, head: Analysis) -> int:
    """Ops listed on either side that ran on neither (no time of their own on the diff's clock):
    not rows of the diff, only counted, so a self-diff does not list wrappers as "no change"."""
    clock = op_clock(base, head)
    ab, ah = _op_accs(base, clock), _op_accs(head, clock)
    return len((set(ab) | set(ah)) - set(_ran(ab)) - set(_ran(ah)))


def ops(base: Analysis, head: Analysis, rel_thr: float) -> tuple[tuple[RowDiff, ...], str]:
    """Pair ops by name; ops whose names ran on one side only are paired by op type. XLA's ops,
    whose names a recompilation changes, are paired by framework op (:mod:`.op_keys`)."""
    clock = op_clock(base, head)
    ab, ah = _ran(_op_accs(base, clock)), _ran(_op_accs(head, clock))
    if ab and ah and (op_keys.compiled(base) or op_keys.compiled(head)):
        keys = op_keys.match(
            [o for o in base.breakdown.ops if o.name in ab],
            [o for o in head.breakdown.ops if o.name in ah],
        )
        pb, ph = _pool(ab, keys.base), _pool(ah, keys.head)
        return _rows(
            [_row(k, pb.get(k), ph.get(k), keys.how.get(k, ""), rel_thr) for k in set(pb) | set(ph)]
        ), keys.matching
    named = set(ab) & set(ah)
    rows = [_row(k, ab[k], ah[k], "name", rel_thr) for k in named]
    tb, th = _by_type(ab, set(ab) - named), _by_type(ah, set(ah) - named)
    rows += [
        _row(TYPE_ROW.format(type=t), tb.get(t), th.get(t), "type", rel_thr)
        for t in set(tb) | set(th)
    ]
    by_type = sum(1 for r in rows if r is not None and r.matched_by == "type")
    if not ab or not ah:
        matching = "no op rows on one side; ops not compared"
    elif not named and by_type == 0:
        matching = "no op name or op type ran on both sides; ops are new or gone"
    elif by_type == 0:
        matching = f"ops matched by name ({fmt.plural(len(named), 'op')})"
    elif not named:
        matching = (
            "op names differ between the inputs; ops matched by op type "
            f"({fmt.plural(by_type, 'type')})"
        )
    else:
        matching = (
            f"ops matched by name ({fmt.plural(len(named), 'op')}); ops whose names appear on one "
            f"side only matched by op type ({fmt.plural(by_type, 'type')})"
        )
    return _rows(rows), matching


def op_types(base: Analysis, head: Analysis, rel_thr: float) -> tuple[RowDiff, ...]:
    clock = op_clock(base, head)
    ab, ah = _ran(_op_accs(base, clock)), _ran(_op_accs(head, clock))
    tb, th = _by_type(ab, set(ab)), _by_type(ah, set(ah))
    return _rows([_row(t, tb.get(t), th.get(t), "type", rel_thr) for t in set(tb) | set(th)])


def kernels(base: Analysis, head: Analysis, rel_thr: float) -> tuple[RowDiff, ...]:
    """Pair kernels by name. A name whose launches got different verdicts is several rows of the
    report (one per verdict); here it is one, with the TC time of its TC rows, and uses the
    matrix units when any launch did (as an op row that did in some calls)."""

    def accs(a: Analysis) -> dict[str, _Acc]:
        n = max(1, a.iterations.info.aggregated or 1)
        by_name: dict[str, list[KernelRow]] = {}
        for k in a.breakdown.kernels:  # one per kernel name and verdict: small
            by_name.setdefault(k.name, []).append(k)
        out: dict[str, _Acc] = {}
        for name, ks in by_name.items():
            verdicts = {k.uses_tc for k in ks}
            uses = True if True in verdicts else (False if False in verdicts else None)
            label = None if uses is None else ("TC" if uses else "not TC")
            if uses and len(verdicts - {None}) > 1:
                label = "partly TC"
            out[name] = _Acc(
                sum(k.gpu_ns for k in ks) / n,
                sum(k.gpu_ns for k in ks if k.uses_tc) / n,
                0.0,
                label,
                False,
                True,
                uses_tc=uses,
            )
        return out

    kb, kh = accs(base), accs(head)
    return _rows([_row(k, kb.get(k), kh.get(k), "name", rel_thr) for k in set(kb) | set(kh)])


def tc_lost(ops: tuple[RowDiff, ...], kernels: tuple[RowDiff, ...]) -> tuple[str, ...]:
    """The rows whose matrix-unit verdict went yes -> no: the ops, or the kernels where no op
    ran on both sides (a trace with no op rows), so one loss is not counted twice."""
    rows = ops if any(r.presence is Presence.BOTH for r in ops) else kernels
    return tuple(r.key for r in rows if r.tc_lost)


# -- findings -------------------------------------------------------------------------------------


_SEVERITY_RANK = {"high": 0, "medium": 1, "low": 2, "info": 3}


def findings(
    base: tuple[Finding, ...], head: tuple[Finding, ...]
) -> tuple[tuple[FindingChange, ...], tuple[FindingChange, ...], tuple[FindingChange, ...]]:
    """Added / resolved / persisting, by id then title: a rule that fires on both sides with a
    changed number in its title persists rather than showing as resolved plus added, and keeps
    the base's title (:attr:`FindingChange.base_title`) so the outputs say what moved."""

    def fc(f: Finding) -> FindingChange:
        return FindingChange(f.id, f.title, f.severity.value)

    added: list[FindingChange] = []
    resolved: list[FindingChange] = []
    persisting: list[FindingChange] = []
    for fid in sorted({f.id for f in base} | {f.id for f in head}):
        b = [f for f in base if f.id == fid]
        h = [f for f in head if f.id == fid]
        same = Counter(f.title for f in b) & Counter(f.title for f in h)
        for title, n in same.items():
            persisting += [fc(next(f for f in h if f.title == title))] * n
        b_left = [f for f in b if not _take(same, f.title)]
        same = Counter(f.title for f in b) & Counter(f.title for f in h)
        h_left = [f for f in h if not _take(same, f.title)]
        paired, h_rest, b_rest = _pairs(b_left, h_left)
        persisting += [
            FindingChange(f.id, f.title, f.severity.value, was.title) for was, f in paired
        ]
        added += [fc(f) for f in h_rest]
        resolved += [fc(f) for f in b_rest]

    def ranked(items: list[FindingChange]) -> tuple[FindingChange, ...]:
        # a report's order: [high] before [medium] before [low], then by rule id
        return tuple(sorted(items, key=lambda f: (_SEVERITY_RANK.get(f.severity, 9), f.id)))

    return ranked(added), ranked(resolved), ranked(persisting)


def _pairs(
    base: list[Finding], head: list[Finding]
) -> tuple[list[tuple[Finding, Finding]], list[Finding], list[Finding]]:
    """One rule's findings whose titles differ, paired when they are about the same thing: the
    same evidence (an OP001 on ``add_`` is not an OP001 on ``threshold_backward``), or the one
    finding of the rule on each side (GP001's host wait, whatever its figures). The rest are
    added (head) or resolved (base)."""
    pairs: list[tuple[Finding, Finding]] = []
    left = list(base)
    rest: list[Finding] = []
    for h in head:
        keys = {(e.kind, e.key) for e in h.evidence}
        match = next((b for b in left if keys & {(e.kind, e.key) for e in b.evidence}), None)
        if match is None:
            rest.append(h)
            continue
        left.remove(match)
        pairs.append((match, h))
    one_each = len(left) == 1 and len(rest) == 1
    alone = len(base) == 1 and len(head) == 1  # the rule fired once on each side
    if one_each and (alone or not (left[0].evidence or rest[0].evidence)):
        pairs.append((left.pop(), rest.pop()))
    return pairs, rest, left


def _take(counter: Counter[str], key: str) -> bool:
    if counter[key] > 0:
        counter[key] -= 1
        return True
    return False
