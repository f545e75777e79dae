"""Which ops could use Tensor Cores, and which did.

Eligibility is a property of the op type (a GEMM, a convolution, attention, a cuDNN RNN), written
differently by each framework: ATen ``aten::addmm`` and its autograd node ``AddmmBackward0``,
TensorFlow ``MatMul``/``_FusedConv2D``, XLA ``dot``/``custom-call``, DLProf's lower-case ``linear``.
The lists follow the TF profiler's ``IsOpTensorCoreEligible`` and the PyTorch TensorBoard plugin's
``TC_OP_Allowlist``, minus what never reaches a Tensor Core (``mv``/``addmv``/``addr``/``prelu`` are
GEMV/elementwise work) and plus what both lists predate (SDPA/flash attention, ``einsum``,
``_scaled_mm``). And, as the TF profiler does, any op whose kernels did use Tensor Cores is eligible
whatever its name: the kernels are the stronger evidence.

"Uses TC" comes from the kernels joined on ``op_id`` (any TC kernel suffices), aggregated with
``group_by`` so a trace with millions of launches stays a few vector operations.
"""

from __future__ import annotations

import re
from functools import cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport import schema
from tcreport._arrays import exact_sums
from tcreport.analysis import _codes
from tcreport.analysis.tc_kernels import Agreement, classify_kernels, compare_labels

#: Normalised (lower-case, no ``aten::``/``_fused`` prefix, no ``vN`` suffix) eligible op types.
ATEN_ELIGIBLE = frozenset(
    {
        "mm", "addmm", "addmm_", "_addmm_activation", "bmm", "baddbmm", "baddbmm_", "addbmm", "matmul",
        "linear", "chain_matmul", "linalg_multi_dot", "einsum", "_scaled_mm", "_int_mm",
        "conv1d", "conv2d", "conv3d", "conv_tbc", "convolution", "_convolution", "_convolution_nogroup",
        "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "cudnn_convolution",
        "cudnn_convolution_transpose", "cudnn_convolution_relu", "cudnn_convolution_add_relu",
        "convolution_backward", "cudnn_convolution_backward", "cudnn_convolution_backward_input",
        "cudnn_convolution_backward_weight", "cudnn_convolution_transpose_backward",
        "cudnn_convolution_transpose_backward_input", "cudnn_convolution_transpose_backward_weight",
        "scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
        "_scaled_dot_product_flash_attention_backward", "_scaled_dot_product_efficient_attention_backward",
        "_scaled_dot_product_cudnn_attention_backward", "_flash_attention_forward",
        "_flash_attention_backward", "_efficient_attention_forward", "_efficient_attention_backward",
        "multi_head_attention_forward", "_native_multi_head_attention",
        "lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
        "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "_cudnn_rnn", "_cudnn_rnn_backward",
    }
)  # fmt: skip

#: TensorFlow / Keras / XLA op types, normalised the same way (``BatchMatMulV2`` -> ``batchmatmul``).
TF_ELIGIBLE = frozenset(
    {
        "matmul", "batchmatmul", "conv2d", "conv2dbackpropfilter", "conv2dbackpropinput", "conv3d",
        "conv3dbackpropfilter", "conv3dbackpropinput", "depthwiseconv2dnative",
        "depthwiseconv2dnativebackpropfilter", "depthwiseconv2dnativebackpropinput", "einsum",
        "cudnnrnn", "cudnnrnnbackprop", "conv2dbiasactivation", "xladot", "xlaconv",
        "dot", "dot_general", "convolution", "cublas-gemm", "cublaslt-matmul", "cudnn-conv",
        "cudnn-conv-bias-activation", "triton_gemm",
    }
)  # fmt: skip

#: DLProf's PyTorch-mode op types (``dlprof_op_type.csv``) are ATen names; its TF mode writes TF types.
ELIGIBLE = ATEN_ELIGIBLE | TF_ELIGIBLE

