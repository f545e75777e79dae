"""Distributed jobs: the per-rank traces of one job read as one run (issue 23).

The real two-rank trace of a 128-rank job (``kineto/two-rank-sampled``) against HTA's own per-rank
figures; a synthetic 4-rank job where one rank sleeps before its backward for the straggler and the
collective wait; detection (what is a job, what is not) on folders built here.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hta_figures import FIGURES, _close, _hta
from job_synthetic import NELEMS, TRANSFER_US, write_job
from trace_paths import REALTRACES, SAMPLES
from typer.testing import CliRunner

from tcreport import api, ingest
from tcreport.analysis import collectives
from tcreport.cli.app import app
from tcreport.errors import InputError, UnsupportedFormatError
from tcreport.job_report import JobReport
from tcreport.notebook_job import AnalysedJob

SAMPLED = REALTRACES / "kineto" / "two-rank-sampled"
DDP = REALTRACES / "kineto" / "a100-ddp-nccl-3step" / "nccl_data.json.gz"
NSYS = REALTRACES / "nsys" / "h100x2-bf16-fastvideo" / "mfu_2gpu_after.sqlite"
ALEXNET = REALTRACES / "kineto" / "a100-tf32-alexnet"
BERT = REALTRACES / "kineto" / "h100-bf16-bert-small"
runner = CliRunner()
needs_sampled = pytest.mark.skipif(not SAMPLED.exists(), reason="needs ../shared/realtraces")


@pytest.fixture(scope="module")
def sampled() -> JobReport:
    if not SAMPLED.exists():
        pytest.skip("needs ../shared/realtraces")
    job = api.find_job(SAMPLED)
    assert job is not None
    return api.analyze_job(job, with_timeline=True)


@pytest.fixture(scope="module")
def slow_rank_job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, JobReport]:
    """A synthetic 4-rank job whose rank 2 sleeps 20 ms before every backward."""
    folder = tmp_path_factory.mktemp("synthetic-job")
    write_job(folder, 4, slow=(2,), sleep_us=20_000)
    job = api.find_job(folder)
    assert job is not None
    return folder, api.analyze_job(job, with_timeline=True)


# --- the real two-rank job ------------------------------------------------------------------------


@needs_sampled
def test_two_sampled_ranks_are_one_job_of_2_of_128() -> None:
    job = api.find_job(SAMPLED)
    assert job is not None
    assert [r.rank for r in job.ranks] == [0, 1]
    assert (job.world_size, job.backend, job.detected_by) == (128, "nccl", "distributedInfo")
    assert job.describe().startswith("2 of 128 ranks")


def test_analyze_job_takes_the_folder_as_a_str_or_a_path(sampled: JobReport) -> None:
    """Like every path the facade takes, the job's folder may be given as a str or a Path (a
    str used to fail with AttributeError); a folder that holds no job is one InputError."""
    for given in (str(SAMPLED), SAMPLED):
        jr = api.analyze_job(given)
        assert jr.rank_files == sampled.rank_files
        assert jr.section.verdict == sampled.section.verdict
    with pytest.raises(InputError, match="not a distributed job"):
        api.analyze_job(str(ALEXNET))


def test_per_rank_step_figures_equal_htas(sampled: JobReport) -> None:
    """Per rank, the job section's span, idle, compute, communication and memory of
    ProfilerStep#551 (HTA drops the last step) equal HTA 0.5's within 0.5 %."""
    ranks = json.loads((SAMPLED / "hta-oracle.json").read_text())["ranks"]
    cells = {(c.rank, c.label): c.step for c in sampled.section.cells}
    for rank in (0, 1):
        s = cells[(rank, "ProfilerStep#551")]
        mine = {
            "span": s.span_ns / 1e3,
            "idle": s.idle_ns / 1e3,
            "compute_union": s.compute_ns / 1e3,
            "comm_union": s.communication_total_ns / 1e3,
            "mem_union": s.memory_total_ns / 1e3,
        }
        hta = _hta(ranks, f"rank{rank}_iter551")
        for key in FIGURES:
            assert _close(mine[key], hta[key]), f"rank {rank} {key}: {mine[key]} HTA {hta[key]}"


