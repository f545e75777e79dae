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

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.analysis import _codes, gpu_arch
from tcreport.analysis.eligibility import classify_ops, normalise_op_type
from tcreport.model import Gpu


class Reason(StrEnum):
    FP64 = "fp64"
    FP32_TF32_OFF = "fp32-tf32-off"  # TF32 available (cc >= 8.0 or unknown) but not used
    FP32_NO_TF32 = "fp32-no-tf32"  # cc < 8.0: fp32 has no Tensor Core path at all
    OUTSIDE_AUTOCAST = "outside-autocast"  # fp32 op in a run that otherwise uses fp16/bf16
    DTYPE_UNSUPPORTED = "dtype-unsupported"  # fp8 below cc 8.9, integer types, ...
    UNALIGNED = "unaligned-dims"
    TINY = "tiny-problem"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class WhyNot:
    op_id: str
    op_name: str
    reason: Reason
    message: str
    fix: str
    padding: str | None  # "pad N 50257 → 50264" when a dimension is misaligned


#: Alignment (elements) that cuBLAS/cuDNN need for Tensor Core kernels, per operand type.
ALIGN = {"fp16": 8, "bf16": 8, "tf32": 4, "int8": 16, "fp8": 16}
#: Below this many multiply-adds (64^3) libraries pick CUDA-core kernels; TC setup does not pay.
TINY_MACS = 64**3
_HALF = {"fp16", "bf16"}

_DTYPES = {
    "fp64": ("float64", "double", "fp64", "f64", "dt_double", "c10::double"),
    "fp32": ("float32", "float", "fp32", "f32", "dt_float", "single"),
    "tf32": ("tf32", "tensorfloat32"),
    "fp16": ("float16", "half", "fp16", "f16", "dt_half", "c10::half"),
    "bf16": ("bfloat16", "bf16", "dt_bfloat16", "c10::bfloat16"),
    "int8": ("int8", "qint8", "i8", "dt_int8", "signed char", "quint8"),
}


def normalise_dtype(dtype: str | None) -> str | None:
    """One spelling per type: ``torch.float32``, ``c10::BFloat16``, ``DT_HALF`` -> fp32/bf16/fp16."""
    if not dtype:
        return None
    s = dtype.strip().lower().removeprefix("torch.").removeprefix("tf.")
    if "float8" in s or "e4m3" in s or "e5m2" in s or s.startswith("fp8"):
        return "fp8"
    for norm, names in _DTYPES.items():
        if s in names:
            return norm
    return s


# --- shapes -------------------------------------------------------------------------------------

_LABELLED = re.compile(r"<([^<>]*)>")
_PAIR = re.compile(r"([A-Za-z]+)\s*:\s*(\d+)")


@dataclass(frozen=True)
class Shape:
    dims: tuple[int, ...]
    labels: tuple[str, ...] = ()  # DLProf's N,C,H,W / K,C,R,S when given

    def get(self, label: str) -> int | None:
        return self.dims[self.labels.index(label)] if label in self.labels else None


def parse_shapes(text: str | None) -> list[Shape]:
    """Input shapes in any of the formats readers pass through.

    DLProf ``<N:32, C:3, H:32, W:32>; <K:6, C:3, R:3, S:3>``, Kineto ``Input Dims``
    ``[[32, 128], [128, 50257], []]``, nsys autograd ``sizes = [[32, 128], [128, 50257]]``.
    Unparseable text gives an empty list: shapes are evidence, never a reason to fail.
    """
    if not text:
        return []
    if "<" in text and ":" in text:
        out = []
        for body in _LABELLED.findall(text):
            pairs = _PAIR.findall(body)
            out.append(Shape(tuple(int(v) for _, v in pairs), tuple(k for k, _ in pairs)))
        return out
    start, end = text.find("["), text.rfind("]")
    if start < 0 or end <= start:
        return []
    try:
        raw = json.loads(text[start : end + 1])
    except ValueError:
        return []
    if isinstance(raw, list) and raw and all(isinstance(x, int) for x in raw):
        raw = [raw]  # a single shape
    return (
        [Shape(tuple(x)) for x in raw if isinstance(x, list) and all(isinstance(d, int) for d in x)]
        if isinstance(raw, list)
        else []
    )


