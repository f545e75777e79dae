"""The signals section: what ran inside the aggregated range that distorts it (cuDNN autotuning,
XLA / torch.compile compilation, data loading). Only the finding rules read it: they turn these
into "leave the warm-up out" and "feed the GPU faster" advice."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from tcreport.analysis import autotune, compilation, timeline
from tcreport.model import Run


@dataclass(frozen=True)
class Signals:
    autotuned_ops: tuple[str, ...]  # op names whose kernels span several cuDNN algorithms
    data_loader_names: tuple[str, ...]  # host ranges/ops that name a data loader
    data_loader_ns: int | None  # the time they cover (interval union), when timed
    compile_names: tuple[str, ...]  # compilation ranges/ops inside the aggregated range
    compile_ns: int | None


def build(run: Run, ranges: pa.Table | None) -> Signals:
    """``ranges``: the run's host ranges inside the aggregated iterations (ranges carry no
    iteration column of their own)."""
    markers = timeline.host_markers(ranges, run.ops)
    compiling = compilation.compilation(ranges, run.ops)
    return Signals(
        autotuned_ops=autotune.autotuned_ops(run.kernels, run.ops),
        data_loader_names=markers.data_loader_names,
        data_loader_ns=markers.data_loader_ns,
        compile_names=compiling.names,
        compile_ns=compiling.ns,
    )