def test_the_straggler_is_named(sampled: JobReport) -> None:
    """ProfilerStep#551: rank 1 spends 27.9 ms more outside collectives (HTA: compute 135.5 ms
    against 106.3 ms), rank 0 waits 27.3 ms more in them; #552 the other way round, by less."""
    sec = sampled.section
    by_label = {r.label: r for r in sec.iterations}
    assert by_label["ProfilerStep#551"].straggler == 1
    assert by_label["ProfilerStep#552"].straggler == 0
    assert sec.straggler is not None and sec.straggler.rank == 1
    assert sampled.detail_rank == 1 and sampled.detail_why == "the straggler"
    assert sec.straggler.text.startswith("rank 1 is the straggler in 1 of 2 iterations")
    assert sec.straggler.kernels and "split_embedding" in sec.straggler.kernels[0].name
    wait = {c.rank: c.wait_ns for c in sec.cells if c.label == "ProfilerStep#551"}
    assert wait == {0: 195_327_000 - 168_027_000, 1: 0}  # HTA's comm_union per rank


def test_the_job_verdict_is_time_weighted_with_the_spread(sampled: JobReport) -> None:
    v = sampled.section.verdict
    ranks = sampled.section.ranks
    assert v.tc_kernel_ns is not None and v.gpu_kernel_ns is not None
    assert v.tc_share == pytest.approx(v.tc_kernel_ns / v.gpu_kernel_ns)
    assert v.gpu_kernel_ns == sum(r.gpu_kernel_ns or 0 for r in ranks)
    assert v.spread is not None
    assert (v.spread.low_rank, v.spread.high_rank) == (1, 0)
    assert v.tc_share is not None and v.spread.low <= v.tc_share <= v.spread.high
    assert "across the 2 ranks read" in v.text


def test_message_sizes_not_recorded_is_said(sampled: JobReport) -> None:
    b = sampled.section.bandwidth
    assert not b.recorded and not b.rows and "not recorded" in b.note


# --- the synthetic slow rank ----------------------------------------------------------------------


def test_synthetic_sleeping_rank_is_named_and_the_others_wait_20_ms(
    slow_rank_job: tuple[Path, JobReport],
) -> None:
    _, jr = slow_rank_job
    sec = jr.section
    assert [r.straggler for r in sec.iterations] == [2, 2, 2]
    for c in sec.cells:
        if c.rank == 2:
            assert c.wait_ns == 0 and c.straggler
        else:
            assert c.wait_ns == pytest.approx(20e6, rel=0.01), c
    s = sec.straggler
    assert s is not None and s.rank == 2 and s.named_in == 3
    assert s.excess_ns == pytest.approx(20e6, rel=0.01)
    assert s.parts[0].name == "idle" and s.host_cause == "sleep"
    assert sec.wait_ns == pytest.approx(20e6, rel=0.01)
    (f,) = jr.findings
    assert f.id == "DJ001" and "rank 2" in f.title and f.severity.value == "high"
    assert f.saving_per_iteration_ns == pytest.approx(10e6, rel=0.01)  # half the wait, stated


def test_synthetic_bandwidth_follows_nccl_tests(slow_rank_job: tuple[Path, JobReport]) -> None:
    """100 MB all-reduced by 4 ranks; the rank that waited least took TRANSFER_US: algbw = S/t,
    busbw = algbw x 2(n-1)/n, against the A100's NVLink (600 GB/s, 300 GB/s each way)."""
    _, jr = slow_rank_job
    (row,) = jr.section.bandwidth.rows
    algbw = NELEMS * 4 / (TRANSFER_US * 1e3)
    assert (row.collective, row.message_bytes, row.group_size) == ("all-reduce", NELEMS * 4, 4)
    assert (row.calls, row.ranks) == (3, 4)
    assert row.algbw_gbs == pytest.approx(algbw)
    assert row.busbw_gbs == pytest.approx(algbw * 2 * 3 / 4)
    assert jr.section.bandwidth.nvlink_gbs == 300.0
    assert row.nvlink_share == pytest.approx(algbw * 1.5 / 300)
    assert "topology" in jr.section.bandwidth.note


