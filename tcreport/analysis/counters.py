"""Nsight Compute counters as evidence for another run's kernels, and where they contradict names.

Every profiler that ever reported Tensor Core use (DLProf, the TF profiler, the PyTorch TensorBoard
plugin) read it from kernel names; none checked the names against the hardware. An ``ncu`` CSV
holds tensor-pipe counters per launch, so a timeline trace (Nsight Systems, Kineto, DLProf) plus an
``ncu`` run of the same program gives measured verdicts on the timeline's kernels, and
:func:`disagreements` lists every kernel where the measurement and the name rules differ: a
rule-pack bug, or a kernel that is not what its name says.

How :func:`merge` matches kernels (the two runs share no ids: ncu replays launches in its own
process, and ``ncu -k``/``-c`` usually profiles a subset):

* Names, most specific first: the exact signature (``long_name``, else ``name``, whitespace
  collapsed); then without the return type and parameter list; then the bare function name, but
  only when one side *is* bare (``ncu --print-kernel-base function`` against a demangled trace):
  two full signatures that differ in template arguments are different kernels.
* Several ncu kernels at the same level whose verdicts conflict leave the kernel unknown (counted
  in the note); a guess would defeat the point of measuring.
* Launch order: when the trace has launches (not aggregates) and a kernel has exactly as many
  launches as ncu profiled under the matched name, launch *i* in time order takes ncu's launch *i*
  (ncu numbers results in launch order). Otherwise every launch takes the kernel's verdict: the
  tensor pipe was used if any profiled launch used it.
* Only ``counter_uses_tc`` is copied. ncu's durations come from replayed launches with locked
  clocks and flushed caches; the trace's own times stay.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport import schema
from tcreport._group_by import aggregate_by
from tcreport.analysis import device_table, tc_kernels
from tcreport.errors import InputError
from tcreport.kernel_names import demangle, loose_key, readable, short_name
from tcreport.model import Granularity, Run

_YES, _NO, _UNKNOWN = 1, 0, -1


@dataclass(frozen=True)
class CounterDisagreement:
    """One kernel whose name verdict the tensor-pipe counters contradict."""

    name: str
    name_verdict: bool  # what the name rules (or, failing them, the profiler's label) said
    name_rule: str | None  # the rule id that said it (``profiler-label`` for the label)
    counter_verdict: bool  # what Nsight Compute measured
    launches: int
    gpu_ns: int


# --------------------------------------------------------------------------- disagreements


def disagreements(
    kernels: pa.Table, trace_only: Callable[[pa.Table], pa.Table] | None = None
) -> tuple[CounterDisagreement, ...]:
    """Every (kernel, trace verdict, counter verdict) where the two differ, most GPU time first.

    ``trace_only`` gives the verdicts the trace alone gives (names, then what the trace adds:
    :func:`tcreport.analysis.kernel_verdicts.classify` without counters); the names alone by
    default. A rule that says "unknown" is not contradicted, only completed: such kernels are
    not listed (the report shows them as decided by ``ncu-counter``).
    """
    if kernels.num_rows == 0 or kernels.column("counter_uses_tc").null_count == kernels.num_rows:
        return ()
    by_name = (
        trace_only(kernels)
        if trace_only is not None
        else tc_kernels.classify_kernels(kernels, counters=False)
    )
    measured = kernels.column("counter_uses_tc")
    named = by_name.column("uses_tc")
    differ = pc.fill_null(pc.not_equal(named, measured), False)
    sub = pa.table(
        {
            "name": kernels.column("name").cast(pa.string()),
            "named": named,
            "rule": by_name.column("tc_rule").cast(pa.string()),
            "measured": measured,
            "calls": kernels.column("calls"),
            "dur": kernels.column("duration_ns"),
        }
    ).filter(differ)
    if sub.num_rows == 0:
        return ()
    grouped = aggregate_by(
        sub,
        ["name", "named", "rule", "measured"],
        [("calls", "sum"), ("dur", "sum")],
        use_threads=False,
    )
    out = [
        CounterDisagreement(
            name=r["name"],
            name_verdict=bool(r["named"]),
            name_rule=r["rule"],
            counter_verdict=bool(r["measured"]),
            launches=int(r["calls_sum"]),
            gpu_ns=int(r["dur_sum"]),
        )
        for r in grouped.to_pylist()  # one row per distinct disagreement: small
    ]
    return tuple(sorted(out, key=lambda d: (-d.gpu_ns, d.name, d.name_verdict)))


# --------------------------------------------------------------------------- name keys


def _drop_params(s: str) -> str:
    """Cut a trailing top-level ``(...)`` parameter list."""
    if not s.endswith(")"):
        return s
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(s[i], 0)
        if depth == 0:
            return s[:i]
    return s


#: The key levels of :func:`name_keys`, most specific first; the last is the bare name.
_LEVELS = 4
_LOOSE, _BARE = 2, 3


def name_keys(name: str) -> tuple[tuple[str, str, str, str], bool]:
    """Exact, signature-without-parameters, both-demanglers and bare keys of ``name`` (demangled
    first when it is an Itanium ``_Z`` name), and whether ``name`` is bare already."""
    exact = " ".join(demangle(name.strip()).split())
    sig = "".join(_drop_params(exact.removeprefix("void ")).split())
    bare = "<" not in sig and "(" not in sig
    return (exact, sig, loose_key(exact), short_name(exact)), bare


# --------------------------------------------------------------------------- merge


def _identities(kernels: pa.Table) -> tuple[np.ndarray, list[str]]:
    """Per row, an index into the distinct kernel identities (``long_name``, else ``name``).

    Works on the dictionaries batch by batch, so a 10-million-row table costs a few ``take``s.
    """
    ids: dict[str, int] = {}
    parts: list[np.ndarray] = []
    for batch in kernels.select(["name", "long_name"]).to_batches():
        per_col = []
        for col in batch.columns:
            col = col if pa.types.is_dictionary(col.type) else pc.dictionary_encode(col)
            lookup = [ids.setdefault(v, len(ids)) if v else -1 for v in col.dictionary.to_pylist()]
            rows = pc.take(pa.array(lookup, pa.int64()), col.indices)
            per_col.append(pc.if_else(pc.equal(rows, -1), pa.scalar(None, pa.int64()), rows))
        row_ids = pc.fill_null(pc.coalesce(per_col[1], per_col[0]), -1)
        parts.append(row_ids.to_numpy(zero_copy_only=False))
    arr = np.concatenate(parts) if parts else np.empty(0, np.int64)
    return arr.astype(np.int64), list(ids)


@dataclass(frozen=True)
class _Counted:
    """What ncu measured for one kernel identity, launches in ncu's order."""

    launches: tuple[int, ...]  # _YES / _NO / _UNKNOWN per profiled launch

    @property
    def verdict(self) -> int:
        if _YES in self.launches:
            return _YES
        return _NO if _NO in self.launches else _UNKNOWN


