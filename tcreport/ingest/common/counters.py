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

import math
import re
from collections.abc import Iterable
from enum import StrEnum

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


def is_tensor_metric(name: str) -> bool:
    return bool(TENSOR_METRIC.search(name.split(".")[0]))


def _parse(name: str) -> tuple[str, str, str] | None:
    """``sm__inst_executed_pipe_tensor.sum`` -> (``inst_executed_pipe_tensor``, ``sum``, form):
    the counter family, its rollup, and the form whose values may be subtracted from each other
    (``sum`` for ``sm__`` and ``smsp__`` totals alike, ``sm:avg`` for a mean over SMs). None for a
    metric that is not a tensor count: another metric, ``.min``, or a rate, percentage or peak."""
    base, _, rollup = name.partition(".")
    if "." in rollup or rollup not in _ROLLUP_RANK or not TENSOR_METRIC.search(base):
        return None
    unit, sep, rest = base.partition("__")
    family = rest if sep and unit in ("sm", "smsp") else base
    form = f"{unit}:{rollup}" if rollup in ("avg", "max") else rollup
    return family, rollup, form


def _values(
    metrics: Iterable[tuple[str, float | None]],
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Per tensor family its value from the most telling rollup, and per form (see
    :func:`_parse`) the values of that form alone. A value that is missing, not finite or negative
    (counts are not) is not measured."""
    best: dict[str, tuple[int, float]] = {}
    forms: dict[str, dict[str, float]] = {}
    for name, value in metrics:
        parsed = _parse(name)
        if parsed is None or value is None or not math.isfinite(value) or value < 0:
            continue
        family, rollup, form = parsed
        rank = _ROLLUP_RANK[rollup]
        if family not in best or rank < best[family][0]:
            best[family] = (rank, value)
        forms.setdefault(form, {}).setdefault(family, value)
    return {f: v for f, (_, v) in best.items()}, forms


def _not_moves(forms: dict[str, dict[str, float]]) -> float | None:
    """Tensor-pipe (or HMMA) instructions minus HFMA2.MMA moves, both of one form (the total
    first): never one rollup minus another."""
    ordered = sorted(
        (f for f in forms if f.rpartition(":")[2] in _SUBTRACTABLE),
        key=lambda f: (_SUBTRACTABLE.index(f.rpartition(":")[2]), f),
    )
    for form in ordered:
        values = forms[form]
        pipe, hfma2 = values.get(_PIPE, values.get(_HMMA)), values.get(_HFMA2)
        if pipe is not None and hfma2 is not None:
            return pipe - hfma2
    return None


def tensor_evidence(metrics: Iterable[tuple[str, float | None]]) -> TensorEvidence:
    """The evidence of one kernel launch's ``(metric name, value)`` pairs (see module doc)."""
    values, forms = _values(metrics)
    if not values:
        return TensorEvidence.UNMEASURED
    ops = [v for f, v in values.items() if f.startswith(_OPS_PATH)]
    not_moves = _not_moves(forms)
    if (
        any(v > 0 for v in ops)
        or any(values.get(f, 0) > 0 for f in _NEVER_MOVES)
        or (not_moves is not None and not_moves > 0)
    ):
        return TensorEvidence.MATRIX
    if ops or not_moves is not None or all(v <= 0 for v in values.values()):
        return TensorEvidence.NONE
    return TensorEvidence.UNDECIDED


def tensor_verdict(metrics: Iterable[tuple[str, float | None]]) -> bool | None:
    """True for matrix instructions on the Tensor Cores, False for none, None when the counters
    collected cannot tell (:class:`TensorEvidence`)."""
    evidence = tensor_evidence(metrics)
    if evidence is TensorEvidence.MATRIX:
        return True
    return False if evidence is TensorEvidence.NONE else None


def undecided_note(launches: int, total: int) -> str:
    """Why ``launches`` kernels with tensor-pipe counts above 0 have no verdict, and what to add."""
    return (
        f"{launches} of {total} profiled launches executed tensor-pipe instructions but have no "
        "verdict: without sm__inst_executed_pipe_tensor_op_hmma_type_hfma2 or "
        "sm__ops_path_tensor_* the count cannot tell matrix math from HFMA2.MMA moves, which "
        "elementwise and reduction kernels also run on the tensor pipe; collect --metrics "
        + ",".join(DECIDING_METRICS)
    )
