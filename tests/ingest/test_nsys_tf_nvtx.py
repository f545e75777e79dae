"""TensorFlow NVTX ranges end to end through the Nsight Systems reader.

No real export of a TensorFlow run with ``TF_ENABLE_NVTX_RANGES=1`` is available, so these tests
take the real 2 x H100 export, replace its NVTX ranges with synthetic ones in the form NVIDIA's
TensorFlow builds write (a ``tensorflow-core`` domain, ``Type: node`` push/pop ranges on the
launching thread), and check what the reader makes of them: the kernels, correlation ids and
launch calls underneath are the real file's.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pyarrow.compute as pc
import pytest

from tcreport.ingest.nsys import reader as nsys_sqlite

pytestmark = pytest.mark.realtraces

TF_DOMAIN = 7


def _launches(con: sqlite3.Connection, n: int) -> list[tuple[int, int, int]]:
    """(start, end, globalTid) of the first ``n`` runtime calls that launched a kernel."""
    return list(
        con.execute(
            "SELECT r.start, r.end, r.globalTid FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId "
            "AND (r.globalTid >> 24) = (k.globalPid >> 24) ORDER BY r.start LIMIT ?",
            (n,),
        )
    )


@pytest.fixture
def synthetic_tf_export(nsys_h100: Path, tmp_path: Path) -> Path:
    path = tmp_path / "synthetic_tf_ranges.sqlite"
    shutil.copyfile(nsys_h100, path)
    con = sqlite3.connect(path)
    launches = _launches(con, 3)
    tid = launches[0][2]
    assert all(t == tid for _, _, t in launches)  # one thread: the ranges nest around them
    first, last = launches[0][0], launches[-1][1]
    rows = [
        # nvtxDomainCreate names the domain; ranges in it carry its id
        (first - 100, None, 75, "tensorflow-core", tid, TF_DOMAIN),
        # a user's range in the default domain with the same "Type: node" look
        (first - 90, last + 90, 59, "Epoch: 3", tid, 0),
        # an XLA launch op around its thunks: scope, not an op
        (first - 50, last + 50, 59, "_XlaRun: cluster_0_1/xla_run", tid, TF_DOMAIN),
        (launches[0][0] - 5, launches[0][1] + 5, 59, "_FusedMatMul: dense/BiasAdd", tid, 7),
        (launches[1][0] - 5, launches[1][1] + 5, 59, "MatMul: dense_1/MatMul", tid, TF_DOMAIN),
        (
            launches[2][0] - 5,
            launches[2][1] + 5,
            59,
            '{"op":"Conv2D","name":"conv/Conv2D","args":[{"name":"x","shape":[?,28,28,3]},'
            '{"name":"w","shape":[3,3,3,30]}],"attrs":{"T":"half","padding":"SAME"}}',
            tid,
            TF_DOMAIN,
        ),
    ]
    con.execute("DELETE FROM NVTX_EVENTS")
    con.executemany(
        "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        rows,
    )
    con.commit()
    con.close()
    return path


def test_synthetic_tf_ranges_become_ops_in_their_domain_only(synthetic_tf_export: Path) -> None:
    run = nsys_sqlite.read(synthetic_tf_export)
    assert run.ops is not None and run.ranges is not None
    ops = run.ops.sort_by("start_ns").to_pylist()
    assert [o["type"] for o in ops] == ["_FusedMatMul", "MatMul", "Conv2D"]
    # the user range and the container, outermost first, then the node's own path: one row per
    # TensorFlow node, named as DLProf named TF ops
    outer = "Epoch: 3/_XlaRun: cluster_0_1/xla_run"
    assert [(o["name"], o["scope"]) for o in ops] == [
        (f"{outer}/dense/BiasAdd", f"{outer}/dense"),
        (f"{outer}/dense_1/MatMul", f"{outer}/dense_1"),
        (f"{outer}/conv/Conv2D", f"{outer}/conv"),
    ]
    assert ops[2]["dtype"] == "float16"
    assert ops[2]["input_shapes"] == "[[?, 28, 28, 3], [3, 3, 3, 30]]"
    assert all(o["kernel_calls"] == 1 and o["gpu_ns"] > 0 for o in ops)
    names = set(run.ranges.column("name").to_pylist())
    assert {"Epoch: 3", "_XlaRun: cluster_0_1/xla_run"} <= names
    # every kernel of the three launches is attributed, nothing else is
    assert run.kernels is not None
    assert pc.count(run.kernels.column("op_id")).as_py() == 3


def test_synthetic_type_node_text_outside_a_tf_domain_is_a_range(
    synthetic_tf_export: Path,
) -> None:
    """The same ranges with no tensorflow domain: "Type: node" texts are plain ranges there."""
    con = sqlite3.connect(synthetic_tf_export)
    con.execute("UPDATE NVTX_EVENTS SET text = 'my-domain' WHERE eventType = 75")
    con.commit()
    con.close()
    run = nsys_sqlite.read(synthetic_tf_export)
    assert run.ops is not None
    # only the detailed record, which cannot be a user's text, is still an op
    assert run.ops.column("type").to_pylist() == ["Conv2D"]
