"""Kernels of a run whose GPUs have no matrix units at all: every verdict is "no".

A GeForce GTX 1060 (Pascal) or a GTX 1660 (Turing TU116) has no Tensor Cores, so no kernel it ran
can have used them, whatever its name says or fails to say. Leaving a user kernel (``test2``) at
"unknown" there made the report send the user to Nsight Compute's tensor-pipe counters (TC002) to
measure what the device table already answers, next to TC005 saying the GPU has none. The device
table decides (:func:`tcreport.analysis.gpu_arch.has_matrix_units`): only when every GPU of the run
is identified and none has matrix units; an unidentified device keeps its unknowns, and AMD's
Instinct GPUs (Matrix Cores) are not touched.

Measured tensor-pipe counters (``tc_rule = "ncu-counter"``) still decide where they exist; a name
rule's "no" keeps its own rule id (it says more: "elementwise", "sgemm"); every other kernel
becomes "no" with ``tc_rule = "no-matrix-units"``, the reason the kernel table shows.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from tcreport.analysis import device_table, gpu_arch, tc_kernels
from tcreport.model import Gpu


def apply(kernels: pa.Table, gpus: tuple[Gpu, ...]) -> pa.Table:
    """``kernels`` with every verdict "no" on the GPUs that have no matrix units: all of them when
    no GPU of the run has any, else those that ran on such a GPU (a GTX 1060 beside an idle RTX
    2080); unchanged where no GPU is known to lack them (an unidentified GPU included)."""
    if kernels.num_rows == 0:
        return kernels
    if gpu_arch.has_matrix_units(gpus) is False:
        on_such = pa.scalar(True)
    else:
        lacking = [g.device_id for g in gpus if device_table.describe(g).has_matrix_units is False]
        if not lacking:
            return kernels
        on_such = pc.fill_null(
            pc.is_in(
                kernels.column("device_id"),
                value_set=pa.array(lacking, kernels.column("device_id").type),
            ),
            False,
        )
    rule = kernels.column("tc_rule").cast(pa.string())
    measured = pc.fill_null(pc.equal(rule, tc_kernels.COUNTER_RULE), False)
    already_no = pc.fill_null(pc.invert(kernels.column("uses_tc")), False)
    decide = pc.and_(on_such, pc.invert(pc.or_(measured, already_no)))
    uses = pc.if_else(decide, False, kernels.column("uses_tc"))
    names = pc.if_else(decide, tc_kernels.NO_MATRIX_UNITS_RULE, rule)
    i_uses = kernels.schema.get_field_index("uses_tc")
    i_rule = kernels.schema.get_field_index("tc_rule")
    out = kernels.set_column(i_uses, kernels.schema.field(i_uses), uses)
    return out.set_column(i_rule, kernels.schema.field(i_rule), pc.dictionary_encode(names))
