"""Nsight Systems schema variants no real export in ../shared shows, made from real exports.

Each test copies a real export and reshapes the part that differs, as NVIDIA's documentation and
report scripts describe it (synthetic, hence the names): the 2021.1-2021.3.0 GPU table
(``TARGET_INFO_CUDA_GPU``), 2023+ ``TARGET_INFO_CUDA_DEVICE`` mapping each process's CUDA ordinal
to a GPU (``CUDA_VISIBLE_DEVICES`` set per rank), and empty strings written instead of NULLs.
Everything else, kernels and launches included, is the real file's.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pyarrow.compute as pc
import pytest

from tcreport import api
from tcreport.ingest.nsys import reader as nsys_sqlite

pytestmark = pytest.mark.realtraces


def _copy(src: Path, tmp_path: Path, name: str) -> Path:
    dst = tmp_path / name
    shutil.copyfile(src, dst)
    return dst


def _per_device(path: Path) -> dict[int | None, tuple[int, int]]:
    a = api.analyze(api.load(path))
    return {d.device_id: (d.launches, d.gpu_kernel_ns) for d in a.analysis.breakdown.devices}


def test_synthetic_2021_gpu_table_is_read(dlprof_cnn: Path, tmp_path: Path) -> None:
    path = _copy(dlprof_cnn / "nsys_profile.sqlite", tmp_path, "synthetic_2021_gpu.sqlite")
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE TARGET_INFO_CUDA_GPU AS
            SELECT id AS deviceId, name, computeMajor AS computeCapabilityMajor,
                   computeMinor AS computeCapabilityMinor, smCount AS numMultiprocessors
            FROM TARGET_INFO_GPU;
        DROP TABLE TARGET_INFO_GPU;
        """
    )
    con.close()
    run = nsys_sqlite.read(path)
    assert [(g.device_id, g.name, g.compute_capability, g.sm_count) for g in run.meta.gpus] == [
        (0, "NVIDIA GeForce RTX 2070 SUPER", "7.5", 40)
    ]
    assert run.kernels is not None
    assert pc.sum(run.kernels["duration_ns"]).as_py() == 589_147  # DLProf's own figure


def test_synthetic_per_rank_visible_devices_keep_gpus_apart(
    nsys_h100: Path, tmp_path: Path
) -> None:
    """Two ranks that each saw their GPU as CUDA device 0: the export's TARGET_INFO_CUDA_DEVICE
    says which GPU each was, and the per-GPU figures come out as in the real file (where the
    ranks used devices 0 and 1)."""
    real = _per_device(nsys_h100)
    assert set(real) == {0, 1}
    path = _copy(nsys_h100, tmp_path, "synthetic_visible_devices.sqlite")
    con = sqlite3.connect(path)
    pids = {
        dev: pid
        for pid, dev in con.execute(
            "SELECT DISTINCT (globalPid >> 24) & 16777215, deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL"
        )
    }
    for table in ("KERNEL", "MEMCPY", "MEMSET"):
        con.execute(f"UPDATE CUPTI_ACTIVITY_KIND_{table} SET deviceId = 0")
    con.commit()
    merged = _per_device(path)
    assert set(merged) == {0}  # what a reader without the mapping reports: one busy GPU
    con.executescript(
        """
        CREATE TABLE TARGET_INFO_GPU (id INTEGER PRIMARY KEY, name TEXT, computeMajor INTEGER,
                                      computeMinor INTEGER, smCount INTEGER);
        INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H100 80GB HBM3', 9, 0, 132),
                                           (1, 'NVIDIA H100 80GB HBM3', 9, 0, 132);
        CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER, pid INTEGER,
                                              uuid TEXT, numMultiprocessors INTEGER);
        """
    )
    con.executemany(
        "INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (?, 0, ?, '', 132)",
        list(pids.items()),
    )
    con.commit()
    con.close()
    assert _per_device(path) == real
    run = api.load(path)
    assert [g.name for g in run.meta.gpus] == ["NVIDIA H100 80GB HBM3"] * 2
    assert any("mapped from each process's CUDA ordinal" in n for n in run.meta.notes)


def test_synthetic_empty_text_beside_a_text_id_reads_the_id(
    nsys_h100: Path, tmp_path: Path
) -> None:
    """2021 exports may write defaults instead of NULLs: an empty inline text must not hide the
    registered string (textId) that names the range."""
    path = _copy(nsys_h100, tmp_path, "synthetic_empty_text.sqlite")
    con = sqlite3.connect(path)
    changed = con.execute(
        "UPDATE NVTX_EVENTS SET text = '' WHERE text IS NULL AND textId IS NOT NULL"
    ).rowcount
    con.commit()
    con.close()
    assert changed == 420
    before, after = nsys_sqlite.read(nsys_h100), nsys_sqlite.read(path)
    assert after.ranges is not None and before.ranges is not None
    assert after.ranges.equals(before.ranges)
    assert after.ops is not None and before.ops is not None
    assert after.ops.equals(before.ops)


def test_synthetic_graph_level_trace_is_called_out(nsys_h100: Path, tmp_path: Path) -> None:
    """nsys' default --cuda-graph-trace=graph keeps one row per graph replay and none of the
    graph's kernels: the report must say how much GPU time it cannot see."""
    path = _copy(nsys_h100, tmp_path, "synthetic_graph_trace.sqlite")
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER NOT NULL, end INTEGER NOT NULL,
            deviceId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
            graphId INTEGER);
        INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start, end, graphId)
            SELECT MIN(start), MIN(start) + 2500000, 1 FROM CUPTI_ACTIVITY_KIND_KERNEL;
        INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start, end, graphId)
            SELECT MIN(start) + 3000000, MIN(start) + 4000000, 1 FROM CUPTI_ACTIVITY_KIND_KERNEL;
        """
    )
    con.close()
    notes = nsys_sqlite.read(path).meta.notes
    assert any(
        n.startswith("2 CUDA graph replays (3.5 ms of GPU time) were traced as whole graphs")
        and "--cuda-graph-trace=node" in n
        for n in notes
    ), notes
    assert not any("CUDA graph" in n for n in nsys_sqlite.read(nsys_h100).meta.notes)