def _counted(ncu: pa.Table) -> dict[str, _Counted]:
    """ncu side: small (ncu profiles thousands of launches, not millions), so plain Python."""
    rows, names = _identities(ncu)
    verdicts = ncu.column("counter_uses_tc").to_pylist()
    per: dict[int, list[int]] = {}
    for i, v in zip(rows.tolist(), verdicts, strict=True):
        per.setdefault(i, []).append(_UNKNOWN if v is None else int(v))
    return {names[i]: _Counted(tuple(v)) for i, v in per.items() if i >= 0}


@dataclass
class _Match:
    verdict: np.ndarray  # per target identity: _YES/_NO/_UNKNOWN
    ordered: dict[int, tuple[int, ...]]  # target identity -> ncu launch verdicts, by order
    matched: int = 0
    ambiguous: int = 0


def _match(
    targets: list[str], counted: dict[str, _Counted], counts: np.ndarray, by_order: bool
) -> _Match:
    """Each target identity's ncu evidence, the most specific name key first.

    One ncu kernel can answer for two trace kernels only when they are spelled alike: at the
    both-demanglers level, more trace kernels on a key than ncu kernels on it leave them unknown
    (which one did ncu measure?), counted as ambiguous like conflicting verdicts.
    """
    ncu_keys = {n: name_keys(n) for n in counted}  # per distinct name: demangling is not free
    index: list[dict[str, list[str]]] = [{} for _ in range(_LEVELS)]
    for n, (keys, _) in ncu_keys.items():
        for level in range(_LEVELS):
            index[level].setdefault(keys[level], []).append(n)
    target_keys = [name_keys(t) for t in targets]
    loose_targets: dict[str, int] = {}
    for keys, _ in target_keys:
        loose_targets[keys[_LOOSE]] = loose_targets.get(keys[_LOOSE], 0) + 1
    out = _Match(np.full(len(targets), _UNKNOWN, np.int8), {})
    for t_i, (keys, bare) in enumerate(target_keys):
        cands: list[str] = []
        level = 0
        for level in range(_LEVELS):
            cands = index[level].get(keys[level], [])
            if level == _BARE:  # bare names only match when one side had nothing more to compare
                cands = [c for c in cands if bare or ncu_keys[c][1]]
            if cands:
                break
        if not cands:
            continue
        out.matched += 1
        verdicts = {counted[c].verdict for c in cands} - {_UNKNOWN}
        crowded = level == _LOOSE and loose_targets[keys[_LOOSE]] > len(cands)
        if len(verdicts) > 1 or crowded:
            out.ambiguous += 1
            continue
        out.verdict[t_i] = verdicts.pop() if verdicts else _UNKNOWN
        launches = _periodic(counted[cands[0]].launches, int(counts[t_i]))
        # launch by launch only where it can matter: one candidate, equal counts, mixed verdicts
        if by_order and len(cands) == 1 and launches is not None and len(set(launches)) > 1:
            out.ordered[t_i] = launches
    return out


