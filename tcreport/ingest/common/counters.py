"""GPU performance counters that decide Tensor Core use, shared by the readers that carry them.

Nsight Compute (``ncu --csv``) and the CUPTI range profiler that PyTorch's profiler drives
(``cuda_profiler_range`` events in a Kineto trace) read the same PerfWorks metrics, so one
definition of "a tensor-pipe counter" and of the verdict it gives serves both.

Why not "any tensor-pipe counter above 0": on a real H200 (``sample_traces/h200-torch-cnn-ncu``)
``sm__inst_executed_pipe_tensor`` and ``..._op_hmma`` are above 0 for elementwise adds, reductions,
softmax, layout transforms and FFMA convolutions. Every one of those instructions is an HFMA2.MMA,
a move the compiler issues on the tensor pipe (``..._op_hmma_type_hfma2`` equals the count), and
the tensor-pipe cycles are twice it. What separates matrix math from moves, exactly, on every
kernel recorded there:

1. math operations on the tensor path (``sm__ops_path_tensor_*``) above 0;
2. tensor-pipe instructions minus the HFMA2.MMA ones above 0;
3. GMMA, IMMA or DMMA instructions above 0 (never moves).

Any of them is a yes. A no needs one of the separating counters (1 or 2) collected, or every
tensor counter at 0. A bare tensor-pipe or HMMA count above 0 without them is *undecided*: it may
be nothing but moves. Cycle counts never decide (the MMA-type cycle metric shows noise on kernels
with no tensor-path operations). DMMA (fp64) counts as Tensor Cores: it runs on the tensor pipe,
and NVIDIA names it "FP64 Tensor Core" on A100 and H100.

Only counts are evidence: a rollup's rate, percentage or peak (``.sum.per_second``,
``.avg.pct_of_peak_sustained_active``) and ``.min`` never are, and a count that is missing, not
finite or negative (damage: counts are not) is not measured. The subtraction in 2 takes both counts
of one rollup (the total first, else a mean over the same unit): a total minus a mean is not a count
of anything, and turned elementwise kernels whose HFMA2 total was missing into "matrix math".
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from enum import StrEnum
from typing import Any

import numpy as np

#: Kernel duration as both profilers measure it (ns), replayed under the profiler.
DURATION = "gpu__time_duration.sum"
#: Counters of the tensor pipe, any generation: the pipe itself (``sm__inst_executed_pipe_tensor``,
#: ``sm__pipe_tensor_cycles_active``, ``..._op_hmma|imma|dmma|gmma``), math ops on the tensor path
#: (``sm__ops_path_tensor_src_*``) and SASS MMA instructions (``..._op_hmma_pred_on``). Matched
#: against the metric name without its ``.sum``/``.avg`` rollup.
TENSOR_METRIC = re.compile(r"pipe_tensor|ops_path_tensor|_op_[a-z]{0,3}mma(?:_|$)")
#: The metrics that give a verdict on every kernel (verified to exist on an H200 with Nsight
#: Compute 2025.3.1; other GPUs and versions are unverified), for the hints readers print.
DECIDING_METRICS = (
    DURATION,
    "sm__inst_executed_pipe_tensor.sum",
    "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum",
    "sm__ops_path_tensor_src_fp16.sum",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
    "sm__ops_path_tensor_src_fp64.sum",
    "sm__ops_path_tensor_src_int8.sum",
    "sm__ops_path_tensor_src_fp8.sum",
)
_OPS_PATH = "ops_path_tensor_"
_PIPE = "inst_executed_pipe_tensor"
_HMMA = "inst_executed_pipe_tensor_op_hmma"
_HFMA2 = "inst_executed_pipe_tensor_op_hmma_type_hfma2"
_NEVER_MOVES = tuple(f"inst_executed_pipe_tensor_op_{op}" for op in ("gmma", "imma", "dmma"))
#: Rollups that are counts (or a count's mean or maximum over units), by preference: the total
#: first. ``.min`` is left out (it can be negative noise), and so is every sub-metric
#: (``.sum.per_second``, ``.avg.pct_of_peak_sustained_active``, ``.sum.peak_sustained``): a rate,
#: a percentage or a peak is not a count, and subtracting one from a count means nothing.
_ROLLUP_RANK = {"sum": 0, "": 1, "avg": 2, "max": 3}
#: The rollups whose difference is the difference of the counts: the total (``sm__`` and ``smsp__``
#: totals are the same count) and the mean over one unit kind (same denominator). Not ``.max``:
#: two maxima can come from different units.
_SUBTRACTABLE = ("sum", "", "avg")


class TensorEvidence(StrEnum):
    """What a kernel's tensor counters say; only ``MATRIX`` and ``NONE`` are verdicts."""

    MATRIX = "matrix"  # matrix instructions ran on the Tensor Cores
    NONE = "none"  # no matrix instruction (at most HFMA2.MMA moves)
    UNDECIDED = "undecided"  # a tensor-pipe count above 0, but nothing that tells MMA from moves
    UNMEASURED = "unmeasured"  # no tensor count collected (or none a finite, non-negative number)


_EVIDENCE = np.array(list(TensorEvidence), dtype=object)
_MATRIX, _NONE, _UNDECIDED, _UNMEASURED = range(4)
_VERDICTS = {
    TensorEvidence.MATRIX: True,
    TensorEvidence.NONE: False,
    TensorEvidence.UNDECIDED: None,
    TensorEvidence.UNMEASURED: None,
}


def is_tensor_metric(name: str) -> bool:
    return bool(TENSOR_METRIC.search(name.split(".")[0]))


