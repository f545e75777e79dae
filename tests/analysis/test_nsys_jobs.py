"""One Nsight Systems export of a multi-process launch read as a job, a rank per process.

The bundled sample is a real ``torchrun --nproc_per_node=2`` export: two python processes (PIDs
148 and 149), each on its own H100, in one file. Its ranks are checked against tcreport's own
single-run analysis of the same file, GPU by GPU (a differential test: splitting by process must
change no figure, only who owns it). The negative cases are the sample edited here (named
*synthetic*): one process on two GPUs, two processes sharing a GPU.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pyarrow.compute as pc
import pytest
from trace_paths import SAMPLES
from typer.testing import CliRunner

from tcreport import api, ingest, report
from tcreport.cli.app import app
from tcreport.ingest.nsys import processes
from tcreport.job_report import JobReport, RankSpec, analyse_rank
from tcreport.model import SourceFormat

NSYS = SAMPLES / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"
WINDOWS = SAMPLES.parent.parent / "shared" / "realtraces" / "nsys" / "v2022.1-windows-synthetic"
runner = CliRunner()


def _count_loads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every path ``ingest`` reads from now on, in order (``load``, and ``load_rank`` reading an
    export without its geometry, both read through ``ingest._read``)."""
    reads: list[Path] = []
    real = ingest._read

    def counting(fmt: SourceFormat, path: Path, **kw: bool) -> object:
        reads.append(path)
        return real(fmt, path, **kw)

    monkeypatch.setattr(ingest, "_read", counting)
    return reads


@pytest.fixture(scope="module")
def job_report() -> JobReport:
    job = api.find_job(NSYS)
    assert job is not None
    return api.analyze_job(job)


def test_the_torchrun_export_is_a_job_of_two_ranks_by_pid_order() -> None:
    job = api.find_job(NSYS)
    assert job is not None and job.present == 2 and job.folder == NSYS
    assert [(r.rank, r.process_id) for r in job.ranks] == [(0, 148), (1, 149)]
    assert job.world_size is None  # the export holds the ranks it holds; nothing extrapolated
    assert "PID order" in job.detected_by and "PID order" in job.describe()


def test_each_rank_equals_the_single_run_analysis_of_its_gpu() -> None:
    """Per-rank span, compute, communication, copies and idle are the whole file's step rows
    of that rank's GPU; kernel and Tensor Core time of the ranks add up to the whole file's."""
    whole = api.analyze(api.load(NSYS)).analysis
    by_gpu = {s.device_id: s for s in whole.steps.rows}
    job = api.find_job(NSYS)
    assert job is not None and set(by_gpu) == {0, 1}
    figures = [analyse_rank(RankSpec(str(r.path), r.rank, process_id=r.process_id)).figures
               for r in job.ranks]  # fmt: skip
    for f in figures:
        assert f.devices == 1 and f.device_id == f.rank  # process 148 drove GPU 0, 149 GPU 1
        (step,) = f.steps
        row = by_gpu[f.device_id]
        assert step.span_ns == row.span_ns > 0
        assert step.compute_ns == row.compute_ns > 0
        assert step.tc_compute_ns == row.tc_compute_ns
        assert step.communication_ns == row.communication_ns
        assert step.communication_total_ns == row.communication_total_ns > 0
        assert step.memory_ns == row.memory_ns and step.memory_total_ns == row.memory_total_ns
        assert step.idle_ns == row.idle_launch_ns + row.idle_host_ns
    t = whole.time
    assert sum(f.gpu_kernel_ns or 0 for f in figures) == t.gpu_kernel_ns
    assert sum(f.tc_kernel_ns or 0 for f in figures) == t.tc_kernel_ns


def test_the_job_section_says_why_there_is_no_bandwidth(job_report: JobReport) -> None:
    """The export's 420 NCCL NVTX ranges (ncclSend/ncclRecv, group start/end) carry no payload."""
    bw = job_report.section.bandwidth
    assert not bw.recorded and not bw.rows
    assert bw.note is not None and "NCCL's 420 NVTX ranges" in bw.note and "no payload" in bw.note
    assert job_report.section.straggler is not None
    assert job_report.detail.analysis.meta.distributed is not None


