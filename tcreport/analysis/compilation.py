"""Compilation inside the measured range: XLA clusters and torch.compile (Dynamo/Inductor).

A first step that compiles takes seconds where the others take milliseconds, and every share of
the report then describes the compiler, not the model. The frameworks mark it: TensorFlow's
``_XlaCompile`` op (and ``XlaCompile`` ranges), torch.compile's ``dynamo_timed`` record_function
ranges (``compile_inner``, ``OutputGraph.call_user_compiler``, ``compile_fx``...) and the
``TorchDynamo`` ranges around a frame's first call. ``TorchDynamo Cache Lookup`` and
``Torch-Compiled Region`` run on every step once compiled, so they are not compilation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tcreport.analysis import _codes
from tcreport.analysis.timeline import _union

COMPILE = re.compile(
    r"_?XlaCompile|compile_inner|entire_frame_compile|backend_compile|inductor_compile|"
    r"call_user_compiler|compile_fx|fw_compiler|bw_compiler|aot_autograd|"
    r"TorchDynamo(?! Cache Lookup)|Dynamo (?:compile|tracing)|CompileToHlo|BuildXlaComputation",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Compilation:
    names: tuple[str, ...]  # distinct range/op names that mark compilation
    ns: int | None  # host time they cover together (interval union), when timed


def _intervals(table: pa.Table, end_col: str | None) -> tuple[list[str], np.ndarray, np.ndarray]:
    mask = pc.fill_null(  # Python regex (a lookahead), once per distinct name
        _codes.per_value(
            table.column("name"),
            lambda d: pa.array([bool(v and COMPILE.search(v)) for v in d.to_pylist()], pa.bool_()),
        ),
        False,
    )
    hit = table.filter(mask)
    names = [str(n) for n in _codes.as_strings(hit.column("name"))]
    hit = hit.filter(pc.is_valid(hit.column("start_ns")))
    st = np.asarray(hit.column("start_ns").to_numpy(zero_copy_only=False), np.int64)
    if end_col == "end_ns":
        en = np.asarray(pc.fill_null(hit.column("end_ns"), 0).to_numpy(), np.int64)
    else:
        en = st + np.asarray(pc.fill_null(hit.column("cpu_ns"), 0).to_numpy(), np.int64)
    return names, st, en


def compilation(ranges: pa.Table | None, ops: pa.Table | None) -> Compilation:
    """Compilation ranges and ops in the given (already sliced) tables, and the time they cover."""
    names: set[str] = set()
    starts, ends = [np.empty(0, np.int64)], [np.empty(0, np.int64)]
    for table, end_col in ((ranges, "end_ns"), (ops, "cpu_ns")):
        if table is not None and table.num_rows:
            n, s, e = _intervals(table, end_col)
            names.update(n)
            starts.append(s)
            ends.append(e)
    s, e = np.concatenate(starts), np.concatenate(ends)
    covered = _union(s, e)[0] if s.size else None
    return Compilation(tuple(sorted(names)), covered if names else None)