def test_ranks_equally_fast_have_no_straggler(tmp_path: Path) -> None:
    write_job(tmp_path, 2)
    job = api.find_job(tmp_path)
    assert job is not None
    sec = api.analyze_job(job).section
    assert sec.straggler is None and all(r.straggler is None for r in sec.iterations)


# --- bandwidth on the real DDP trace ----------------------------------------------------------------


def _raw_collectives(path: Path) -> dict[tuple[str, int, int, str], list[float]]:
    """The NCCL kernels' args and durations, read with json (not tcreport's reader)."""
    with gzip.open(path, "rt") as fh:
        doc = json.load(fh)
    out: dict[tuple[str, int, int, str], list[float]] = {}
    for e in doc["traceEvents"]:
        a = e.get("args") or {}
        if e.get("cat") == "kernel" and "Collective name" in a:
            key = (a["Collective name"], a["In msg nelems"], a["Out msg nelems"], a["dtype"])
            out.setdefault(key, []).append(float(e["dur"]))
    return out


@pytest.mark.skipif(not DDP.exists(), reason="needs ../shared/realtraces")
def test_real_ddp_trace_bandwidth_from_its_nccl_args() -> None:
    """One rank of two present: each call's own duration is the time (a floor of the bandwidth)."""
    run = api.load(DDP)
    assert run.collectives is not None and run.collectives.num_rows == 21
    b = collectives.bandwidth([(0, collectives.calls(run.collectives))], ["NVIDIA A100-PG509-200"])
    raw = _raw_collectives(DDP)
    assert sum(r.calls for r in b.rows) == sum(len(v) for v in raw.values()) == 21
    for r in b.rows:
        n_in = (
            r.message_bytes // collectives.DTYPE_BYTES[str(r.dtype).lower()]
            if r.message_bytes
            else 0
        )
        (durs,) = [
            v
            for (name, i, o, d), v in raw.items()
            if name == r.name and max(i, o) == n_in and d == r.dtype
        ]
        assert r.message_bytes is not None
        expected = r.message_bytes * len(durs) / (sum(durs) * 1e3)
        assert r.algbw_gbs == pytest.approx(expected, rel=1e-6)
        assert r.group_size == 2
        factor = 1.0  # all-reduce of 2 ranks: 2(n-1)/n = 1; broadcast: 1
        assert r.busbw_gbs == pytest.approx(expected * factor, rel=1e-6)
    assert {r.collective for r in b.rows} == {"all-reduce", "broadcast"}
    assert b.nvlink_gbs == 300.0 and "A100" in b.note


@pytest.mark.parametrize(
    ("name", "n", "factor"),
    [
        ("allreduce", 8, 2 * 7 / 8),
        ("_allgather_base", 8, 7 / 8),
        ("all_gather_into_tensor", 4, 3 / 4),
        ("_reduce_scatter_base", 8, 7 / 8),
        ("alltoall_base", 16, 15 / 16),
        ("broadcast", 8, 1.0),
        ("reduce", 8, 1.0),
        ("send", 2, 1.0),
        ("recv", 2, 1.0),
        ("gather", 8, None),
    ],
)
def test_bus_bandwidth_factors_are_nccl_tests(name: str, n: int, factor: float | None) -> None:
    assert collectives.bus_factor(collectives.family(name), n) == (
        pytest.approx(factor) if factor is not None else None
    )


# --- what is a job, what is not -----------------------------------------------------------------------


