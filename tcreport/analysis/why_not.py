"""Why an eligible op missed the Tensor Cores, and what to change, from what its row holds.

The report's value is not "72 % of GEMM time on CUDA cores" but "this ``linear`` ran in fp32 on a
cc 7.5 card: wrap it in ``torch.autocast``" or "N = 50257 is not a multiple of 8: pad to 50264".
Everything here is inferred from the op row alone (dtype, input shapes, the GPU's compute
capability), so the same code serves DLProf, Kineto and Nsight Systems inputs. The checks run in
order of how certainly they explain a miss: a dtype with no Tensor Core path beats a misaligned
dimension, which beats "the problem is tiny"; if nothing fits, the honest answer is ``unknown``.

Op instances that missed can be millions (every call of every GEMM of an fp32 run), but the
distinct (name, type, dtype, shapes, device) among them are few: each is explained once, in
Python, for its first instance; finding them is integer grouping on dictionary codes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.analysis import _codes, gpu_arch
from tcreport.analysis import framework as framework_mod
from tcreport.analysis.eligibility import classify_ops, normalise_op_type
from tcreport.analysis.framework import flavour as framework_flavour
from tcreport.analysis.shapes import (
    ALIGN,
    HALF,
    TINY_MACS,
    Problem,
    normalise_dtype,
    padding_for,
    parse_shapes,
    problem_of,
)
from tcreport.analysis.tf32_words import (
    LIBRARY_FIX,
    LIBRARY_FIX_TORCH,
    tf32_fix,
    tf32_switch,
)
from tcreport.model import AuditKey, Gpu, ModelAudit


class Reason(StrEnum):
    FP64 = "fp64"
    FP32_TF32_OFF = "fp32-tf32-off"  # TF32 available (cc >= 8.0 or unknown) but not used
    FP32_NO_TF32 = "fp32-no-tf32"  # cc < 8.0: fp32 has no Tensor Core path at all
    FLOAT32_AMONG_HALF = "float32-among-half"  # fp32 op in a run that otherwise uses fp16/bf16
    DTYPE_UNSUPPORTED = "dtype-unsupported"  # fp8 below cc 8.9, integer types, ...
    UNALIGNED = "unaligned-dims"
    TINY = "tiny-problem"
    # float32 CUDA-core kernel chosen while the same library ran TF32 Tensor Core kernels elsewhere
    LIBRARY_CHOICE = "library-choice"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class WhyNot:
    op_id: str
    op_name: str
    reason: Reason
    message: str
    fix: str
    padding: str | None  # "pad N 50257 → 50264" when a dimension is misaligned
    precision: str | None = None  # the precision whose alignment was judged (UNALIGNED only)
    problem: Problem | None = None  # the GEMM/conv sizes its recorded shapes give, if any


# --- framework wording ------------------------------------------------------------------------------


def _flavour(framework: str | None, ops: pa.Table) -> str:
    """The framework whose words a fix uses (:func:`tcreport.analysis.framework.flavour`, the one
    decision): "torch", "tf", "jax" or "any". The analysis passes its decided flavour word; a
    framework name alone (the Python API) is told by the op names where it is silent."""
    decided = framework_flavour(framework)
    if decided != framework_mod.ANY or ops.num_rows == 0:
        return decided
    names = ops.column("name").unique().to_pylist()
    return framework_flavour(None, (n for n in names if isinstance(n, str)))


_AMP = {
    "torch": "run the model under torch.autocast(device_type='cuda', dtype={dt}) (AMP){scaler}",
    "tf": "tf.keras.mixed_precision.set_global_policy('mixed_{policy}')",
    "any": "use mixed precision: torch.autocast (PyTorch) or the mixed_{policy} policy (Keras)",
    "jax": "compute in {policy}: cast the parameters and inputs to jnp.{policy} (keep float32 "
    "parameters for the update)",
}


def _amp(flavour: str, cc: float | None) -> str:
    bf16 = cc is not None and cc >= 8.0
    return _AMP[flavour].format(
        dt="torch.bfloat16" if bf16 else "torch.float16",
        scaler="" if bf16 else " with a torch.amp.GradScaler('cuda')",
        policy="bfloat16" if bf16 else "float16",
    )


def _cc(gpus: Sequence[Gpu], device_id: int | None) -> float | None:
    """The op's GPU compute capability (guessed from the GPU name when the input does not record
    it); with no device match, the lowest one in the run."""
    known = [(g.device_id, c) for g in gpus if (c := gpu_arch.compute_capability(g)) is not None]
    same = [c for d, c in known if d == device_id]
    if same:
        return same[0]
    return min((c for _, c in known), default=None)


# --- explain --------------------------------------------------------------------------------------


def explain(
    ops: pa.Table,
    framework: str | None,
    gpus: tuple[Gpu, ...],
    tf32_seen_in: frozenset[str] = frozenset(),
    autocast: bool | None = None,
) -> list[WhyNot]:
    """One :class:`WhyNot` per eligible op whose ``uses_tc`` is False, in table order.

    ``tf32_seen_in``: library families ("conv", "gemm") whose TF32 Tensor Core kernels ran in this
    run (:func:`tcreport.analysis.kernel_evidence.tf32_families`): a float32 miss of that family is
    not "TF32 off". ``autocast``: whether the script entered an autocast
    (:func:`autocast_in_use`), so a float32 op beside fp16/bf16 work is called "outside autocast"
    only where there was one."""
    if ops.num_rows == 0:
        return []
    if ops.column("tc_eligible").null_count == ops.num_rows:
        ops = classify_ops(ops, None)
    dtypes = _codes.as_strings(ops.column("dtype"))
    run_uses_half = any(normalise_dtype(d) in HALF for d in dtypes)
    cols = ["op_id", "name", "type", "dtype", "input_shapes", "device_id"]
    if "fp32_kernel" in ops.column_names:  # kernel evidence (analysis.kernel_evidence)
        cols.append("fp32_kernel")
    is_missed = pc.and_(
        pc.fill_null(ops.column("tc_eligible"), False),
        pc.fill_null(pc.invert(ops.column("uses_tc")), False),
    )
    missed = ops.select(cols).filter(is_missed)  # the columns used only: the table is wide
    flavour = _flavour(framework, ops)
    distinct = _distinct_with_evidence(missed)
    seen = tf32_seen_in | _tf32_families(ops, flavour)
    return [
        _one(r, flavour, gpus, run_uses_half, family(r) in seen, autocast)
        for r in distinct.to_pylist()
    ]


def autocast_in_use(audit: ModelAudit | None) -> bool | None:
    """Whether the script entered a ``torch.autocast``: what ``tcreport profile``'s audit saw;
    ``None`` for a trace alone, which does not record it (a float32 op beside float16 tensors
    may be outside autocast or in a script that casts by hand, as make/mix.py of the H200 sample)."""
    if audit is None or audit.framework != "pytorch":
        return None
    return bool(audit.all(AuditKey.TORCH_AUTOCAST))


def family(row: Mapping[str, object]) -> str:
    """The library an op's kernels come from: cuDNN for convolutions (``conv``), cuBLAS for the
    rest (``gemm``); ``row`` needs its ``type`` and ``name``."""
    text = f"{row.get('type') or ''} {row.get('name') or ''}".lower()
    return "conv" if "conv" in text else "gemm"


def _tf32_families(ops: pa.Table, flavour: str) -> frozenset[str]:
    """The library families ("conv", "gemm") in which some float32 op call used Tensor Cores, so
    TF32 is on for them: a float32 call of that family that missed them did so for another reason
    (its shapes, its size), not because TF32 is off.

    PyTorch has two switches, ``torch.backends.cudnn.allow_tf32`` (on by default) for convolutions
    and ``torch.backends.cuda.matmul.allow_tf32`` (off by default) for matmuls, so TF32
    convolutions say nothing about matmuls: the example CNN in float32, profiled on an H200, ran its
    convolutions as TF32 and its ``aten::mm`` on CUDA cores. TensorFlow
    has one switch for both, so there any family's TF32 call stands for all."""
    fp32 = _codes.per_value(
        ops.column("dtype"),
        lambda d: pa.array([normalise_dtype(v) == "fp32" for v in d.to_pylist()], pa.bool_()),
    )
    used = pc.and_(pc.fill_null(fp32, False), pc.fill_null(ops.column("uses_tc"), False))
    rows = ops.select(["type", "name"]).filter(used)
    if rows.num_rows == 0:
        return frozenset()
    if flavour in ("tf", "jax"):  # one switch for both families
        return frozenset({"conv", "gemm"})
    keys = [_codes.codes(rows.column(c)).codes for c in ("type", "name")]
    distinct = rows.take(pa.array(_codes.first_rows(_codes.combine(*keys))))
    return frozenset(family(r) for r in distinct.to_pylist())


