"""Which op of one XLA run is which op of another: by the framework op, not the HLO name.

An XLA program's ops are its HLO instructions, named by the compiler (``gemm_fusion_dot.4``,
``custom-call.4``, ``fusion.120``). Another compilation (another precision, XLA version or model
change) renumbers and renames them, and one name can even be another instruction: in the H200
recordings (sample_traces/h200-jax-xla-ncu) ``input_reduce_fusion.1`` reduces [256, 1000] in the
float32 run and [256, 1024] in the bf16 one, and the float32 run's cuBLAS call ``custom-call.4``
is the bf16 run's Triton fusion ``gemm_fusion_dot``. Paired by name, such a diff shows "ops of
type dot: new" beside "ops of type cublaslt-matmul: gone" instead of one GEMM that changed.

What survives a recompilation is the op the framework asked for, which XLA keeps in each
instruction's metadata (JAX's name stack ``jit(train_step)/transpose(jvp())/transpose``,
TensorFlow's op name) and the xplane reader keeps as the op's scope. So an op with one is keyed by
it and its input shapes; ops of one framework op whose shapes differ between the runs (XLA padded
a dimension differently, or listed a fusion's operands in another order) are paired by the
framework op alone, pooled per side. An op XLA added itself (a layout transpose, a pad) has no
framework op: it is paired where its name, type and input shapes all agree, and otherwise pooled by
op type, which the matching line says, since no stable key exists for it.

Only runs whose op names are a compiler's take this path (:func:`compiled`); every other run's
ops keep their own, stable names (:mod:`tcreport.compare.rows`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tcreport import fmt
from tcreport.compare.model import TYPE_ROW
from tcreport.model import SourceFormat

if TYPE_CHECKING:
    from tcreport.analysis.figures import OpRow
    from tcreport.analysis.result import Analysis

#: ``matched_by`` of a row paired by framework op and input shapes, and by framework op alone.
BY_OP_AND_SHAPES = "framework op and shapes"
BY_OP = "framework op"


def compiled(a: Analysis) -> bool:
    """Whether the run's op names are XLA's HLO instruction names: an XSpace whose reader found
    the programs' HLO, which gives its ops their framework op as scope (no other op of an xplane
    run has a scope)."""
    return a.meta.format is SourceFormat.TF_XPLANE and any(o.scope for o in a.breakdown.ops)


@dataclass(frozen=True)
class OpKeys:
    """Each op's row key on either side, how the rows on both sides were paired, in words."""

    base: dict[str, str]  # op name -> row key
    head: dict[str, str]
    how: dict[str, str]  # row key -> matched_by (rows on both sides)
    matching: str


def _shaped(o: OpRow) -> str | None:
    return f"{o.scope} {o.input_shapes}" if o.scope and o.input_shapes else None


@dataclass(frozen=True)
class _Plan:
    """What the two sides share: the keys that pair ops, and which ops stand alone."""

    alone: set[str]  # framework ops with at most one op on either side: the op is the key
    pair: set[str]  # framework op + shapes on both sides (framework ops with several ops)
    by_op: set[str]  # framework ops with several ops, some unpaired on both sides: pooled
    named: set[str]  # ops with no framework op whose name, type and shapes agree


def _key(o: OpRow, p: _Plan) -> str:
    """One op's row key: its framework op where that is the one op of it on either side, else
    its framework op and shapes where those ran on both sides, else its framework op's pool
    where that has unpaired ops on both sides, else its framework op and shapes (new or gone);
    an op with no framework op its name where that matched, else its type's pool."""
    shaped = _shaped(o)
    if o.scope:
        if o.scope in p.alone or o.scope in p.by_op and shaped not in p.pair or not shaped:
            return o.scope
        return shaped
    return o.name if o.name in p.named else TYPE_ROW.format(type=o.type or "(unknown)")


def match(base: list[OpRow], head: list[OpRow]) -> OpKeys:
    """Pair the ops that ran on either side (``base``, ``head``: one row per op name)."""
    nb = Counter(o.scope for o in base if o.scope)
    nh = Counter(o.scope for o in head if o.scope)
    alone = {s for s in nb.keys() | nh.keys() if nb[s] <= 1 and nh[s] <= 1}
    shaped_b = {k for o in base if (k := _shaped(o))}
    pair = shaped_b & {k for o in head if (k := _shaped(o))}
    left_b = {o.scope for o in base if o.scope and _shaped(o) not in pair}
    left_h = {o.scope for o in head if o.scope and _shaped(o) not in pair}

    def plain(ops: list[OpRow]) -> set[tuple[str, str | None, str | None]]:
        return {(o.name, o.type, o.input_shapes) for o in ops if not o.scope}

    named = {n for n, _, _ in plain(base) & plain(head)}
    plan = _Plan(alone, pair, {s for s in left_b & left_h if s} - alone, named)
    kb = {o.name: _key(o, plan) for o in base}  # one per distinct op name: small
    kh = {o.name: _key(o, plan) for o in head}
    both = set(kb.values()) & set(kh.values())
    shapes_b = {o.scope: o.input_shapes for o in base if o.scope in alone}
    shapes_h = {o.scope: o.input_shapes for o in head if o.scope in alone}
    same = {k for k in both & alone if shapes_b.get(k) == shapes_h.get(k)}
    scoped = {_key(o, plan) for o in (*base, *head) if o.scope}
    how = dict.fromkeys(both & pair | same, BY_OP_AND_SHAPES)
    how |= dict.fromkeys(both & scoped - set(how), BY_OP)
    how |= dict.fromkeys(both & named, "name")
    how |= dict.fromkeys(both - set(how), "type")
    pooled = {_key(o, plan) for o in (*base, *head) if not o.scope and o.name not in named}
    return OpKeys(kb, kh, how, _words(how, len(pooled)))


def _words(how: dict[str, str], types: int) -> str:
    """The matching line: how many rows each way paired, and how many op types pool the ops that
    have no key surviving a recompilation."""
    n = {way: sum(1 for v in how.values() if v == way) for way in (BY_OP_AND_SHAPES, BY_OP)}
    named = sum(1 for v in how.values() if v == "name")
    if not how:
        return "XLA ops: no framework op or op type ran on both sides; ops are new or gone"
    parts = []
    if n[BY_OP_AND_SHAPES]:
        parts.append(f"{fmt.plural(n[BY_OP_AND_SHAPES], 'op')} by framework op and input shapes")
    if n[BY_OP]:
        parts.append(f"{n[BY_OP]} by framework op alone (their shapes differ)")
    if named:
        parts.append(f"{fmt.plural(named, 'op')} with no framework op by name, type and shapes")
    if types:
        parts.append(
            f"the other ops with no framework op grouped by op type ({fmt.plural(types, 'type')})"
        )
    return (
        "XLA ops matched by the framework op each HLO instruction records (JAX's name stack, "
        "TensorFlow's op name), not by HLO name, which changes between compilations: "
        + "; ".join(parts)
    )
