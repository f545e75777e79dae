"""The sections of an analysed run, one module each: the module that builds a section owns its
figures, their one name, their good/bad thresholds, its words and its one-line verdict.

========================  ==========================================================================
``verdict``               matrix-unit share, eligibility, why-not, the vendor's words
``time``                  wall / kernel / matrix-unit / memory time, GPU busy share
``breakdown``             time by op, op type, scope, kernel and GPU
``iterations``            how the run was split, per-iteration rows, outliers
``steps``                 per (iteration, GPU) step breakdown, the one-iteration timeline
``communication``         collective kernel time and its overlap with compute
``host``                  a CPU-only run's host time by op and op type
``precision``             op time per data type, the precision mode
``signals``               autotuning, compilation, data loading inside the range (the rules' input)
========================  ==========================================================================

Throughput (FLOPs, MFU) is :class:`tcreport.analysis.throughput.Throughput`, built by its own
module. :func:`tcreport.analysis.result.compute` builds them all; renderers format them and decide
nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from tcreport import fmt
from tcreport.analysis import gpu_arch
from tcreport.analysis.gpu_arch import GpuIdentity
from tcreport.analysis.sections.breakdown import Breakdown
from tcreport.analysis.sections.communication import Communication
from tcreport.analysis.sections.host import Host
from tcreport.analysis.sections.iterations import Iterations
from tcreport.analysis.sections.precision import Precision
from tcreport.analysis.sections.signals import Signals
from tcreport.analysis.sections.steps import Steps
from tcreport.analysis.sections.time import Time
from tcreport.analysis.sections.verdict import Verdict
from tcreport.analysis.throughput import Throughput
from tcreport.analysis.violation import Violation
from tcreport.model import RunMeta


@dataclass(frozen=True)
class Analysis:
    """The analysed run: its metadata and one object per section of the report."""

    meta: RunMeta
    verdict: Verdict  # the matrix-unit share, eligibility, the vendor's words
    time: Time  # the aggregated range's times and GPU busy share
    breakdown: Breakdown  # by op, op type, scope, kernel, GPU
    iterations: Iterations  # how the run was split, per-iteration rows
    steps: Steps  # per (iteration, GPU) step breakdown and the timeline
    communication: Communication
    throughput: Throughput | None  # FLOPs, TFLOP/s, MFU; None without op rows
    host: Host  # a CPU-only run's host time
    precision: Precision
    signals: Signals  # autotuning, compilation, data loading inside the range (the rules')
    #: figures that break what must always hold (analysis.invariants); every output names them
    violations: tuple[Violation, ...] = ()

    @cached_property
    def gpu(self) -> GpuIdentity:
        """The GPU as every output names it: recorded, else inferred from kernel names."""
        return gpu_arch.identity(
            self.meta.gpus, (k.name for k in self.breakdown.kernels), self.host.cpu_only
        )

    def gpu_names(self, per_device: bool = False) -> str:
        """The run's GPUs as every output's heading names them: the host's device on a CPU-only
        run, the recorded models, else the generation of their recorded compute capability, else
        the one the kernel names give, as the diff does (:attr:`gpu`)."""
        return self.host.device or fmt.gpus(
            self.meta.gpus,
            per_device=per_device,
            unnamed=self.gpu.unnamed_device if per_device else self.gpu.inferred,
        )
