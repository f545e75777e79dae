"""Helpers the rules share: framework wording, GPU generation, op lookups, severity and saving.

Fixes must name the knob of the framework that ran (``torch.autocast`` is no use to a Keras user)
and the GPU that ran it (TF32 exists only from Ampere on), so both are resolved once here. Findings
are plain text; their durations and shares are written with :mod:`tcreport.fmt`, as the renderers'.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum

from tcreport.analysis import framework, gpu_arch, tf32_words
from tcreport.analysis.figures import KernelRow, OpRow, in_some_calls_only
from tcreport.analysis.result import Analysis
from tcreport.analysis.shapes import normalise_dtype
from tcreport.analysis.vendor import Vendor
from tcreport.analysis.why_not import WhyNot
from tcreport.rules import thresholds
from tcreport.rules.base import Severity


class Flavour(StrEnum):
    TORCH = "torch"
    TF = "tf"
    ANY = "any"


def flavour(analysis: Analysis) -> Flavour:
    """The framework family of the advice: the analysis' one decision
    (:attr:`Verdict.flavour <tcreport.analysis.sections.verdict.Verdict.flavour>`), JAX's advice
    being XLA's, as TensorFlow's, apart from the switches :func:`is_jax` guards."""
    f = analysis.verdict.flavour
    return Flavour.TF if f == framework.JAX else Flavour(f)


def is_jax(analysis: Analysis) -> bool:
    """A JAX run (its XSpace says so): TensorFlow's flavour for most advice (XLA's), but never
    TensorFlow's switches (tf.config TF32, the Keras policy), which JAX does not read."""
    return analysis.verdict.flavour == framework.JAX


def words_flavour(analysis: Analysis) -> str:
    """The flavour :mod:`tcreport.analysis.why_not`'s fixes take ("jax" for JAX runs)."""
    return analysis.verdict.flavour


def compute_capability(analysis: Analysis) -> float | None:
    """The lowest known compute capability in the run; a guess from the GPU name, else from the
    kernel names' architecture marks, when absent (:func:`gpu_arch.run_compute_capability`)."""
    return gpu_arch.run_compute_capability(
        analysis.meta.gpus, (k.name for k in analysis.breakdown.kernels)
    )


def is_nvidia(analysis: Analysis) -> bool:
    """Whether advice about NVIDIA's hardware and tools (TF32, Nsight Compute) applies: an NVIDIA
    GPU, or one whose vendor the trace does not say (the report's words are NVIDIA's then too)."""
    return analysis.verdict.vendor in (Vendor.NVIDIA, Vendor.UNKNOWN)


def amp_fix(analysis: Analysis) -> str:
    """How to turn on mixed precision (and TF32 where the GPU has it), in the framework's words,
    for the run's framework, GPU and vendor."""
    return amp_text(
        flavour(analysis), compute_capability(analysis), is_nvidia(analysis), is_jax(analysis)
    )


def amp_text(fl: Flavour, cc: float | None, nvidia: bool, jax: bool = False) -> str:
    """:func:`amp_fix` for a framework and compute capability known otherwise (the model audit's);
    TF32 is NVIDIA's, so it is not offered for another vendor's GPU."""
    bf16 = cc is not None and cc >= 8.0
    dt = "bfloat16" if bf16 else "float16"
    torch = (
        f"wrap the forward pass and loss in torch.autocast(device_type='cuda', dtype=torch.{dt})"
        + ("" if bf16 else " and scale the loss with torch.amp.GradScaler('cuda')")
    )
    tf = f"set tf.keras.mixed_precision.set_global_policy('mixed_{dt}')" + (
        "" if bf16 else " (Keras' fit() then applies dynamic loss scaling)"
    )
    tf32 = {
        Flavour.TORCH: "torch.backends.cuda.matmul.allow_tf32 = True and "
        "torch.backends.cudnn.allow_tf32 = True",
        Flavour.TF: "tf.config.experimental.enable_tensor_float_32_execution(True)",
        Flavour.ANY: "TF32 (torch.backends.cuda.matmul.allow_tf32 in PyTorch; "
        "enable_tensor_float_32_execution in TensorFlow)",
    }[fl]
    main = {Flavour.TORCH: torch, Flavour.TF: tf, Flavour.ANY: f"PyTorch: {torch}; Keras: {tf}"}[fl]
    if jax:  # XLA's flavour elsewhere, but TensorFlow's switches do nothing in JAX
        main = f"compute in {dt}: cast the parameters and inputs to jnp.{dt}" + (
            "" if bf16 else " and scale the loss (jmp's DynamicLossScale)"
        )
        tf32 = tf32_words.JAX_TF32
    if not nvidia:
        return f"{main}."
    if cc is None:
        return f"{main}. On Ampere or newer GPUs, {tf32} also puts float32 matmuls on Tensor Cores."
    if bf16:
        return f"{main}; or, keeping float32, {tf32} (TF32 Tensor Cores, cc {cc:.1f})."
    return f"{main}. This GPU (cc {cc:.1f}) has no TF32, so float32 never reaches its Tensor Cores."