def _distinct_key(missed: pa.Table) -> np.ndarray:
    """One code per distinct (name, type, dtype, shapes, device), in order of first appearance:
    the explanation depends on nothing else."""
    keys = [_codes.codes(missed.column(c)).codes for c in ("name", "type", "dtype", "input_shapes")]
    keys.append(np.asarray(pc.fill_null(missed.column("device_id"), -1).to_numpy(), np.int64))
    return _codes.combine(*keys)


def _distinct_with_evidence(missed: pa.Table) -> pa.Table:
    """The first instance of each distinct op (:func:`_distinct_key`), in table order, with the
    float32-kernel evidence of any instance: an ``aten::mm`` whose first call launched a CUTLASS
    SIMT kernel (no precision in its rule) and its next ``ampere_sgemm_*`` is explained once."""
    if missed.num_rows == 0:
        return missed
    key = _distinct_key(missed)
    first = _codes.first_rows(key)
    distinct = missed.take(pa.array(first))
    if "fp32_kernel" not in missed.column_names:
        return distinct
    kernel = missed.column("fp32_kernel")
    with_kernel = np.flatnonzero(np.asarray(pc.is_valid(kernel).to_numpy(zero_copy_only=False)))
    if not len(with_kernel):
        return distinct
    best = np.full(len(first), -1, np.int64)
    best[key[with_kernel[::-1]]] = with_kernel[::-1]  # the first instance with evidence wins
    rows = np.where(best >= 0, best, first)
    i = distinct.schema.get_field_index("fp32_kernel")
    return distinct.set_column(i, distinct.schema.field(i), kernel.take(pa.array(rows)))


