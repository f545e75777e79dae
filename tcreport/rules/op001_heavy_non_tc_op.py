"""OP001: an op type that can never use Tensor Cores takes a large share of GPU time.

After mixed precision moves the GEMMs and convolutions to Tensor Cores, what remains is the ops
with no Tensor Core path: resize/upsample/interpolate, normalisation, elementwise, reductions,
copies and casts. Amdahl's law makes them the next bottleneck (resize ops taking ~10 % of a
segmentation model after its switch to float16 is the classic case). Collectives (NCCL all-reduce,
all-to-all, and the ops PyTorch records around them: ``record_param_comms``, ``c10d::``,
``nccl:``; :data:`tcreport.analysis.activity.COLLECTIVE_OP`) are left out: they are not compute,
and their fix is overlap (CM002), not a cheaper op.
"""

from __future__ import annotations

import re

from tcreport import fmt
from tcreport.analysis.activity import COLLECTIVE_OP
from tcreport.analysis.eligibility import is_eligible_type
from tcreport.analysis.result import Analysis
from tcreport.analysis.sections.verdict import UnitWords
from tcreport.rules import _common as c
from tcreport.rules import thresholds
from tcreport.rules.base import Evidence, EvidenceKind, Finding, Severity

ID = "OP001"
_COLLECTIVE = re.compile(COLLECTIVE_OP, re.I)
_RESIZE = re.compile(r"upsample|interpolat|resize|grid_sampler|affine_grid|roi_?align", re.I)
_NORM = re.compile(r"norm", re.I)
#: batch normalisation (``aten::native_batch_norm``, ``cudnn_batch_norm``, TF's
#: ``FusedBatchNormV3``), where a convnet's memory layout matters; a transformer's LayerNorm or
#: RMSNorm has no channels to lay out
_BATCH_NORM = re.compile(r"batch_?norm", re.I)
#: An op of another namespace than ATen's (``fbgemm::``, ``torch::autograd::CppNode<...>``): an
#: extension's or a custom autograd Function's kernels. Plain names (DLProf's, TensorFlow's, a
#: module path) say nothing either way and keep the fusion advice.
_FOREIGN = re.compile(r"^(?!aten::)[A-Za-z_][\w]*::")
#: The op type of an XLA fusion's kernel (an HLO ``fusion`` instruction: the JAX reader's ops,
#: tcreport.ingest.xplane.hlo): element-wise and reduction work XLA has fused already.
_XLA_FUSION = "fusion"
_CAST = re.compile(r"^(aten::)?(to|_to_copy|copy_|cast|contiguous|clone)$", re.I)


def _fix(
    op_type: str, fl: c.Flavour, w: UnitWords, nvidia: bool, jax: bool = False, aten: bool = True
) -> str:
    """The fix, in the words of the run's framework and its matrix unit ("Tensor Core"); DALI
    (NVIDIA's) only for a GPU of NVIDIA's. A JAX run is XLA-compiled already where jitted. A
    PyTorch op that is no ATen op (an extension's kernel, FBGEMM's ``SplitLookupFunction_*``, a
    custom autograd Function) is often fused already, and torch.compile does not fuse into it."""
    if fl is c.Flavour.TORCH and not aten:
        return (
            f"It is not an ATen op but an extension's or a custom autograd Function's own kernels, "
            "which torch.compile does not fuse into their neighbours: look for the library's "
            "faster variant or settings (precision, batching, cache), or take the op off the "
            f"step; it has no {w.unit_one} path."
        )
    fuse = {
        c.Flavour.TORCH: "compile the model with torch.compile so it fuses into neighbouring "
        "kernels",
        c.Flavour.TF: "compile the step with XLA (tf.function(jit_compile=True)) so it fuses",
        c.Flavour.ANY: "let a compiler fuse it (torch.compile, XLA)",
    }[fl]
    if jax:
        fuse = "make sure the whole step is under one jax.jit so XLA fuses it into its neighbours"
    if _RESIZE.search(op_type):
        return (
            "Cheaper resize: nearest instead of bilinear/bicubic where quality allows, a transposed "
            f"convolution or pixel shuffle ({w.unit_one} eligible) instead of upsample+conv, or resize "
            f"in the input pipeline on the GPU{' (DALI)' if nvidia else ''}; and {fuse}."
        )
    if _BATCH_NORM.search(op_type) and fl is c.Flavour.TORCH:
        return (
            "Put the model and its inputs in channels_last memory format "
            "(model.to(memory_format=torch.channels_last)) so cuDNN runs batch norm in NHWC, or "
            f"{fuse}."
        )
    if _BATCH_NORM.search(op_type):  # TensorFlow and JAX lay convnets out NHWC already
        return f"{fuse[0].upper()}{fuse[1:]}; this op type has no {w.unit_one} path."
    if _NORM.search(op_type):
        return f"Use the fused normalisation kernels (apex/Transformer Engine fused LayerNorm or RMSNorm) or {fuse}."
    if _CAST.search(op_type):
        return "Avoid repeated casts/copies: keep weights and activations in the compute dtype (autocast caches weight casts), drop .contiguous()/.to() inside the step."
    return f"{fuse[0].upper()}{fuse[1:]}; this op type has no {w.unit_one} path."


def check(analysis: Analysis) -> list[Finding]:
    total = analysis.time.gpu_kernel_ns
    if not total or not analysis.breakdown.ops:
        return []
    by_type: dict[str, list[str]] = {}
    gpu: dict[str, int] = {}
    for o in analysis.breakdown.ops:  # one row per distinct op name: small
        t = o.type or o.name
        if o.tc_eligible or o.uses_tc or is_eligible_type(t) or _COLLECTIVE.search(t):
            continue
        if t == _XLA_FUSION:  # fused by XLA already: "fuse it" has nothing left to say
            continue
        by_type.setdefault(t, []).append(o.name)
        gpu[t] = gpu.get(t, 0) + (o.gpu_ns or 0)
    fl = c.flavour(analysis)
    w = analysis.verdict.words
    out: list[Finding] = []
    for t, ns in sorted(gpu.items(), key=lambda kv: (-kv[1], kv[0])):
        sh = c.share(ns, total)
        if sh is None or sh < thresholds.HEAVY_NON_TC_SHARE:
            break
        out.append(
            Finding(
                id=ID,
                severity=Severity.MEDIUM
                if sh >= 2 * thresholds.HEAVY_NON_TC_SHARE
                else Severity.LOW,
                title=f"{t} takes {fmt.pct_text(sh)} of GPU time and cannot use {w.unit}",
                detail=f"{fmt.plural(len(by_type[t]), 'op')} of type {t} "
                f"{fmt.noun(len(by_type[t]), 'takes', 'take')} {fmt.ns(ns)} of "
                f"{fmt.ns(total)} GPU kernel time. {w.unit} do not speed this op type up, so it "
                "grows in share as the GEMMs and convolutions get faster.",
                fix=_fix(
                    t,
                    fl,
                    w,
                    c.is_nvidia(analysis),
                    c.is_jax(analysis),
                    # the op's own name, after any NVTX scope path ("FSDP::pre_forward (…)/aten::to")
                    aten=not any(_FOREIGN.match(n.rsplit("/", 1)[-1]) for n in by_type[t]),
                ),
                estimated_saving_ns=int(ns * thresholds.NON_TC_REDUCTION),
                assumptions=f"fusing or replacing the op cuts its time by "
                f"{thresholds.NON_TC_REDUCTION:.0%} (memory-bound work: one pass instead of two)",
                evidence=tuple(Evidence(EvidenceKind.OP, n) for n in by_type[t][:10]),
            )
        )
    return out
