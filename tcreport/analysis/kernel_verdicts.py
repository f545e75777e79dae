"""Each kernel's Tensor Core verdict from the trace: the one pipeline the analysis and the counter
comparison share.

Names first (:mod:`.tc_kernels`), then what the trace says beyond names (:mod:`.triton_ops`: a
Triton kernel's op, an XLA fusion's HLO precision, torch.compile's TF32 switch from the capture's
audit), then the device (:mod:`.no_matrix_units`). With ``counters``, Nsight Compute's measured
verdicts decide over all of it; without, this is "what the trace alone says", which
:func:`tcreport.analysis.counters.disagreements` holds the counters against.
"""

from __future__ import annotations

import pyarrow as pa

from tcreport.analysis import no_matrix_units, tc_kernels, triton_ops
from tcreport.model import AuditKey, Run


def matmul_tf32(run: Run) -> bool | None:
    """PyTorch's matmul TF32 switch as ``tcreport profile``'s audit last recorded it."""
    audit = run.meta.audit
    setting = audit.setting(AuditKey.TORCH_MATMUL_TF32) if audit is not None else None
    return None if setting is None else setting.value == "True"


def classify(
    kernels: pa.Table, run: Run, pack: tc_kernels.RulePack | None = None, *, counters: bool = True
) -> pa.Table:
    """``kernels`` (with readable names) with ``uses_tc`` and ``tc_rule`` decided."""
    out = tc_kernels.classify_kernels(kernels, pack, counters=counters)
    out = triton_ops.refine(out, run.ops, run.meta.gpus, matmul_tf32(run))
    # a GPU without matrix units: no kernel used them, named or not (TC005's device)
    return no_matrix_units.apply(out, run.meta.gpus)