def _kernel_dtype(row: dict[str, object], dtype: str | None, label: str) -> tuple[str | None, str]:
    """Without a recorded dtype, the op's own float32 CUDA-core GEMM/convolution kernel
    (analysis.kernel_evidence) says it ran in float32, and the message names that kernel."""
    kernel = row.get("fp32_kernel")
    if dtype is None and isinstance(kernel, str):
        return "fp32", f"{label} (launched {kernel[:60]}, a float32 CUDA-core kernel)"
    return dtype, label


@dataclass(frozen=True)
class _Case:
    """One distinct missed op, with what its explanation depends on."""

    row: dict[str, object]
    label: str
    flavour: str
    cc: float | None
    problem: Problem | None
    autocast: bool | None = None  # the script entered an autocast (None: not known)

    @property
    def cc_text(self) -> str:
        return f"cc {self.cc:.1f}" if self.cc is not None else "this GPU"

    @property
    def target(self) -> str:
        return "bf16" if self.cc is not None and self.cc >= 8.0 else "fp16"

    def why(self, reason: Reason, message: str, fix: str, precision: str) -> WhyNot:
        pad = padding_for(self.problem, precision)
        if pad and reason is not Reason.UNALIGNED:
            fix = f"{fix}; then {pad} (multiples of {ALIGN[precision]} for {precision})"
        return WhyNot(
            str(self.row["op_id"]),
            str(self.row["name"]),
            reason,
            message,
            fix,
            pad,
            problem=self.problem,
        )


def _one(
    row: dict[str, object],
    flavour: str,
    gpus: Sequence[Gpu],
    run_uses_half: bool,
    tf32_on: bool = False,
    autocast: bool | None = None,
) -> WhyNot:
    """The reason one missed op gives: its data type first, then its shapes, then its kernels."""
    op_type = str(row["type"] or row["name"])
    dtype = normalise_dtype(row["dtype"] if isinstance(row["dtype"], str) else None)
    device = row["device_id"] if isinstance(row["device_id"], int) else None
    shapes = parse_shapes(row["input_shapes"] if isinstance(row["input_shapes"], str) else None)
    dtype, label = _kernel_dtype(row, dtype, normalise_op_type(op_type))
    problem = problem_of(op_type, shapes, flavour in ("tf", "jax"))
    case = _Case(row, label, flavour, _cc(gpus, device), problem, autocast)
    by_dtype = _by_dtype(case, dtype, run_uses_half)
    if by_dtype is not None:
        return by_dtype
    if dtype == "fp32":  # TF32 works elsewhere in this run: judge the shapes as TF32 takes them
        if not tf32_on:
            return case.why(
                Reason.FP32_TF32_OFF,
                f"{label} runs in float32 with {tf32_switch(flavour, family(row))} off: "
                f"{case.cc_text} could run it as TF32 on Tensor Cores",
                tf32_fix(flavour, frozenset({family(row)})),
                "tf32",
            )
        dtype = "tf32"
    return _by_shape(case, dtype)