#: Autograd nodes of eligible ops: ``MmBackward0``, ``ConvolutionBackward0``, ``CudnnRnnBackward0``...
_BACKWARD = re.compile(
    r"^(?:mm|addmm|bmm|baddbmm|addbmm|matmul|linear|convolution|cudnnconvolution|"
    r"cudnnconvolutiontranspose|slowconv(?:transpose|dilated)?\d?d?|thnnconv\d?d?|convolutionbackward|"
    r"cudnnrnn|einsum|scaleddotproduct\w*attention|\w*flashattention|\w*efficientattention|"
    r"scaledmm)backward\d*$"
)
_CUSTOM_CALL = re.compile(r"cublas|cudnn|gemm|conv|__triton_gemm")
#: TorchInductor's template kernels (``torch.compile``): their launches are the trace's ops, named
#: for the kernel, and a GEMM or convolution template names the ATen op it replaced among the
#: fused ones: ``triton_tem_fused_mm_t_7``, ``triton_tem_fused_addmm_gelu_0``,
#: ``triton_tem_fused_gelu_gelu_backward_mm_t_11`` (a real H200 run:
#: sample_traces/h200-torch-compile-tf32). Pointwise and reduction kernels (``triton_poi_``,
#: ``triton_red_``, ``triton_per_``) and attention templates (``flex_attention``) are not.
_INDUCTOR_GEMM = re.compile(
    r"^triton_tem_fused_(?:\w*_)?(?:mm|addmm|bmm|baddbmm|scaled_mm|convolution)(?:_|$)"
)
_PREFIXES = ("aten::", "autograd::engine::evaluate_function: ", "torch::autograd::", "xla::")


def normalise_op_type(op_type: str) -> str:
    """Strip framework decoration so the different spellings of one op meet in one set."""
    s = op_type.strip()
    for p in _PREFIXES:
        if s.startswith(p):
            s = s[len(p) :]
    s = s.rsplit("/", 1)[-1]  # TF full names: scope/.../MatMul
    s = s.lower()
    s = re.sub(r"\.\d+$", "", s)  # XLA instruction names: dot.12, custom-call.3
    # Grappler/oneDNN rewrites on CPU: _MklMatMul, _MklNativeFusedMatMul, _FusedConv2D.
    for p in ("_mklnativefused", "_mklnative", "_mklfused", "_mkl", "_fused", "fused"):
        if s.startswith(p) and s[len(p) :] in TF_ELIGIBLE:
            s = s[len(p) :]
            break
    return re.sub(r"(?<=[a-z])v\d$", "", s)  # BatchMatMulV2, CudnnRNNV3, Conv3DBackpropFilterV2


def is_inductor_gemm(op_type: str | None) -> bool:
    """An op that is TorchInductor's launch of a GEMM or convolution template kernel."""
    return bool(op_type) and bool(_INDUCTOR_GEMM.match(normalise_op_type(op_type or "")))


@cache
def is_eligible_type(op_type: str | None) -> bool:
    """Tensor Core eligible by type alone (no kernel evidence)."""
    if not op_type:
        return False
    s = normalise_op_type(op_type)
    if s in ELIGIBLE or _BACKWARD.match(s) or _INDUCTOR_GEMM.match(s):
        return True
    return s.startswith("custom-call") and bool(_CUSTOM_CALL.search(op_type.lower()))