def _periodic(launches: tuple[int, ...], count: int) -> tuple[int, ...] | None:
    """ncu's launches as ``count`` trace launches: all of them when the counts are equal, or the
    last ``count`` when ncu profiled the same sequence several times (a warm-up pass before the
    measured one) and every repetition gave the same verdicts; else None."""
    if count <= 0 or len(launches) % count:
        return None
    last = launches[-count:]
    return last if launches == last * (len(launches) // count) else None


def _per_row(kernels: pa.Table, rows: np.ndarray, m: _Match) -> np.ndarray:
    """Per-row verdict codes: the kernel's verdict, or ncu launch i for the i-th launch in time."""
    if len(m.verdict) == 0:  # no usable name at all
        return np.full(len(rows), _UNKNOWN, np.int8)
    codes = np.where(rows >= 0, m.verdict[np.maximum(rows, 0)], _UNKNOWN).astype(np.int8)
    if not m.ordered:
        return codes
    ordered = np.zeros(len(m.verdict), bool)
    ordered[list(m.ordered)] = True
    sel = np.nonzero((rows >= 0) & ordered[np.maximum(rows, 0)])[0]
    start = pc.fill_null(kernels.column("start_ns"), np.iinfo(np.int64).max)
    start_np = start.to_numpy()[sel]
    order = sel[np.lexsort((sel, start_np, rows[sel]))]  # by identity, then time, then row
    ident = rows[order]
    rank = np.arange(len(order)) - np.searchsorted(ident, ident, side="left")
    offsets = np.zeros(len(m.verdict), np.int64)  # where each identity's ncu launches start
    flat: list[int] = []
    for t_i, launches in m.ordered.items():  # one entry per kernel name: small
        offsets[t_i] = len(flat)
        flat.extend(launches)
    codes[order] = np.array(flat, np.int8)[offsets[ident] + rank]
    return codes


def merge(run: Run, ncu_run: Run) -> Run:
    """``run`` with ``counter_uses_tc`` filled from ``ncu_run``'s counters (see module doc)."""
    if run.kernels is None:
        raise InputError("no kernel rows to attach Nsight Compute counters to", run.meta.path)
    if ncu_run.kernels is None:
        raise InputError("no kernel rows in the Nsight Compute run", ncu_run.meta.path)
    kernels, counted = run.kernels, _counted(ncu_run.kernels)
    rows, targets = _identities(kernels)
    counts = np.bincount(rows[rows >= 0], minlength=len(targets))
    by_order = run.meta.kernel_granularity is Granularity.LAUNCH
    m = _match(targets, counted, counts, by_order)
    if targets and not m.matched:
        raise _another_run(ncu_run, targets, len(counted))
    codes = _per_row(kernels, rows, m)
    new = pa.array(codes == _YES, pa.bool_(), mask=codes == _UNKNOWN)
    merged = pc.coalesce(new, kernels.column("counter_uses_tc"))
    i = kernels.schema.get_field_index("counter_uses_tc")
    kernels = kernels.set_column(i, kernels.schema.field(i), merged)
    schema.validate(kernels, schema.TableKind.KERNELS)
    notes = [*run.meta.notes, _note(ncu_run, kernels, len(targets), m)]
    notes += _gpu_note(run, ncu_run)
    meta = dataclasses.replace(
        run.meta, notes=tuple(notes), files=(*run.meta.files, *ncu_run.meta.files)
    )
    return run.replace(meta=meta, kernels=kernels)


def _another_run(ncu_run: Run, targets: list[str], profiled: int) -> InputError:
    """No kernel of the trace is in the CSV: almost surely the counters of another program (or
    another model), and a report that quietly falls back to kernel names would read as measured.
    A partial match stays a note (ncu ``-k``/``-c`` profiles a subset); none at all is refused."""
    hint = (
        "; the trace keeps mangled names, which match a CSV made with --print-kernel-base mangled"
        if 2 * sum(t.startswith("_Z") for t in targets) >= len(targets)  # most, not one
        else "; is it from another run?"
    )
    return InputError(
        f"none of the trace's {len(targets)} kernel names is among the {profiled} this Nsight "
        f"Compute CSV profiled (0 of {len(targets)} matched){hint}",
        ncu_run.meta.path,
    )


#: How the run's note on the counters it was given begins (:func:`notes_of` finds it by it).
NOTE_PREFIX = "Nsight Compute counters from "
#: How the note begins that the counters were measured on another GPU than the trace's.
GPU_NOTE_PREFIX = "counters were measured on compute capability "


def notes_of(notes: tuple[str, ...]) -> tuple[str, ...]:
    """The run's notes on the Nsight Compute counters it was given (what ``check`` prints beside
    its gates: how much of the kernel time the counters decided, and that they were measured on
    another GPU where they were)."""
    return tuple(n for n in notes if n.startswith((NOTE_PREFIX, GPU_NOTE_PREFIX)))


def _note(ncu_run: Run, kernels: pa.Table, distinct: int, m: _Match) -> str:
    dur = kernels.column("duration_ns")
    total = pc.sum(dur).as_py() or 0
    covered = pc.sum(pc.if_else(pc.is_valid(kernels.column("counter_uses_tc")), dur, 0)).as_py()
    share = f"{(covered or 0) / total:.0%} of kernel time" if total else "no kernel time"
    name = ncu_run.meta.files[0] if ncu_run.meta.files else ncu_run.meta.path
    text = f"{NOTE_PREFIX}{name}: {m.matched} of {distinct} kernel names matched"
    text += f" ({len(m.ordered)} launch by launch)" if m.ordered else ""
    text += f", {share} has a measured verdict"
    text += f"; {m.ambiguous} ambiguous names left unknown" if m.ambiguous else ""
    k = ncu_run.kernels
    if k is not None and k.num_rows and k.column("counter_uses_tc").null_count == k.num_rows:
        # matched or not, no launch of the CSV has a verdict: say why, not how names match
        return text + (
            "; the CSV decides no launch: it holds no tensor-pipe counter that tells matrix "
            "instructions from moves (docs/ncu.md lists the metrics to collect)"
        )
    return text + _largest_unmeasured(kernels, total)


def _largest_unmeasured(kernels: pa.Table, total: int) -> str:
    """The kernels that cost most without a measured verdict, so the user knows what the share
    leaves out; a name the trace keeps mangled is matched only by ``--print-kernel-base mangled``
    (ncu's demangler and the trace's disagree on it, or it cannot be demangled here)."""
    left = kernels.filter(pc.is_null(kernels.column("counter_uses_tc")))
    if not total or left.num_rows == 0:
        return ""
    cols = {"name": left.column("name").cast(pa.string()), "ns": left.column("duration_ns")}
    mangled = pc.starts_with(pc.fill_null(left.column("long_name").cast(pa.string()), ""), "_Z")
    per = aggregate_by(
        pa.table({**cols, "mangled": mangled}),
        "name",
        [("ns", "sum"), ("mangled", "any")],
        use_threads=False,
    ).sort_by([("ns_sum", "descending"), ("name", "ascending")])
    top = per.slice(0, 2).to_pylist()
    names = ", ".join(f"{_shown(r['name'])} ({r['ns_sum'] / total:.0%})" for r in top)
    hint = (
        "; a name the trace keeps mangled matches an ncu CSV made with --print-kernel-base mangled"
        if any(r["mangled_any"] for r in top)
        else ""
    )
    return f". Largest without a measured verdict: {names}{hint}"


def _shown(name: str) -> str:
    """A kernel's name as a note shows it: readable (demangled, or its outline where the name
    cannot be demangled), at most 70 characters."""
    text = short_name(readable(name)) if name.startswith("_Z") else short_name(name)
    text = readable(name) if text in ("Kernel", "Kernel2") else text
    return text if len(text) <= 70 else text[:69] + "…"


def _gpu_note(run: Run, ncu_run: Run) -> list[str]:
    # compared by capability, not by spelling ("9" and "9.0" are one Hopper)
    ours = {
        device_table.plain_cc(g.compute_capability) for g in run.meta.gpus if g.compute_capability
    }
    theirs = {
        device_table.plain_cc(g.compute_capability)
        for g in ncu_run.meta.gpus
        if g.compute_capability
    }
    if ours and theirs and not ours & theirs:
        return [
            f"{GPU_NOTE_PREFIX}{', '.join(sorted(theirs))}, "
            f"the trace ran on {', '.join(sorted(ours))}: kernels may differ"
        ]
    return []
