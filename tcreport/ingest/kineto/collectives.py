"""The canonical ``collectives`` table of a Kineto trace: the NCCL kernels that recorded their
message (``Collective name``, ``In msg nelems``, ``Out msg nelems``, ``dtype``, ``Group size``,
``Process Group Name`` in the kernel's args, as PyTorch writes them), one row per launch."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tcreport.schema import TableKind, conform


def collective_table(frame: pa.Table, kernels: pa.Table) -> pa.Table | None:
    """The launches of ``kernels`` (rows in ``frame``'s order, the parsed kernel events) whose
    args named a collective, with its message; None when none did."""
    if "coll_name" not in frame.column_names:
        return None
    has = pc.is_valid(frame["coll_name"])
    if not pc.any(has).as_py():
        return None
    k = kernels.filter(has)
    f = frame.filter(has)
    cols: dict[str, Any] = {
        c: k[c]
        for c in (
            "device_id", "process_id", "stream_id", "correlation_id", "start_ns", "duration_ns",
            "iteration",
        )
    }  # fmt: skip
    cols |= {
        "collective": f["coll_name"],
        "dtype": f["coll_dtype"],
        "in_nelems": f["in_nelems"],
        "out_nelems": f["out_nelems"],
        "group_size": f["group_size"],
        "process_group": f["pg_name"],
    }
    return conform(cols, TableKind.COLLECTIVES)
