"""GPU performance counters that decide Tensor Core use, shared by the readers that carry them.

Nsight Compute (``ncu --csv``) and the CUPTI range profiler that PyTorch's profiler drives
(``cuda_profiler_range`` events in a Kineto trace) read the same PerfWorks metrics, so one
definition of "a tensor-pipe counter" and of the verdict it gives serves both.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

#: Kernel duration as both profilers measure it (ns), replayed under the profiler.
DURATION = "gpu__time_duration.sum"
#: Counters of the tensor pipe, any generation: the pipe itself (``sm__inst_executed_pipe_tensor``,
#: ``sm__pipe_tensor_cycles_active``, ``..._op_hmma|imma|dmma|gmma``), math ops on the tensor path
#: (``sm__ops_path_tensor_src_*``) and SASS MMA instructions (``..._op_hmma_pred_on``). Matched
#: against the metric name without its ``.sum``/``.avg`` rollup.
TENSOR_METRIC = re.compile(r"pipe_tensor|ops_path_tensor|_op_[a-z]{0,3}mma(?:_|$)")


def is_tensor_metric(name: str) -> bool:
    return bool(TENSOR_METRIC.search(name.split(".")[0]))


def tensor_verdict(values: Iterable[float | None]) -> bool | None:
    """True when any tensor-pipe counter is above 0, False when all collected ones are 0, None
    when none was collected (or none is a finite number)."""
    seen = [v for v in values if v is not None and math.isfinite(v)]
    if not seen:
        return None
    return any(v > 0 for v in seen)