def _by_dtype(case: _Case, dtype: str | None, run_uses_half: bool) -> WhyNot | None:
    """A data type with no Tensor Core path on this GPU, or float32 where it need not be."""
    label, cc, flavour = case.label, case.cc, case.flavour
    if dtype == "fp64":
        return case.why(
            Reason.FP64,
            f"{label} runs in float64, which the mixed-precision Tensor Cores do not take",
            f"compute in float32/TF32 or {_amp(flavour, cc)}",
            case.target,
        )
    if dtype == "fp32" and run_uses_half:
        return _float32_among_half(case)
    if dtype == "fp32" and cc is not None and cc < 8.0:
        return case.why(
            Reason.FP32_NO_TF32,
            f"{label} runs in float32; {case.cc_text} has no TF32, so fp32 never reaches the Tensor Cores",
            _amp(flavour, cc),
            "fp16",
        )
    if dtype == "fp8" and cc is not None and cc < 8.9:
        return case.why(
            Reason.DTYPE_UNSUPPORTED,
            f"{label} uses fp8, which needs cc 8.9 or newer ({case.cc_text})",
            "use bf16/fp16 on this GPU, or run on Ada/Hopper/Blackwell",
            case.target,
        )
    if dtype is not None and dtype not in ALIGN and dtype != "fp32":
        return case.why(
            Reason.DTYPE_UNSUPPORTED,
            f"{label} runs in {dtype}, which has no Tensor Core path",
            _amp(flavour, cc),
            case.target,
        )
    return None


def _float32_among_half(case: _Case) -> WhyNot:
    """A float32 op in a run that computes in fp16/bf16 elsewhere: "outside autocast" only where
    the script entered one; without one (or not known) the fix casts the op's inputs instead."""
    plain = f"{case.label} runs in float32 while the rest of the run uses fp16/bf16"
    if case.flavour == "jax":
        message, fix = plain, "compute it in bfloat16 too: cast its inputs to jnp.bfloat16"
    elif case.flavour == "tf":
        message = plain + ": it is outside the mixed-precision policy"
        fix = "let the op follow the mixed-precision policy (no dtype='float32' override on the layer)"
    elif case.autocast:
        message = plain + ": it is outside autocast"
        fix = "move the op inside the autocast region (or remove the autocast(enabled=False) / explicit .float() around it)"
    else:
        message = plain + ("; the script enters no autocast" if case.autocast is False else "")
        fix = (
            "compute it in fp16/bf16 too: cast its inputs (.half() or .to(torch.bfloat16)) "
            "or run it under torch.autocast(device_type='cuda')"
        )
    return case.why(Reason.FLOAT32_AMONG_HALF, message, fix, case.target)


def _by_shape(case: _Case, dtype: str | None) -> WhyNot:
    """Misaligned or tiny dimensions, the library's own kernel choice, or no evidence at all."""
    label, problem = case.label, case.problem
    precision = dtype or case.target
    pad = padding_for(problem, precision)
    if pad:
        layout = (
            "; for convolutions also use channels_last (NHWC) memory format"
            if problem is not None and problem.kind == "conv" and case.flavour in ("torch", "any")
            else ""
        )
        what = "GEMM M/N/K" if problem is not None and problem.kind == "gemm" else "conv C/K"
        return WhyNot(
            str(case.row["op_id"]),
            str(case.row["name"]),
            Reason.UNALIGNED,
            f"{label}: {what} not multiples of {ALIGN[precision]} for {precision}",
            f"{pad}{layout}",
            pad,
            precision,
            problem,
        )
    if problem is not None and problem.macs is not None and problem.macs < TINY_MACS:
        return case.why(
            Reason.TINY,
            f"{label} is tiny ({problem.macs} multiply-adds): the library picked a CUDA-core kernel",
            "batch more work per call (larger batch, fuse small GEMMs, torch.bmm over many)",
            precision,
        )
    kernel = case.row.get("fp32_kernel")
    if dtype == "tf32" and problem is None and isinstance(kernel, str):
        fam = family(case.row)
        library = "cuDNN" if fam == "conv" else "cuBLAS"
        switch = tf32_switch(case.flavour, fam)
        on = f"{switch} is on" if switch != "TF32" else f"TF32 is on for {library}"
        fix = (LIBRARY_FIX_TORCH if case.flavour == "torch" else LIBRARY_FIX)[library]
        return case.why(
            Reason.LIBRARY_CHOICE,
            f"{label}: {library} picked a float32 CUDA-core kernel ({kernel[:60]}) for these calls "
            f"although TF32 Tensor Core kernels of {library} ran elsewhere in this run, so {on}: "
            "the calls' shapes made the library choose it",
            fix,
            precision,
        )
    return case.why(
        Reason.UNKNOWN,
        f"{label} is eligible and missed Tensor Cores, but its row does not say why (dtype {dtype or 'unknown'})",
        "check dtype, shapes and the kernels it launched in the kernel table",
        precision,
    )
