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


def split_note(kernels: Sequence[KernelRow], unit: str, unit_one: str) -> str | None:
    """The remark that explains a kernel name listed twice: its launches got different verdicts
    (Nsight Compute counters decide launch by launch), so it has a row per verdict. ``unit`` and
    ``unit_one`` are the matrix units' words ("Tensor Cores", "Tensor Core")."""
    split: dict[str, tuple[int, int]] = {}  # name -> (launches on the matrix units, launches)
    for k in kernels:  # one per kernel name and verdict: small
        if k.split:
            on, n = split.get(k.name, (0, 0))
            split[k.name] = (on + (k.calls if k.uses_tc else 0), n + k.calls)
    if not split:
        return None
    shown = [
        f"{name} ({on} of {n} launches on {unit})" for name, (on, n) in list(split.items())[:3]
    ]
    more = f" and {len(split) - 3} more" if len(split) > 3 else ""
    return (
        f"Kernels whose launches got different {unit_one} verdicts have a row per verdict: "
        + "; ".join(shown)
        + more
    )