# --- problem dimensions ---------------------------------------------------------------------------

_CONV = re.compile(r"conv|convolution")
_BIAS_FIRST = {"addmm", "addmm_", "baddbmm", "baddbmm_", "addbmm", "_addmm_activation"}


@dataclass(frozen=True)
class Problem:
    kind: str  # "gemm" | "conv"
    dims: tuple[tuple[str, int], ...]  # named dims that must be aligned
    macs: int | None


def problem_of(op_type: str, shapes: Sequence[Shape], tensorflow: bool) -> Problem | None:
    """GEMM M/N/K or conv C/K from the op's input shapes; ``None`` when they do not say."""
    t = normalise_op_type(op_type)
    if _CONV.search(t):
        return _conv(shapes, tensorflow)
    mats = [s for s in shapes if len(s.dims) >= 2]
    if t in _BIAS_FIRST and len(shapes) >= 3:
        mats = [s for s in shapes[1:] if len(s.dims) >= 2]
    if len(mats) < 2:
        return None
    a, b = mats[0].dims, mats[1].dims
    if t == "linear":  # input [..., K], weight [N, K]
        m, k, n = math.prod(a[:-1]), a[-1], b[0]
    else:  # [.., M, K] x [.., K, N]; transposes only swap which dims are which
        m, k, n = a[-2], a[-1], b[-1]
    batch = math.prod(a[:-2]) if t != "linear" and len(a) > 2 else 1
    return Problem("gemm", (("M", m), ("N", n), ("K", k)), batch * m * n * k)


def _conv(shapes: Sequence[Shape], tensorflow: bool) -> Problem | None:
    if len(shapes) < 2:
        return None
    x, w = shapes[0], shapes[1]
    if x.labels and w.labels:
        c, k = w.get("C") or x.get("C"), w.get("K")
    elif len(w.dims) >= 3:
        # PyTorch weights are [K, C/groups, R, S]; TensorFlow filters are [R, S, C, K]
        c, k = (w.dims[-2], w.dims[-1]) if tensorflow else (w.dims[1], w.dims[0])
    else:
        return None
    if c is None or k is None:
        return None
    spatial = math.prod(x.dims[2:]) if len(x.dims) > 2 else 1
    kernel = math.prod(w.dims[2:]) if not tensorflow else math.prod(w.dims[:-2])
    macs = (x.dims[0] if x.dims else 1) * spatial * c * k * kernel
    return Problem("conv", (("C", c), ("K", k)), macs)


def padding_for(problem: Problem | None, precision: str) -> str | None:
    """ "pad N 50257 → 50264" for every dimension that breaks the alignment of ``precision``."""
    if problem is None or precision not in ALIGN:
        return None
    a = ALIGN[precision]
    bad = [f"{name} {v} → {-(-v // a) * a}" for name, v in problem.dims if v % a]
    return "pad " + ", ".join(bad) if bad else None


# --- framework wording ------------------------------------------------------------------------------


def _flavour(framework: str | None) -> str:
    f = (framework or "").lower()
    if "torch" in f:
        return "torch"
    if "tensorflow" in f or "keras" in f or f.startswith("tf") or "jax" in f or "xla" in f:
        return "tf"
    return "any"


_AMP = {
    "torch": "run the model under torch.autocast(device_type='cuda', dtype={dt}) (AMP){scaler}",
    "tf": "tf.keras.mixed_precision.set_global_policy('mixed_{policy}')",
    "any": "use mixed precision: torch.autocast (PyTorch) or the mixed_{policy} policy (Keras)",
}
_TF32 = {
    "torch": "torch.backends.cuda.matmul.allow_tf32 = True (or "
    'torch.set_float32_matmul_precision("high")) for matmuls; '
    "torch.backends.cudnn.allow_tf32 = True for convolutions; or AMP: "
    "torch.autocast(device_type='cuda', dtype=torch.bfloat16)",
    "tf": "tf.config.experimental.enable_tensor_float_32_execution(True), or the mixed_bfloat16 policy",
    "any": "enable TF32 (PyTorch: torch.backends.cuda.matmul.allow_tf32; TensorFlow: "
    "enable_tensor_float_32_execution) or use mixed precision",
}