def _copy(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for f in src.glob("*.json.gz"):
        shutil.copy(f, dst / f.name)


@pytest.mark.skipif(not ALEXNET.exists(), reason="needs ../shared/realtraces")
def test_unrelated_traces_are_still_refused_with_the_list(tmp_path: Path) -> None:
    _copy(ALEXNET, tmp_path)
    _copy(BERT, tmp_path)
    assert api.find_job(tmp_path) is None
    with pytest.raises(
        UnsupportedFormatError, match=r"holds 2 traces: benchmark_result.*gaunernst"
    ):
        api.load(tmp_path)
    result = runner.invoke(app, ["report", str(tmp_path), "-o", str(tmp_path.parent / "r.html")])
    assert result.exit_code == 2 and "holds 2 traces" in result.stderr


@needs_sampled
def test_ranks_of_different_jobs_in_one_folder_are_two_jobs(tmp_path: Path) -> None:
    _copy(SAMPLED, tmp_path)
    write_job(tmp_path, 4)
    found = ingest._traces_in(tmp_path)
    jobs, rest = ingest.job.group(tmp_path, found)
    assert sorted(j.world_size or 0 for j in jobs) == [4, 128] and not rest
    assert api.find_job(tmp_path) is None
    with pytest.raises(UnsupportedFormatError, match="holds 2 distributed jobs and 0 other traces"):
        api.load(tmp_path)


def test_two_jobs_of_one_shape_are_told_apart_by_their_names(tmp_path: Path) -> None:
    write_job(tmp_path, 2, prefix="jobA")
    write_job(tmp_path, 2, prefix="jobB", slow=(1,))
    jobs, rest = ingest.job.group(tmp_path, ingest._traces_in(tmp_path))
    assert [j.label for j in jobs] == [
        f"{tmp_path.name}/jobA_rank-*.json.gz",
        f"{tmp_path.name}/jobB_rank-*.json.gz",
    ]
    assert not rest


def test_a_rank_claimed_twice_makes_no_job(tmp_path: Path) -> None:
    (a,) = write_job(tmp_path, 2, ranks=(0,), prefix="one")
    a.rename(tmp_path / "first.json.gz")
    (b,) = write_job(tmp_path, 2, ranks=(0,), prefix="two")
    b.rename(tmp_path / "second.json.gz")
    jobs, rest = ingest.job.group(tmp_path, ingest._traces_in(tmp_path))
    assert not jobs and len(rest) == 2


def test_file_names_make_a_job_without_distributed_info(tmp_path: Path) -> None:
    for r in (0, 1):
        (path,) = write_job(tmp_path / "src", 2, ranks=(r,))
        with gzip.open(path, "rt") as fh:
            doc = json.load(fh)
        del doc["distributedInfo"]
        with gzip.open(tmp_path / f"trace.rank_{r}.json.gz", "wt") as fh:
            json.dump(doc, fh)
    shutil.rmtree(tmp_path / "src")
    job = api.find_job(tmp_path)
    assert job is not None and job.detected_by == "file names" and job.world_size is None
    assert job.describe().startswith("2 ranks")
    sec = api.analyze_job(job).section
    assert sec.identity.presence == "2 ranks present"


def _plain_trace(path: Path, doc: dict[str, Any]) -> None:
    path.write_text(json.dumps(doc))


def test_distributed_info_after_the_events_is_found_in_a_plain_trace_only(tmp_path: Path) -> None:
    """The sniff reads the first MiB (and a plain file's last MiB), never a whole gzip."""
    (src,) = write_job(tmp_path / "src", 2, ranks=(1,), steps=60)
    with gzip.open(src, "rt") as fh:
        doc = json.load(fh)
    info = doc.pop("distributedInfo")
    doc["traceEvents"] *= 24  # past the first MiB (and the last MiB does not reach its start)
    late = {"traceEvents": doc["traceEvents"], "distributedInfo": info}
    _plain_trace(tmp_path / "late.json", late)
    with gzip.open(tmp_path / "late.json.gz", "wt") as fh:
        json.dump(late, fh)
    assert len((tmp_path / "late.json").read_bytes()) > 1 << 21
    plain = ingest.job.identify(tmp_path / "late.json", ingest.detect(tmp_path / "late.json"))
    assert plain is not None and plain.rank == 1 and plain.distributed is not None
    assert (
        ingest.job.identify(tmp_path / "late.json.gz", ingest.detect(tmp_path / "late.json.gz"))
        is None
    )


# --- outputs -----------------------------------------------------------------------------------------


def test_json_html_and_markdown_carry_the_same_job_figures(
    slow_rank_job: tuple[Path, JobReport], tmp_path: Path
) -> None:
    folder, jr = slow_rank_job
    doc = json.loads(api.render_job_json(jr))
    assert doc["schema"] == "tcreport.job/1"
    job = doc["job"]
    assert job["presence"] == "4 of 4 ranks present" and job["ranks_present"] == [0, 1, 2, 3]
    assert job["straggler"]["rank"] == 2 and doc["detail"]["rank"] == 2
    assert doc["detail"]["summary"]["schema"] == "tcreport.summary/1"
    assert len(job["cells"]) == 12 and job["findings"][0]["id"] == "DJ001"
    html = api.render_job_html(jr)
    assert html.count('<rect class="hm-') == 12 and html.count(' hm-slow"') == 3
    assert "Rank 2 (the straggler) in full" in html and 'id="tl"' in html
    md = api.render_job_markdown(jr)
    assert job["verdict"]["text"] in md and "`DJ001`" in md
    assert "#### Rank 2 (the straggler) in full" in md
    out = tmp_path / "r.html"
    result = runner.invoke(app, ["report", str(folder), "--rank", "0", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    assert "Rank 0 (asked for) in full" in out.read_text(encoding="utf-8")
    result = runner.invoke(app, ["summary", str(folder), "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["job"]["wait_ns"] == job["wait_ns"]
    result = runner.invoke(app, ["summary", str(folder)])
    assert result.exit_code == 0 and "Straggler: rank 2" in result.stdout


def test_rank_option_refusals(slow_rank_job: tuple[Path, JobReport], tmp_path: Path) -> None:
    folder, _ = slow_rank_job
    result = runner.invoke(
        app, ["report", str(folder), "--rank", "9", "-o", str(tmp_path / "x.html")]
    )
    assert (
        result.exit_code == 2
        and "no rank 9 in this job (ranks present: 0, 1, 2, 3)" in result.stderr
    )
    one = next(folder.glob("*rank-0*"))
    result = runner.invoke(app, ["report", str(one), "--rank", "0", "-o", str(tmp_path / "x.html")])
    assert result.exit_code == 2 and "--rank is for a distributed job (a folder" in result.stderr


def test_rank_help_names_every_form_of_a_job() -> None:
    """--rank works on one Nsight Systems export of a multi-process launch too (the bundled
    nsys-h100x2-bf16 sample), not only on a folder of per-rank traces: its help says so."""
    text = " ".join(runner.invoke(app, ["report", "--help"], env={"COLUMNS": "200"}).stdout.split())
    assert "--rank N For a distributed job (a folder of its per-rank traces, or one Nsight" in text
    export = SAMPLES / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"
    assert api.find_job(export) is not None  # what the help promises


def test_hostile_kernel_names_stay_text_in_the_job_outputs(tmp_path: Path) -> None:
    evil = "</script><img src=x onerror=alert(1)>|`@x`"
    write_job(tmp_path, 2, slow=(1,), gemm=evil)
    job = api.find_job(tmp_path)
    assert job is not None
    jr = api.analyze_job(job, with_timeline=True)
    html = api.render_job_html(jr)
    assert "<img src=x" not in html and "&lt;img src=x" in html
    md = api.render_job_markdown(jr)
    assert "<img src=x" not in md and not re.search(r"(?<!\\)`@x`", md)


def test_open_gives_the_job_as_dataframes(slow_rank_job: tuple[Path, JobReport]) -> None:
    import tcreport

    folder, _ = slow_rank_job
    aj = tcreport.open(folder)
    assert isinstance(aj, AnalysedJob)
    assert list(aj.ranks["rank"]) == [0, 1, 2, 3]
    assert len(aj.steps) == 12 and aj.summary()["schema"] == "tcreport.job/1"
    assert aj.detail.report.source_path.endswith("rank-2.json.gz")
    assert len(aj.bandwidth) == 1 and "DJ001" in set(aj.findings["id"])


def test_every_job_rule_is_documented() -> None:
    from trace_paths import ROOT

    from tcreport.rules import job_rules

    doc = (ROOT / "docs" / "findings.md").read_text(encoding="utf-8")
    for rule_id in job_rules.JOB_REGISTRY:
        assert re.search(rf"^##+ .*\b{re.escape(rule_id)}\b", doc, re.M), rule_id


def test_ingest_folders_of_the_ranks_are_the_job(tmp_path: Path) -> None:
    """``tcreport ingest`` keeps a rank's identity, so the ingested ranks are the job again."""
    write_job(tmp_path / "traces", 2, slow=(1,))
    (tmp_path / "ingested").mkdir()
    for r in (0, 1):
        run = api.load(next((tmp_path / "traces").glob(f"*rank-{r}*")))
        assert run.meta.distributed is not None and run.meta.distributed.rank == r
        api.ingest(run, tmp_path / "ingested" / f"r{r}")
    job = api.find_job(tmp_path / "ingested")
    assert job is not None and job.detected_by == "tcreport ingest metadata"
    sec = api.analyze_job(job).section
    assert sec.straggler is not None and sec.straggler.rank == 1
    assert sec.bandwidth.rows  # the collectives table travels with the ingest folder


@pytest.mark.parametrize(
    "info",
    [
        {"rank": "0", "world_size": 2},
        {"rank": -1},
        {"rank": 2**40},
        {"rank": True},
        [],
        "rank 0",
        {"world_size": 4},
    ],
)
def test_hostile_distributed_info_is_no_rank(info: object) -> None:
    from tcreport.ingest.common.distributed import distributed_from

    assert distributed_from(info) is None


def test_a_world_size_below_the_rank_is_not_believed() -> None:
    from tcreport.ingest.common.distributed import distributed_from

    d = distributed_from({"rank": 5, "world_size": 4, "backend": "x" * 500})
    assert d is not None and d.world_size is None and d.backend == "x" * 64


def test_job_cells_hold_the_step_invariants(sampled: JobReport) -> None:
    """Every cell: parts sum to the span, time outside collectives is compute beside no
    collective plus exposed copies plus idle, no wait is negative, the least wait is zero."""
    for c in sampled.section.cells:
        s = c.step
        assert s.compute_ns + s.communication_ns + s.memory_ns + s.idle_ns == s.span_ns
        assert s.own_ns == s.compute_ns - s.compute_in_collectives_ns + s.memory_ns + s.idle_ns
        assert c.wait_ns >= 0 and s.step_ns >= s.span_ns
    for label in {c.label for c in sampled.section.cells}:
        assert min(c.wait_ns for c in sampled.section.cells if c.label == label) == 0


@pytest.mark.skipif(not NSYS.exists(), reason="needs ../shared/realtraces")
def test_nsys_exports_named_by_rank_are_a_job_synthetic(tmp_path: Path) -> None:
    """Nsight Systems writes no rank into its export: ``nsys profile -o report.rank%q{RANK}``
    names make the job. Two copies of the shared export (itself two processes on two GPUs) make
    a synthetic job whose ranks each hold both GPUs, so each rank's figures are of its busiest
    GPU, and the job says so; the bandwidth note says what the export's NCCL NVTX lacks."""
    for r in (0, 1):
        shutil.copy(NSYS, tmp_path / f"report.rank{r}.sqlite")
    job = api.find_job(tmp_path)
    assert job is not None and job.detected_by == "file names" and job.present == 2
    with pytest.raises(UnsupportedFormatError, match="read it as a job"):
        api.load(tmp_path)
    sec = api.analyze_job(job).section
    assert len(sec.ranks) == 2 and sec.verdict.tc_share is not None
    assert any("several GPUs" in n for n in sec.notes)
    assert sec.bandwidth.note is not None and "NVTX ranges" in sec.bandwidth.note


def test_iterations_not_on_every_rank_are_left_out_and_said(tmp_path: Path) -> None:
    """Rank 1's trace starts one step later (its ProfilerStep#10 renamed #13): steps #11 and #12
    are compared, the others are named as left out; a rank with no GPU step at all is compared
    like an absent rank: the other's steps are the job's, no straggler, and a note names it."""
    paths = write_job(tmp_path, 2, slow=(1,))
    with gzip.open(paths[1], "rt") as fh:
        doc = json.load(fh)
    for e in doc["traceEvents"]:
        if e["name"] == "ProfilerStep#10":
            e["name"] = "ProfilerStep#13"
    with gzip.open(paths[1], "wt") as fh:
        json.dump(doc, fh)
    job = api.find_job(tmp_path)
    assert job is not None
    sec = api.analyze_job(job).section
    assert [r.label for r in sec.iterations] == ["ProfilerStep#11", "ProfilerStep#12"]
    assert "1 iteration not on every rank left out" in sec.matching
    for e in doc["traceEvents"]:
        if e["cat"] == "kernel":
            e["cat"] = "cpu_op"  # rank 1 now ran nothing on the GPU
    with gzip.open(paths[1], "wt") as fh:
        json.dump(doc, fh)
    jr = api.analyze_job(job)
    assert {c.rank for c in jr.section.cells} == {0}
    assert jr.section.straggler is None and not jr.findings
    assert any(n.startswith("rank 1: no GPU activity") for n in jr.section.notes)
    assert json.loads(api.render_job_json(jr))["job"]["step_ns"] is not None
    assert "Rank 0 (the first rank) in full" in api.render_job_html(jr)


def test_the_rank_table_heads_its_share_in_the_ranks_words(
    slow_rank_job: tuple[Path, JobReport],
) -> None:
    """The per-rank share's head comes from the verdict section's words: 'TC share' on NVIDIA
    ranks, never on AMD ones (the HTML and Markdown rank tables both read it)."""
    _, jr = slow_rank_job
    assert jr.section.share_head == "TC share"
    amd = dataclasses.replace(jr.section, matrix_unit="AMD Matrix Cores")
    assert amd.share_head == "Matrix Cores share"
    assert "| rank | TC share |" in api.render_job_markdown(jr)


def test_a_part_beyond_the_whole_excess_is_not_called_most_of_it_synthetic(
    tmp_path: Path,
) -> None:
    """Rank 1's kernels (its all-reduce too) are all copies: 55 ms more copies and 40 ms less
    compute and idle than the others' median, 15 ms more in all. The parts are signed, so the
    line gives both, not 'most of it'."""
    paths = write_job(tmp_path, 3, slow=(2,))
    with gzip.open(paths[1], "rt") as fh:
        doc = json.load(fh)
    for e in doc["traceEvents"]:
        if e["cat"] == "kernel":
            e["cat"], e["name"] = "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)"
    with gzip.open(paths[1], "wt") as fh:
        json.dump(doc, fh)
    s = api.analyze_job(tmp_path).section.straggler
    assert s is not None and s.rank == 1
    assert "15.0 ms more per iteration" in s.text and "most of it" not in s.text
    assert "55.0 ms more memory copies/sets, 40.0 ms less in its other parts" in s.text


def test_a_straggler_in_some_iterations_only_is_said_so_by_dj001_synthetic(
    tmp_path: Path,
) -> None:
    """Rank 2 is 1 ms late in two steps, rank 0 10 ms late in the third: rank 0 is the job's
    straggler (3 ms beyond the others' median per step), and DJ001 does not put every wait on it."""
    write_job(tmp_path, 3, plan=[({2}, 1000), ({2}, 1000), ({0}, 10000)])
    job = api.analyze_job(tmp_path)
    s = job.section.straggler
    assert s is not None and (s.rank, s.named_in, s.of) == (0, 1, 3)
    assert s.excess_ns == pytest.approx(3e6)
    (f,) = [f for f in job.findings if f.id == "DJ001"]
    assert f.title.endswith("rank 0 is the straggler in 1 of 3 iterations"), f.title
    assert "10.0 ms" in f.detail and "other ranks are the slowest in the rest" in f.detail
