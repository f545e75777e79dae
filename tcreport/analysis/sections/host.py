"""The host section: a run without GPU kernels (a laptop capture) has no matrix-unit verdict, but
its host time per op and op type still says where the step went
(:mod:`tcreport.analysis.host_time`).

It also owns what every output says in place of the GPU figures such a run cannot have: the one
word for them (``UNKNOWN``: unknown without a GPU, never ``0 ns``, ``n/a`` or "0 not on Tensor
Cores"), the device line of the run's header, how many host rows a page shows before "show all",
and the one line on what a GPU run would add. Renderers format these; none decides them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from tcreport.analysis import host_time
from tcreport.analysis.figures import OpRow, TimeFigures
from tcreport.analysis.host_time import HostRow, HostTime
from tcreport.model import Run

_T = TypeVar("_T", bound=TimeFigures)

#: Host rows shown before the rest (a terminal, a PR comment, the page before "show all"): a
#: laptop capture of a real model has hundreds of ops, and the first screen is for the findings.
TOP = 10
#: What a GPU figure of a CPU-only run is, in every output.
UNKNOWN = "unknown without a GPU"
#: The device a CPU-only run's header names, where a GPU run names its GPU model.
DEVICE = "CPU-only (no GPU)"


@dataclass(frozen=True)
class Host:
    cpu_only: bool  # no GPU kernel time anywhere, but ops with host time
    ops: tuple[HostRow, ...]  # () unless cpu_only
    op_types: tuple[HostRow, ...]
    total: HostTime | None  # host time in ops, nested ops counted once
    #: the one line on what a GPU run of the same script would add (``None`` unless cpu_only)
    gpu_run_adds: str | None = None
    top: int = TOP  # rows of each host table shown before "show all"

    @property
    def device(self) -> str | None:
        """The header's device words for a CPU-only run; ``None``: name the run's GPUs."""
        return DEVICE if self.cpu_only else None

    @property
    def unknown(self) -> str:
        return UNKNOWN

    @property
    def no_findings(self) -> str:
        """What a CPU-only run without findings says: not "nothing to change", since the rules
        that judge GPU work could not run."""
        return (
            "No findings from what a CPU-only run can judge (the model audit, the ops' data "
            "types); the findings on GPU work need a GPU run."
        )

    @property
    def findings_order(self) -> str:
        """How the findings are ranked (:func:`tcreport.rules.evaluate`): high and medium
        severity first, each group by measured saving, except on a CPU-only run, which measures
        none and puts the model's own findings first."""
        if self.cpu_only:
            return "the model audit and data types first"
        return "high and medium first, each ranked by estimated saving"

    @property
    def more_ops(self) -> int:
        """Host op rows beyond the first :attr:`top` (behind "show all", or counted)."""
        return max(0, len(self.ops) - self.top)

    @property
    def more_op_types(self) -> int:
        return max(0, len(self.op_types) - self.top)

    def op_uses_tc(self, op: OpRow) -> bool | None:
        """An op's matrix-unit use as the outputs state it: unknown (``None``) on a CPU-only
        run, where no kernel ran to say yes or no, and for an op none of whose calls has a known
        verdict (all its kernels unknown: a torch.compile template in float32), which is not a
        miss but unjudged."""
        if self.cpu_only or (not op.uses_tc and not op.tc_known):
            return None
        return op.uses_tc


def _gpu_run_adds(unit: str) -> str:
    return (
        "A GPU run of the same script would add what this one cannot measure: whether its GEMMs "
        f"and convolutions run on {unit}, GPU kernel and memory-copy time per op, kernel and "
        "step, GPU idle, and savings in time for each finding."
    )


def without_gpu_figures(ops: Sequence[OpRow]) -> list[OpRow]:
    """A CPU-only run's op rows with their GPU figures unknown (``None``), not 0: a PyTorch
    trace made without a GPU records each op's GPU time as 0, which every section would read as
    a measured "no GPU work" and an eligible op as a wrapper with nothing of its own."""
    return [
        replace(o, gpu_ns=None, missed_gpu_ns=None, tc_gpu_ns=None, tc_known=False) for o in ops
    ]


def time_without_gpu(time: _T) -> _T:
    """A CPU-only run's times with the GPU's unknown (``None``) rather than 0 (a trace made
    without a GPU has no kernel to sum); the wall time stays, it is the host's."""
    return replace(
        time,
        gpu_kernel_ns=None,
        tc_kernel_ns=None,
        memory_ns=None,
        kernel_launches=None,
        unique_kernels=None,
        unknown_kernel_ns=None,
    )


def build(run: Run, time: TimeFigures, ops: Sequence[OpRow], unit: str) -> Host:
    """``unit``: the matrix units' name for the run's vendor ("Tensor Cores")."""
    if not host_time.is_cpu_only(run.meta, time, ops):
        return Host(False, (), (), None)
    total = host_time.host_time(run.ops, ops)
    own = host_time.self_ns(run.ops) if total is not None and run.ops is not None else None
    by_op, by_type = host_time.host_rows(ops, own)
    return Host(True, by_op, by_type, total, gpu_run_adds=_gpu_run_adds(unit))