@functools.cache
def _parse(name: str) -> tuple[str, str, str] | None:
    """``sm__inst_executed_pipe_tensor.sum`` -> (``inst_executed_pipe_tensor``, ``sum``, form):
    the counter family, its rollup, and the form whose values may be subtracted from each other
    (``sum`` for ``sm__`` and ``smsp__`` totals alike, ``sm:avg`` for a mean over SMs). None for a
    metric that is not a tensor count: another metric, ``.min``, or a rate, percentage or peak.
    Cached: a name is classified once, however many launches carry it."""
    base, _, rollup = name.partition(".")
    if "." in rollup or rollup not in _ROLLUP_RANK or not TENSOR_METRIC.search(base):
        return None
    unit, sep, rest = base.partition("__")
    family = rest if sep and unit in ("sm", "smsp") else base
    form = f"{unit}:{rollup}" if rollup in ("avg", "max") else rollup
    return family, rollup, form


def is_tensor_count(name: str) -> bool:
    """A metric that is evidence: a tensor counter's total, mean or maximum (:func:`_parse`)."""
    return _parse(name) is not None


def _first(a: np.ndarray | None, b: np.ndarray) -> np.ndarray:
    """Per launch the value of ``a``, or of ``b`` where ``a`` has none."""
    return b if a is None else np.where(np.isnan(a), b, a)


def _any(arrays: Iterable[np.ndarray], test: Callable[[np.ndarray], np.ndarray], n: int) -> Any:
    out = np.zeros(n, dtype=bool)
    for a in arrays:
        out |= test(a)
    return out


def _not_moves(forms: dict[str, dict[str, np.ndarray]], n: int) -> np.ndarray:
    """Tensor-pipe (or HMMA) instructions minus HFMA2.MMA moves, both of one form (the total
    first): never one rollup minus another. NaN where no form has both."""
    ordered = sorted(
        (f for f in forms if f.rpartition(":")[2] in _SUBTRACTABLE),
        key=lambda f: (_SUBTRACTABLE.index(f.rpartition(":")[2]), f),
    )
    out = np.full(n, np.nan)
    for form in ordered:
        values = forms[form]
        pipe = values.get(_PIPE)
        if _HMMA in values:
            pipe = _first(pipe, values[_HMMA])
        if pipe is not None and _HFMA2 in values:
            out = _first(out, pipe - values[_HFMA2])
    return out


def evidence_columns(columns: Iterable[tuple[str, Any]], n: int) -> list[TensorEvidence]:
    """The evidence of ``n`` kernel launches from ``(metric name, values per launch)`` columns (see
    module doc); a value that is None, not finite or negative is not measured. Each name is
    classified once and each column handled whole, so a CSV of a million launches costs numpy
    passes, not a Python step per launch and metric."""
    best: dict[str, np.ndarray] = {}
    ranked: list[tuple[int, str, np.ndarray]] = []
    forms: dict[str, dict[str, np.ndarray]] = {}
    for name, values in columns:
        parsed = _parse(name)
        if parsed is None:
            continue
        family, rollup, form = parsed
        v = np.array(values, dtype=np.float64)  # None -> NaN
        v[~np.isfinite(v) | (v < 0)] = np.nan
        ranked.append((_ROLLUP_RANK[rollup], family, v))
        forms.setdefault(form, {})[family] = _first(forms.get(form, {}).get(family), v)
    for _, family, v in sorted(ranked, key=lambda x: x[0]):
        best[family] = _first(best.get(family), v)
    ops = [v for f, v in best.items() if f.startswith(_OPS_PATH)]
    never_moves = [best[f] for f in _NEVER_MOVES if f in best]
    not_moves = _not_moves(forms, n)
    matrix = _any(ops, lambda v: v > 0, n) | _any(never_moves, lambda v: v > 0, n) | (not_moves > 0)
    present = _any(best.values(), lambda v: ~np.isnan(v), n)
    all_zero = ~_any(best.values(), lambda v: v > 0, n)
    decided = _any(ops, lambda v: ~np.isnan(v), n) | ~np.isnan(not_moves) | all_zero
    codes = np.select(
        [~present, matrix, decided], [_UNMEASURED, _MATRIX, _NONE], default=_UNDECIDED
    )
    return list(_EVIDENCE[codes])


def tensor_evidence(metrics: Iterable[tuple[str, float | None]]) -> TensorEvidence:
    """The evidence of one kernel launch's ``(metric name, value)`` pairs (see module doc)."""
    firsts: dict[str, float | None] = {}
    for name, value in metrics:
        firsts.setdefault(name, value)
    return evidence_columns(((k, [v]) for k, v in firsts.items()), 1)[0]


def verdicts(evidence: list[TensorEvidence]) -> list[bool | None]:
    """True for matrix instructions on the Tensor Cores, False for none, None when the counters
    collected cannot tell, per launch."""
    return [_VERDICTS[e] for e in evidence]


def tensor_verdict(metrics: Iterable[tuple[str, float | None]]) -> bool | None:
    """True for matrix instructions on the Tensor Cores, False for none, None when the counters
    collected cannot tell (:class:`TensorEvidence`)."""
    return _VERDICTS[tensor_evidence(metrics)]


def undecided_note(launches: int, total: int) -> str:
    """Why ``launches`` kernels with tensor-pipe counts above 0 have no verdict, and what to add."""
    return (
        f"{launches} of {total} profiled launches executed tensor-pipe instructions but have no "
        "verdict: without sm__inst_executed_pipe_tensor_op_hmma_type_hfma2 or "
        "sm__ops_path_tensor_* the count cannot tell matrix math from HFMA2.MMA moves, which "
        "elementwise and reduction kernels also run on the tensor pipe; collect --metrics "
        + ",".join(DECIDING_METRICS)
    )