def _eligible_by_name(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """Per row, via the dictionary: classify each distinct type once."""
    out = []
    for chunk in col.chunks:
        lookup = pa.array([is_eligible_type(v) for v in chunk.dictionary.to_pylist()], pa.bool_())
        out.append(pc.take(lookup, chunk.indices))
    return pa.chunked_array(out, pa.bool_())


def _kernel_evidence(ops: pa.Table, kernels: pa.Table) -> tuple[pa.Array, pa.Array, pa.Array]:
    """Per op row: (any kernel uses TC, every kernel known not to, has kernel rows). Counted per
    op id with integer codes (see :mod:`tcreport.analysis._codes`)."""
    j = _codes.joint(ops.column("op_id"), kernels.column("op_id"))
    if not j.size:
        has = np.zeros(len(j.ops), dtype=bool)
        return pa.array(has), pa.array(has), pa.array(has)
    uses = kernels.column("uses_tc")
    tc = np.asarray(pc.fill_null(uses, False).to_numpy(zero_copy_only=False), dtype=bool)
    no = np.asarray(pc.fill_null(pc.invert(uses), False).to_numpy(zero_copy_only=False), dtype=bool)
    ok = j.other >= 0
    # per op key, whether some linked kernel is: any, a TC one, not known to use none. Flags,
    # not int64 counts: the key space is as large as the ops table (one id per op instance).
    linked, some_tc, some_not_no = (np.zeros(j.size, bool) for _ in range(3))
    linked[j.other[ok]] = True
    some_tc[j.other[ok & tc]] = True
    some_not_no[j.other[ok & ~no]] = True
    at = np.maximum(j.ops, 0)
    has = (j.ops >= 0) & linked[at]
    any_tc = has & some_tc[at]
    all_no = has & ~some_not_no[at]  # every linked kernel known not to use TC
    return pa.array(any_tc), pa.array(all_no), pa.array(has)


def own_verdicts(
    ops: pa.Table, kernels: pa.Table | None, *, judged: bool = False
) -> tuple[pa.ChunkedArray, pa.ChunkedArray]:
    """tcreport's own (eligible, uses TC) per op row, from op types and the op's kernels; the
    profiler's labels only fill what this cannot decide (an op with no kernel rows).

    ``uses``: True if any of the op's kernels used Tensor Cores; False if all of them are known
    not to; otherwise the profiler's own label; otherwise False for an op that launched no GPU
    work (``gpu_ns``/``kernel_calls`` of 0) and null (unknown) for the rest.
    ``judged``: the kernels were already classified (with the run's vendor pack), so all-unknown
    verdicts are an answer, not a table still to classify.
    """
    type_col = ops.column("type")
    by_type = pc.or_(
        pc.fill_null(_eligible_by_name(type_col), False),
        pc.and_(pc.is_null(type_col), _eligible_by_name(ops.column("name"))),
    )
    prof = ops.column("profiler_uses_tc")
    no_gpu = pc.or_kleene(
        pc.equal(ops.column("gpu_ns"), 0), pc.equal(ops.column("kernel_calls"), 0)
    )
    fallback = pc.if_else(
        pc.is_valid(prof),
        prof,
        pc.if_else(pc.fill_null(no_gpu, False), False, pa.scalar(None, pa.bool_())),
    )
    if (
        kernels is not None
        and kernels.num_rows
        and kernels.column("op_id").null_count < kernels.num_rows
    ):
        if not judged and kernels.column("uses_tc").null_count == kernels.num_rows:
            kernels = classify_kernels(kernels)
        any_tc, all_no, has = _kernel_evidence(ops, kernels)
        from_kernels = pc.if_else(
            any_tc, True, pc.if_else(all_no, False, pa.scalar(None, pa.bool_()))
        )
        uses = pc.if_else(pc.and_(has, pc.is_valid(from_kernels)), from_kernels, fallback)
        eligible = pc.or_(by_type, any_tc)
    else:
        uses = fallback
        eligible = by_type
    return _chunked(eligible), _chunked(uses)


def _chunked(values: pa.Array | pa.ChunkedArray) -> pa.ChunkedArray:
    col = values if isinstance(values, pa.ChunkedArray) else pa.chunked_array([values])
    return col.cast(pa.bool_())


def count_once(ops: pa.Table, kernels: pa.Table | None) -> pa.Table:
    """The ops with each kernel's time counted once, at the op it links to.

    Readers give a kernel's time to the op that launched it (the innermost ATen op, DLProf's
    outermost op record), so op times add up to at most the kernel time. An input whose per-op
    GPU times were computed elsewhere can count a kernel twice: an XLA module op (``_XlaRun``,
    ``XlaLaunch``) and the op inside it that the kernel is annotated with, or a wrapper such as
    ``aten::linear`` beside the ``aten::addmm`` inside it. Then every total over ops counts it
    twice, and eligible GPU time outgrows the kernel time. So where op times add up to more than
    the kernel time and kernels link to ops, each op keeps at most the time of the kernels linked
    to it (the leaf that launched them); an op no kernel links to keeps none; rows that share an
    op id share its kernels' time, in row order (a repeated row keeps only what is left). Inputs
    whose op times add up are left exactly as read.
    """
    gpu = ops.column("gpu_ns")
    if (
        kernels is None
        or kernels.num_rows == 0
        or kernels.column("op_id").null_count == kernels.num_rows
        or gpu.null_count == ops.num_rows
    ):
        return ops
    kernel_ns = pc.sum(kernels.column("duration_ns")).as_py() or 0
    if (pc.sum(gpu).as_py() or 0) <= kernel_ns:
        return ops
    j = _codes.joint(ops.column("op_id"), kernels.column("op_id"))
    dur = np.maximum(_int64(kernels.column("duration_ns")), 0)
    ok = j.other >= 0
    linked = exact_sums(j.other[ok], dur[ok], j.size)
    own = np.where(j.ops >= 0, linked[np.maximum(j.ops, 0)], 0)
    kept = pa.array(_shared(j.ops, own, np.maximum(_int64(gpu), 0)))
    once = pc.if_else(pc.is_valid(gpu), kept, pa.scalar(None, pa.int64()))
    i = ops.schema.get_field_index("gpu_ns")
    return ops.set_column(i, ops.schema.field(i), _chunked_int(once))


def _shared(code: np.ndarray, own: np.ndarray, gpu: np.ndarray) -> np.ndarray:
    """Per op row, at most its op id's kernel time ``own`` less what earlier rows with the same id
    kept (each row's own time ``gpu`` at most): one op id's kernels counted once over its rows."""
    order = np.lexsort((np.arange(code.size), code))  # by op id, rows in order within one
    c, g = code[order], gpu[order]
    before = np.cumsum(g) - g  # the time of every earlier row in this order
    first = np.r_[True, c[1:] != c[:-1]] if c.size else np.zeros(0, bool)
    earlier = before - np.maximum.accumulate(np.where(first, before, 0))  # ... of this op id
    kept = np.empty_like(g)
    kept[order] = np.clip(own[order] - earlier, 0, g)
    return kept


def _int64(col: pa.ChunkedArray) -> np.ndarray:
    return np.asarray(pc.fill_null(col, 0).to_numpy(), np.int64)


def _chunked_int(values: pa.Array | pa.ChunkedArray) -> pa.ChunkedArray:
    return values if isinstance(values, pa.ChunkedArray) else pa.chunked_array([values])


def classify_ops(ops: pa.Table, kernels: pa.Table | None, *, judged: bool = False) -> pa.Table:
    """The canonical ops table with ``tc_eligible`` and ``uses_tc`` filled, each kernel's time
    counted once (:func:`count_once`).

    Where the profiler states them (DLProf's ``TC Eligible`` / ``Using TC``, any version) its
    labels are the verdict: it saw the op run, where tcreport only knows op types it has a rule
    for (TF1+XLA's ``_XlaRun`` or ``PartitionedCall`` are eligible to DLProf and unknown here).
    tcreport's own verdict (:func:`own_verdicts`) fills the rest and is compared with the
    profiler's in :func:`eligibility_agreement` / :func:`op_tc_agreement`. An op that used
    Tensor Cores is eligible, whoever said so. ``profiler_*`` columns stay as written.
    """
    schema.validate(ops, schema.TableKind.OPS)
    ops = count_once(ops, kernels)
    own_elig, own_uses = own_verdicts(ops, kernels, judged=judged)
    uses = pc.coalesce(ops.column("profiler_uses_tc"), own_uses)
    eligible = pc.or_(
        pc.fill_null(pc.coalesce(ops.column("profiler_tc_eligible"), own_elig), False),
        pc.fill_null(uses, False),
    )
    out = ops
    for name, values in (("tc_eligible", eligible), ("uses_tc", uses)):
        i = out.schema.get_field_index(name)
        out = out.set_column(i, out.schema.field(i), _chunked(values))
    schema.validate(out, schema.TableKind.OPS)
    return out


def _key(t: pa.Table) -> pa.ChunkedArray:
    return pa.chunked_array(
        [pc.coalesce(t.column("type").cast(pa.string()), t.column("name").cast(pa.string()))]
    )


def _own(ops: pa.Table, kernels: pa.Table | None) -> pa.Table:
    """The ops with tcreport's own verdicts in ``tc_eligible``/``uses_tc`` (not the profiler's)."""
    elig, uses = own_verdicts(ops, kernels)
    t = ops.set_column(ops.schema.get_field_index("tc_eligible"), "tc_eligible", elig)
    t = t.set_column(t.schema.get_field_index("uses_tc"), "uses_tc", uses)
    return t.append_column("key", _key(t))


def eligibility_agreement(ops: pa.Table, kernels: pa.Table | None = None) -> Agreement:
    """tcreport's own eligibility against the profiler's (DLProf ``TC Eligible``), where both
    exist; disagreements by op type."""
    return compare_labels(_own(ops, kernels), "tc_eligible", "profiler_tc_eligible", "key")


def op_tc_agreement(ops: pa.Table, kernels: pa.Table | None = None) -> Agreement:
    """tcreport's own op-level TC use against the profiler's (DLProf ``Using TC``). Without
    kernel rows the own verdict falls back on the label, so agreement there is by construction."""
    return compare_labels(_own(ops, kernels), "uses_tc", "profiler_uses_tc", "key")
