"""Exports that real users produce and that used to crash or mislead: NVTX ranges that are not
framework ops, inverted intervals, NULL kernel names. Each is the bundled 2xH100 export (or the
DLProf Viewer database) with one synthetic change; the report must come out, with a note."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pyarrow.compute as pc
import pytest
from trace_paths import SAMPLES
from typer.testing import CliRunner

from tcreport import api
from tcreport.cli import app
from tcreport.ingest import load

H100 = SAMPLES / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"


def _variant(tmp_path: Path, sql: str, src: Path = H100) -> Path:
    out = tmp_path / f"synthetic_{src.name}"
    shutil.copy(src, out)
    with sqlite3.connect(out) as con:
        con.executescript(sql)
    return out


_NOT_OPS = {
    "train_step": "UPDATE NVTX_EVENTS SET text='train_step', textId=NULL;",
    "mpi": "UPDATE NVTX_EVENTS SET text='MPI_Send', textId=NULL;",
    "single_marker": (
        "DELETE FROM NVTX_EVENTS WHERE rowid > 1;"
        "UPDATE NVTX_EVENTS SET text='mark', textId=NULL, \"end\"=NULL, eventType=34;"
    ),
}


@pytest.mark.parametrize("case", sorted(_NOT_OPS))
def test_synthetic_nvtx_without_ops_gives_kernel_figures_and_a_note(
    tmp_path: Path, case: str
) -> None:
    path = _variant(tmp_path, _NOT_OPS[case])
    run = load(path)
    assert run.ops is None  # op figures unknown, not a false 0
    assert run.kernels is not None and run.kernels.num_rows == 3587
    assert any(n.startswith("no op ranges found") for n in run.meta.notes)
    res = CliRunner().invoke(app, ["report", str(path), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    assert "no op ranges found" in (tmp_path / "r.html").read_text()


def test_synthetic_nvtx_null_end_and_shared_correlation_id(tmp_path: Path) -> None:
    """Ranges never closed (NULL end) are left out; a second runtime row with the same
    correlation id does not duplicate kernels (the first call wins)."""
    path = _variant(
        tmp_path,
        'UPDATE NVTX_EVENTS SET "end"=NULL WHERE rowid % 3 = 0;'
        'INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT start + 5, "end" + 5, eventClass,'
        " globalTid, correlationId, nameId, returnValue, callchainId"
        " FROM CUPTI_ACTIVITY_KIND_RUNTIME;",
    )
    run = load(path)
    base = load(H100)
    assert run.kernels is not None and base.kernels is not None
    assert run.kernels.num_rows == base.kernels.num_rows
    assert pc.sum(run.kernels["duration_ns"]) == pc.sum(base.kernels["duration_ns"])
    assert run.ops is not None and run.ops.num_rows > 0
    with sqlite3.connect(path) as con:
        (open_ranges,) = con.execute(
            'SELECT COUNT(*) FROM NVTX_EVENTS WHERE "end" IS NULL'
        ).fetchone()
    assert any(f"dropped {open_ranges:,} NVTX range rows" in n for n in run.meta.notes)
    res = CliRunner().invoke(app, ["summary", str(path), "--json"])
    assert res.exit_code == 0, res.output


def test_synthetic_inverted_nsys_intervals_are_dropped_with_a_note(tmp_path: Path) -> None:
    path = _variant(
        tmp_path,
        'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start - 1000000000 WHERE rowid % 2 = 0;'
        'UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET "end" = start - 5 WHERE rowid % 2 = 0;',
    )
    with sqlite3.connect(path) as con:
        (kept,) = con.execute(
            'SELECT SUM("end" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE "end" >= start'
        ).fetchone()
    report = api.analyze(load(path)).analysis
    assert report.time.gpu_kernel_ns is not None
    assert report.time.gpu_kernel_ns == kept > 0
    assert report.time.tc_kernel_ns is not None
    assert 0 <= report.time.tc_kernel_ns <= report.time.gpu_kernel_ns
    assert any("1,793 kernel and 452 memcpy/memset rows" in n for n in report.meta.notes)


def test_synthetic_null_kernel_name_reports_with_a_note(tmp_path: Path) -> None:
    path = _variant(
        tmp_path,
        "CREATE TABLE s2(id INTEGER PRIMARY KEY, value TEXT);"
        "INSERT INTO s2 SELECT * FROM StringIds; DROP TABLE StringIds;"
        "ALTER TABLE s2 RENAME TO StringIds;"
        "UPDATE StringIds SET value = NULL"
        " WHERE id = (SELECT shortName FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1);",
    )
    res = CliRunner().invoke(app, ["summary", str(path)])
    assert res.exit_code == 0, res.output
    assert "kernel launches have no name in StringIds" in res.output
    run = load(path)
    assert run.kernels is not None
    names = run.kernels["name"].cast("string")
    assert names.null_count == 0 and pc.sum(pc.equal(names, "(unnamed kernel)")).as_py() > 0


@pytest.mark.realtraces
def test_synthetic_inverted_dlprof_viewer_rows_are_dropped(
    tmp_path: Path, dlprof_cnn: Path
) -> None:
    path = _variant(
        tmp_path,
        "UPDATE read_only_kernels SET gpu_stop = gpu_start - 1000000 WHERE rowid % 4 = 0;"
        "UPDATE read_only_memcpys SET gpu_stop = gpu_start - 10 WHERE rowid % 2 = 0;",
        dlprof_cnn / "dlprof_dldb_7.sqlite",
    )
    run = load(path)
    assert run.kernels is not None and run.memory is not None and run.ops is not None
    assert pc.min(run.kernels["duration_ns"]).as_py() >= 0
    assert pc.min(run.memory["duration_ns"]).as_py() >= 0
    assert pc.min(run.ops["gpu_ns"]).as_py() >= 0
    assert any(n.startswith("dropped 14 kernels rows") for n in run.meta.notes)
