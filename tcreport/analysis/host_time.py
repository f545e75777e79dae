"""Where the time went on a CPU-only run: host time by op and by op type, as real figures.

A laptop run of a TF or PyTorch script has no GPU kernels, so every GPU column of the report is
``n/a`` and no Tensor Core verdict exists. It still says where the step's time goes, in host
(CPU) time per op; these rows are that view, computed once from the op rows so every renderer
shows the same numbers. :func:`is_cpu_only` is the one definition of "CPU-only run".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tcreport.analysis.figures import OpRow, TimeFigures
from tcreport.model import RunMeta


@dataclass(frozen=True)
class HostRow:
    """One op (``name``) or op type (``name`` is the type; ``ops`` counts its ops)."""

    name: str
    type: str | None
    ops: int
    calls: int
    cpu_ns: int
    share: float | None  # of all ops' host time


def is_cpu_only(meta: RunMeta, time: TimeFigures, ops: Sequence[OpRow]) -> bool:
    """No GPU kernel time anywhere (rows or the profiler's figures), no op GPU time, but ops
    with host time: a capture without a GPU, not an input that lacks kernel rows."""
    if time.gpu_kernel_ns or meta.reported.gpu_kernel_ns or meta.reported.all_kernel_ns:
        return False
    if any(o.gpu_ns for o in ops):
        return False
    return any(o.cpu_ns for o in ops)


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole > 0 else None


def host_rows(ops: Sequence[OpRow]) -> tuple[tuple[HostRow, ...], tuple[HostRow, ...]]:
    """(ops by host time, op types by host time), largest first. Ops are already grouped (one
    row per name), so this is a small loop over distinct ops, not over instances."""
    total = sum(o.cpu_ns or 0 for o in ops)
    by_op = sorted(
        (
            HostRow(o.name, o.type, 1, o.calls or 0, o.cpu_ns or 0, _share(o.cpu_ns or 0, total))
            for o in ops
            if o.cpu_ns
        ),
        key=lambda r: (-r.cpu_ns, r.name),
    )
    acc: dict[str, list[int]] = {}
    for o in ops:
        a = acc.setdefault(o.type or "(unknown)", [0, 0, 0])
        a[0] += 1
        a[1] += o.calls or 0
        a[2] += o.cpu_ns or 0
    by_type = sorted(
        (HostRow(t, t, v[0], v[1], v[2], _share(v[2], total)) for t, v in acc.items() if v[2]),
        key=lambda r: (-r.cpu_ns, r.name),
    )
    return tuple(by_op), tuple(by_type)
