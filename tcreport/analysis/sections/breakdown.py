"""The breakdown section: where the GPU time goes, by op, op type, layer, kernel and GPU.

Rows are aggregates (one per op name, kernel name, op type, scope, GPU), small whatever the size
of the trace; every share is of the run's GPU kernel time, and an op's time splits exactly into
its matrix-unit, missed and other parts (:class:`~tcreport.analysis.figures.OpRow`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tcreport.analysis import figures
from tcreport.analysis.devices import DeviceRow, device_rows
from tcreport.analysis.figures import KernelRow, OpRow, TimeFigures
from tcreport.analysis.groups import OpGroup, op_type_rows, scope_rows
from tcreport.model import Run


@dataclass(frozen=True)
class Breakdown:
    ops: tuple[OpRow, ...]  # by GPU time, descending
    op_types: tuple[OpGroup, ...]
    #: time by layer/module, only where scopes cover most of the op time (else empty)
    scopes: tuple[OpGroup, ...]
    kernels: tuple[KernelRow, ...]
    devices: tuple[DeviceRow, ...]  # per GPU; empty without kernel rows
    has_kernels: bool  # the input has kernel rows (an empty table counts)
    has_ops: bool
    #: whether any op row records its input shapes: an export without them says so instead of
    #: showing an empty column
    ops_have_shapes: bool
    #: kernel time no op claims (launched outside every op range); ``None`` without op rows or
    #: kernel time. The ops' own kernel time plus this is the GPU kernel time.
    unattributed_kernel_ns: int | None


def build(run: Run, time: TimeFigures, ops: Sequence[OpRow]) -> Breakdown:
    """The rows of ``run`` (classified, sliced); ``ops`` are its op rows
    (:func:`figures.op_rows`), computed once for every section that reads them."""
    total = time.gpu_kernel_ns
    listed = list(ops)
    return Breakdown(
        ops=tuple(ops),
        op_types=tuple(op_type_rows(listed, total)),
        scopes=tuple(scope_rows(listed, total)),
        kernels=tuple(figures.kernel_rows(run, total)),
        devices=tuple(device_rows(run)),
        has_kernels=run.kernels is not None,
        has_ops=run.ops is not None,
        ops_have_shapes=any(o.input_shapes for o in ops),
        unattributed_kernel_ns=(
            max(0, total - sum(o.gpu_ns or 0 for o in ops))
            if run.ops is not None and total is not None
            else None
        ),
    )
