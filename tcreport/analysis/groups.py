"""Ops summed per key (op type, layer/scope, data type): one grouping for every "time by ..."
table and chart, so the op-type table and the kernels section cannot disagree on TC time."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tcreport.analysis.figures import OpRow, _share


@dataclass(frozen=True)
class OpGroup:
    """Ops summed per key (op type, scope or dtype): the one grouping every table and chart
    of "time by type / layer / precision" reads."""

    name: str
    ops: int
    calls: int
    gpu_ns: int
    share: float | None
    tc_ns: int  # OpRow.tc_ns summed
    miss_ns: int  # OpRow.missed_ns summed

    @property
    def type(self) -> str:
        return self.name


OpTypeRow = OpGroup  # the op-type table is the grouping by type


def group_ops(
    ops: Sequence[OpRow], key: Callable[[OpRow], str | None], total: int | None
) -> list[OpGroup]:
    """Ops summed per key, by GPU time descending, then name; a missing key is "(unknown)"."""
    acc: dict[str, list[int]] = {}
    for o in ops:  # one per distinct op name: small
        a = acc.setdefault(key(o) or "(unknown)", [0, 0, 0, 0, 0])
        a[0] += 1
        a[1] += o.calls or 0
        a[2] += o.gpu_ns or 0
        a[3] += o.tc_ns
        a[4] += o.missed_ns
    rows = [OpGroup(k, v[0], v[1], v[2], _share(v[2], total), v[3], v[4]) for k, v in acc.items()]
    return sorted(rows, key=lambda g: (-g.gpu_ns, g.name))


def scope_rows(ops: list[OpRow], gpu_kernel_ns: int | None) -> list[OpGroup]:
    """Time per layer/module (the op's scope), only where scopes cover most of the op time: a
    table that is 99 % "(unknown)" would say nothing (the 2xH100 export scopes 1,650 of 5,267
    ops, but those hold little of the GPU time)."""
    total = gpu_kernel_ns or sum(o.gpu_ns or 0 for o in ops)
    rows = group_ops(ops, lambda o: o.scope, total)
    known = sum(g.gpu_ns for g in rows if g.name != "(unknown)")
    if len(rows) < 2 or known * 2 < sum(g.gpu_ns for g in rows):
        return []
    return rows


def op_type_rows(ops: list[OpRow], gpu_kernel_ns: int | None) -> list[OpGroup]:
    """Time by op type; shares of kernel time, or of the ops' own time without kernel rows."""
    total = gpu_kernel_ns or sum(o.gpu_ns or 0 for o in ops)
    return group_ops(ops, lambda o: o.type, total)