def op_index(analysis: Analysis) -> dict[str, OpRow]:
    """Op name -> its op row, for the ops a why-not row names (rows are grouped by name)."""
    wanted = {w.op_name for w in analysis.verdict.why_not}
    return {o.name: o for o in analysis.breakdown.ops if o.name in wanted}


def why_not_by_op(analysis: Analysis) -> list[tuple[OpRow, WhyNot]]:
    """Each op that missed Tensor Cores in some or all calls (:attr:`OpRow.has_misses`, the
    headline's definition), with its first explanation, in op order (largest GPU time first)."""
    index = op_index(analysis)
    first: dict[str, WhyNot] = {}
    for w in analysis.verdict.why_not:
        o = index.get(w.op_name)
        if o is not None and o.has_misses and o.name not in first:
            first[o.name] = w
    return [(o, first[o.name]) for o in analysis.breakdown.ops if o.name in first]


def tc_severity(
    share_of_kernel_time: float | None, unknown: Severity = Severity.MEDIUM
) -> Severity:
    """HIGH from :data:`thresholds.HIGH_SEVERITY_SHARE` of kernel time on, ``unknown`` without a share."""
    if share_of_kernel_time is None:
        return unknown
    high = share_of_kernel_time >= thresholds.HIGH_SEVERITY_SHARE
    return Severity.HIGH if high else Severity.MEDIUM


def tc_saving(missed_gpu_ns: int | None) -> int | None:
    """GPU time saved if the missed time ran :data:`thresholds.TC_SPEEDUP` x faster on Tensor Cores."""
    return int(missed_gpu_ns * (1 - 1 / thresholds.TC_SPEEDUP)) if missed_gpu_ns else None


def gpu_ns(ops: Iterable[OpRow]) -> int:
    return sum(o.gpu_ns or 0 for o in ops)


def missed_ns(ops: Iterable[OpRow]) -> int:
    """GPU time of the ops' calls that missed Tensor Cores (:attr:`OpRow.missed_ns`)."""
    return sum(o.missed_ns for o in ops)


def partly(ops: Iterable[OpRow]) -> str:
    """A remark for ops that used Tensor Cores in other calls, or "" when none did."""
    listed = list(ops)
    return in_some_calls_only(sum(1 for o in listed if o.partly_missed), len(listed))


def whose_time(ops: Iterable[OpRow], subject: str = "they") -> str:
    """Who "takes" the missed time: the ops, or only their calls that missed where some ops used
    Tensor Cores in other calls."""
    return "the calls that missed" if any(o.partly_missed for o in ops) else subject


def share(part: int | None, whole: int | None) -> float | None:
    if part is None or whole is None or whole <= 0:
        return None
    return min(1.0, max(0.0, part / whole))


def is_half(dtype: str | None) -> bool:
    return normalise_dtype(dtype) in ("fp16", "bf16")


def run_uses_half(analysis: Analysis) -> bool:
    """Any op in fp16/bf16: the run has mixed precision on, at least partly."""
    return any(is_half(o.dtype) for o in analysis.breakdown.ops)


#: cuDNN's layout transposes (``cudnn::engines_precompiled::nchwToNhwcKernel<__half, ...>``;
#: older cuDNN without the namespace). Not ``tensorTransformGeneric``: it also pads and casts.
LAYOUT_CONVERSION = re.compile(r"\b(?:nchwToNhwc|nhwcToNchw)Kernel\b")


def layout_conversions(analysis: Analysis) -> list[KernelRow]:
    """The kernel rows of cuDNN's NCHW <-> NHWC transposes (CV003's evidence). None among known
    kernel names means the convolutions already get channels-last tensors (the H200 sample's
    channels_last run launches none), so "use channels_last" is no advice there."""
    return [k for k in analysis.breakdown.kernels if LAYOUT_CONVERSION.search(k.name)]


#: Op names only a training step records: autograd's backward ops and the optimizers' steps.
_TRAINING_OP = re.compile(r"backward|Optimizer\.|optimizer|\bAdam|\bSGD|apply_gradients", re.I)


def trains(analysis: Analysis) -> bool | None:
    """Whether the run is a training step (an op of backward or of an optimizer), so advice about
    optimizers fits; ``None`` when the input records no ops to tell by."""
    ops = analysis.breakdown.ops
    if not ops:
        return None
    return any(_TRAINING_OP.search(o.name) for o in ops)