def _amp(flavour: str, cc: float | None) -> str:
    bf16 = cc is not None and cc >= 8.0
    return _AMP[flavour].format(
        dt="torch.bfloat16" if bf16 else "torch.float16",
        scaler="" if bf16 else " with a torch.cuda.amp.GradScaler",
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


def explain(ops: pa.Table, framework: str | None, gpus: tuple[Gpu, ...]) -> list[WhyNot]:
    """One :class:`WhyNot` per eligible op whose ``uses_tc`` is False, in table order."""
    if ops.num_rows == 0:
        return []
    if ops.column("tc_eligible").null_count == ops.num_rows:
        ops = classify_ops(ops, None)
    dtypes = _codes.as_strings(ops.column("dtype"))
    run_uses_half = any(normalise_dtype(d) in _HALF for d in dtypes)
    missed = ops.filter(
        pc.and_(
            pc.fill_null(ops.column("tc_eligible"), False),
            pc.fill_null(pc.invert(ops.column("uses_tc")), False),
        )
    )
    flavour = _flavour(framework)
    cols = ["op_id", "name", "type", "dtype", "input_shapes", "device_id"]
    if "fp32_kernel" in ops.column_names:  # kernel evidence (analysis.kernel_evidence)
        cols.append("fp32_kernel")
    distinct = missed.take(pa.array(_first_of_each(missed))).select(cols)
    tf32_on = _tf32_seen(ops)
    return [_one(r, flavour, gpus, run_uses_half, tf32_on) for r in distinct.to_pylist()]


def _tf32_seen(ops: pa.Table) -> bool:
    """Some float32 op call used Tensor Cores, so TF32 is on in this run: a float32 call that
    missed them did so for another reason (its shapes, its size), not because TF32 is off."""
    fp32 = _codes.per_value(
        ops.column("dtype"),
        lambda d: pa.array([normalise_dtype(v) == "fp32" for v in d.to_pylist()], pa.bool_()),
    )
    used = pc.and_(pc.fill_null(fp32, False), pc.fill_null(ops.column("uses_tc"), False))
    return bool(pc.any(used).as_py())


def _first_of_each(missed: pa.Table) -> np.ndarray:
    """Row numbers of the first instance of each distinct (name, type, dtype, shapes, device), in
    table order: the explanation depends on nothing else."""
    if missed.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    keys = [_codes.codes(missed.column(c)).codes for c in ("name", "type", "dtype", "input_shapes")]
    keys.append(np.asarray(pc.fill_null(missed.column("device_id"), -1).to_numpy(), np.int64))
    return _codes.first_rows(_codes.combine(*keys))


def _kernel_dtype(row: dict[str, object], dtype: str | None, label: str) -> tuple[str | None, str]:
    """Without a recorded dtype, the op's own float32 CUDA-core GEMM/convolution kernel
    (analysis.kernel_evidence) says it ran in float32, and the message names that kernel."""
    kernel = row.get("fp32_kernel")
    if dtype is None and isinstance(kernel, str):
        return "fp32", f"{label} (launched {kernel[:60]}, a float32 CUDA-core kernel)"
    return dtype, label


def _one(
    row: dict[str, object],
    flavour: str,
    gpus: Sequence[Gpu],
    run_uses_half: bool,
    tf32_on: bool = False,
) -> WhyNot:
    op_id, name = str(row["op_id"]), str(row["name"])
    op_type = str(row["type"] or name)
    dtype = normalise_dtype(row["dtype"] if isinstance(row["dtype"], str) else None)
    device = row["device_id"] if isinstance(row["device_id"], int) else None
    cc = _cc(gpus, device)
    shapes = parse_shapes(row["input_shapes"] if isinstance(row["input_shapes"], str) else None)
    problem = problem_of(op_type, shapes, flavour == "tf")
    label = normalise_op_type(op_type)
    cc_text = f"cc {cc:.1f}" if cc is not None else "this GPU"

    def why(reason: Reason, message: str, fix: str, precision: str) -> WhyNot:
        pad = padding_for(problem, precision)
        if pad and reason is not Reason.UNALIGNED:
            fix = f"{fix}; then {pad} (multiples of {ALIGN[precision]} for {precision})"
        return WhyNot(op_id, name, reason, message, fix, pad)

    target = "bf16" if cc is not None and cc >= 8.0 else "fp16"
    dtype, label = _kernel_dtype(row, dtype, label)
    if dtype == "fp64":
        return why(
            Reason.FP64,
            f"{label} runs in float64, which the mixed-precision Tensor Cores do not take",
            f"compute in float32/TF32 or {_amp(flavour, cc)}",
            target,
        )
    if dtype == "fp32" and run_uses_half:
        fix = (
            "move the op inside the autocast region (or remove the autocast(enabled=False) / explicit .float() around it)"
            if flavour != "tf"
            else "let the op follow the mixed-precision policy (no dtype='float32' override on the layer)"
        )
        return why(
            Reason.OUTSIDE_AUTOCAST,
            f"{label} runs in float32 while the rest of the run uses fp16/bf16: it is outside autocast",
            fix,
            target,
        )
    if dtype == "fp32" and cc is not None and cc < 8.0:
        return why(
            Reason.FP32_NO_TF32,
            f"{label} runs in float32; {cc_text} has no TF32, so fp32 never reaches the Tensor Cores",
            _amp(flavour, cc),
            "fp16",
        )
    if dtype == "fp32" and tf32_on:
        dtype = "tf32"  # TF32 works elsewhere in this run: judge the shapes as TF32 takes them
    if dtype == "fp32":
        return why(
            Reason.FP32_TF32_OFF,
            f"{label} runs in float32 with TF32 off: {cc_text} could run it as TF32 on Tensor Cores",
            _TF32[flavour],
            "tf32",
        )
    if dtype == "fp8" and cc is not None and cc < 8.9:
        return why(
            Reason.DTYPE_UNSUPPORTED,
            f"{label} uses fp8, which needs cc 8.9 or newer ({cc_text})",
            "use bf16/fp16 on this GPU, or run on Ada/Hopper/Blackwell",
            target,
        )
    if dtype is not None and dtype not in ALIGN:
        return why(
            Reason.DTYPE_UNSUPPORTED,
            f"{label} runs in {dtype}, which has no Tensor Core path",
            _amp(flavour, cc),
            target,
        )
    precision = dtype or target
    pad = padding_for(problem, precision)
    if pad:
        layout = (
            "; for convolutions also use channels_last (NHWC) memory format"
            if problem is not None and problem.kind == "conv" and flavour != "tf"
            else ""
        )
        what = "GEMM M/N/K" if problem is not None and problem.kind == "gemm" else "conv C/K"
        return WhyNot(
            op_id,
            name,
            Reason.UNALIGNED,
            f"{label}: {what} not multiples of {ALIGN[precision]} for {precision}",
            f"{pad}{layout}",
            pad,
        )
    if problem is not None and problem.macs is not None and problem.macs < TINY_MACS:
        return why(
            Reason.TINY,
            f"{label} is tiny ({problem.macs} multiply-adds): the library picked a CUDA-core kernel",
            "batch more work per call (larger batch, fuse small GEMMs, torch.bmm over many)",
            precision,
        )
    return why(
        Reason.UNKNOWN,
        f"{label} is eligible and missed Tensor Cores, but its row does not say why (dtype {dtype or 'unknown'})",
        "check dtype, shapes and the kernels it launched in the kernel table",
        precision,
    )