def test_summary_check_and_diff_read_the_file_as_a_job(tmp_path: Path) -> None:
    res = runner.invoke(app, ["summary", str(NSYS), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["schema"] == "tcreport.job/1" and doc["job"]["ranks_present"] == [0, 1]
    res = runner.invoke(app, ["check", str(NSYS), "--min-tc-share", "0.5"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["diff", str(NSYS), str(NSYS), "-f", "json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["schema"] == "tcreport.job-diff/1"
    res = runner.invoke(app, ["report", str(NSYS), "--rank", "1", "-o", str(tmp_path / "r.md")])
    assert res.exit_code == 0, res.output
    assert "process 149" in (tmp_path / "r.md").read_text(encoding="utf-8")


def test_batch_stores_the_export_as_one_job_with_rank_rows(tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(NSYS, src / NSYS.name)
    out = tmp_path / "out"
    res = runner.invoke(app, ["batch", str(src), "-o", str(out)])
    assert res.exit_code == 0, res.output
    rows = api.query(out, "select rank, gpu_kernel_ns from runs order by rank nulls first")
    ranks = rows.column("rank").to_pylist()
    kernel = rows.column("gpu_kernel_ns").to_pylist()
    assert ranks == [None, 0, 1] and kernel[0] == kernel[1] + kernel[2]


def _synthetic(tmp_path: Path, sql: str) -> Path:
    """The sample export with its kernel rows edited by ``sql``."""
    path = tmp_path / "launch-synthetic.sqlite"
    shutil.copy(NSYS, path)
    with sqlite3.connect(path) as con:
        con.execute(sql)
    return path


def test_one_process_on_two_gpus_stays_one_run_synthetic(tmp_path: Path) -> None:
    one = _synthetic(
        tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = 281477459738624"
    )  # every kernel launched by process 148
    assert api.find_job(one) is None and processes.launch_of(one) is None
    assert len(api.load(one).meta.gpus) == 2


def test_processes_sharing_a_gpu_are_no_job_synthetic(tmp_path: Path) -> None:
    shared = _synthetic(tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = 0")
    assert api.find_job(shared) is None


def test_other_files_are_no_launch(tmp_path: Path) -> None:
    assert processes.launch_of(SAMPLES / "kineto-a100-tf32-alexnet" / "README.md") is None
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"SQLite format 3\0" + b"\xff" * 200)
    assert processes.launch_of(broken) is None
    for export in sorted(WINDOWS.glob("*.sqlite")):  # one process, one GPU
        assert api.find_job(export) is None


def test_a_folder_holding_only_the_export_is_the_job() -> None:
    job = ingest.find_job(NSYS.parent)
    assert job is not None and job.present == 2 and job.ranks[0].path == NSYS


def test_the_export_is_read_once_per_job_and_let_go(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its ranks (and the straggler's full report) are split off one read of the export."""
    reads = _count_loads(monkeypatch)
    job = api.find_job(NSYS)
    assert job is not None
    jr = api.analyze_job(job, with_timeline=True)
    assert reads == [NSYS] and jr.detail_rank in (0, 1)
    assert not ingest._WHOLE  # nothing kept once the job is built


def test_each_rank_is_moved_out_of_the_export_with_the_rows_a_filter_gives() -> None:
    """The export hands each process its rows and keeps only the rest; asked again, a rank gets
    the same rows (the rank shown in full); the columns stay what filtering the whole gives."""
    whole = ingest.load(NSYS)
    export = processes.Export(whole)
    first = export.rank(0, 148)
    assert first.meta.distributed is not None and first.meta.distributed.rank == 0
    assert [g.device_id for g in first.meta.gpus] == [0]
    for name in processes.PER_PROCESS:
        table = getattr(whole, name)
        if table is None:
            continue
        for pid, got in ((148, getattr(first, name)), (149, export._rest[name])):
            assert got is not None and got.equals(table.filter(pc.equal(table["process_id"], pid)))
    assert export.rank(0, 148).kernels is first.kernels
    second, rest = export.rank(1, 149).kernels, export._rest["kernels"]
    assert second is not None and first.kernels is not None and whole.kernels is not None
    assert second.num_rows + first.kernels.num_rows == whole.kernels.num_rows
    assert rest is not None and rest.num_rows == 0  # no third process launched kernels


def test_the_rank_shown_in_full_is_analysed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A two-rank page draws each rank's timeline in the pass and keeps the straggler's report,
    instead of analysing it again; a rank asked for is the only one drawn and kept."""
    built: list[bool] = []
    real = report.build

    def counting(run: object, *args: object, with_timeline: bool = False, **kw: object) -> object:
        built.append(with_timeline)
        return real(run, *args, with_timeline=with_timeline, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(report, "build", counting)
    job = api.find_job(NSYS)
    assert job is not None
    jr = api.analyze_job(job, with_timeline=True)
    assert built == [True, True] and jr.detail.analysis.steps.timeline is not None
    built.clear()
    asked = api.analyze_job(job, rank=1, with_timeline=True)
    assert built == [False, True] and asked.detail_rank == 1
    assert asked.detail.analysis.steps.timeline is not None


def test_a_rank_let_go_is_not_held_and_is_read_again_if_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once a rank is analysed its rows go (the next rank is not analysed beside them); asked
    for again, the export is read again rather than handing out nothing."""
    export = processes.Export(ingest.load(NSYS))
    assert export.held_beside(148) > 0
    export.rank(0, 148)
    export.forget(148)
    assert not export.gives(148) and export.gives(149) and 148 not in export._taken
    with pytest.raises(ValueError, match="let go"):
        export.rank(0, 148)
    assert export.rank(1, 149).kernels is not None
    assert export.held_beside(149) == 0  # rank 0's rows are gone, no third process has any

    reads = _count_loads(monkeypatch)
    job = api.find_job(NSYS)
    assert job is not None
    try:
        first = ingest.load_rank(job.ranks[0])
        ingest.release_rank(job.ranks[0])
        again = ingest.load_rank(job.ranks[0])
    finally:
        ingest.forget_ranks()
    assert reads == [NSYS, NSYS] and first.kernels is not None
    assert again.kernels is not None and again.kernels.equals(first.kernels)


_GEOMETRY = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")


def test_the_job_reads_no_launch_geometry_and_a_caller_asking_for_it_gets_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The job's analysis never reads the kernels' grid and block sizes: its ranks come from an
    export read without them (null, as in an export that lacks them), every other column as
    read whole; a caller wanting them (a notebook's rank) makes the export be read again."""
    reads = _count_loads(monkeypatch)
    job = api.find_job(NSYS)
    assert job is not None
    try:
        bare = ingest.load_rank(job.ranks[0], geometry=False)
        full = ingest.load_rank(job.ranks[0])
        again = ingest.load_rank(job.ranks[0], geometry=False)  # what is held has it: no read
    finally:
        ingest.forget_ranks()
    assert reads == [NSYS, NSYS]
    bare_k, full_k = bare.kernels, full.kernels
    assert again.kernels is full.kernels
    assert bare_k is not None and full_k is not None
    assert full_k.column("grid_x").null_count == 0
    for name in _GEOMETRY:
        assert bare_k.column(name).null_count == bare_k.num_rows
    assert bare_k.drop_columns(list(_GEOMETRY)).equals(full_k.drop_columns(list(_GEOMETRY)))
    for name in ("memory", "ops", "ranges"):
        assert getattr(bare, name).equals(getattr(full, name))
    with pytest.raises(ValueError, match="nsys SQLite"):
        ingest._read(SourceFormat.KINETO_JSON, NSYS, geometry=False)


def test_the_step_analysis_one_after_the_other_gives_the_same_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A rank analysed beside other ranks' rows runs its step analysis without a second thread
    (job_report.OVERLAP_BESIDE); the figures are the same either way."""
    from tcreport import job_report
    from tcreport.render import job_json

    job = api.find_job(NSYS)
    assert job is not None
    threads: list[bool] = []
    real = report.build

    def recording(run: object, *args: object, threaded: bool = True, **kw: object) -> object:
        threads.append(threaded)
        return real(run, *args, threaded=threaded, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(report, "build", recording)
    together = job_json.render(api.analyze_job(job))
    assert threads == [True, True]  # the bundled export is small: both threads
    monkeypatch.setattr(job_report, "OVERLAP_BESIDE", 0)
    threads.clear()
    apart = job_json.render(api.analyze_job(job))
    assert threads == [False, True]  # rank 1 is analysed once rank 0's rows are gone
    assert apart == together
