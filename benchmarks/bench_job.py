"""Distributed jobs at scale: N synthetic ranks grown from a shared Kineto trace, read as one job.

Issue #23's bound: reading N ranks costs no more memory than the largest rank plus the per-rank
figures (the ranks are analysed one at a time; each rank's tables are dropped before the next is
read). So the figure to watch is the job's peak RSS over one rank's, both measured here in the same
run as child processes reaped with ``os.wait4`` (wall, CPU, peak RSS of that child alone):

* ``one rank``: ``tcreport summary --json RANK0`` (the baseline);
* ``job``: ``tcreport summary --json JOBDIR`` (every rank, the job section, the straggler);
* ``--report``: ``tcreport report JOBDIR`` as well (the straggler's timeline included);
* ``--dask W``: ``tcreport batch`` of the job on a local Dask cluster of W worker processes (the
  ranks fan out over the workers); wall time, and each worker's peak RSS (``ru_maxrss``).

Ranks: the source trace (default: the largest Kineto trace under ../shared/realtraces) grown
``--grow`` times in time (benchmarks/grow_kineto.py), then one file per rank. Without
``distributedInfo`` in the source (the V100 ResNet-50 trace has none) the ranks are hard links
named ``trace.rank-N.json`` (a job by file names: N reads of one file, from the page cache); with
it, each rank is a copy whose ``distributedInfo`` names its rank.

    python benchmarks/bench_job.py --ranks 8 --repeat 2
    python benchmarks/bench_job.py --ranks 64 --repeat 1 --dask 2
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import grow_kineto  # noqa: E402

SHARED = HERE.parent.parent / "shared" / "realtraces" / "kineto"
_DIST = re.compile(rb'"distributedInfo"\s*:\s*\{[^{}]*\}')


@dataclass(frozen=True)
class Child:
    wall: float
    cpu: float
    rss_mib: float


def _run(argv: list[str]) -> Child:
    """Spawn with stdout discarded; ``wait4`` gives this child's own rusage."""
    with open(os.devnull, "wb") as out:
        t0 = time.perf_counter()
        env = dict(os.environ)
        pid = os.posix_spawnp(
            argv[0], argv, env, file_actions=[(os.POSIX_SPAWN_DUP2, out.fileno(), 1)]
        )
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - t0
    if status != 0:
        sys.exit(f"{' '.join(argv)} failed (wait status {status})")
    return Child(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def largest_kineto() -> Path:
    traces = sorted(SHARED.glob("*/*.json.gz"), key=lambda p: p.stat().st_size)
    if not traces:
        sys.exit(f"no Kineto traces under {SHARED}; give --src")
    return traces[-1]


def make_ranks(src: Path, grow: int, ranks: int, folder: Path) -> Path:
    """``folder/job`` holding ``ranks`` rank traces of ``src`` grown ``grow`` times."""
    base = folder / "base.json"
    grow_kineto.grow(src, base, grow)
    job = folder / "job"
    job.mkdir()
    head = base.open("rb").read(1 << 20)
    if _DIST.search(head) is None:
        for r in range(ranks):
            os.link(base, job / f"trace.rank-{r}.json")
        return job
    text = base.read_bytes()
    for r in range(ranks):
        info = f'"distributedInfo":{{"backend":"nccl","rank":{r},"world_size":{ranks}}}'
        (job / f"trace.rank-{r}.json").write_bytes(_DIST.sub(info.encode(), text, count=1))
    return job


def _machine() -> str:
    model = next(
        (ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
         if ln.startswith("model name")),
        "unknown CPU",
    )  # fmt: skip
    return f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}"


def _series(label: str, argv: list[str], repeat: int) -> list[Child]:
    runs = [_run(argv) for _ in range(repeat)]
    wall = [c.wall for c in runs]
    rss = [c.rss_mib for c in runs]
    print(
        f"| {label} | {min(wall):.1f}-{max(wall):.1f} s | "
        f"{statistics.median(c.cpu for c in runs):.1f} s | {min(rss):,.0f}-{max(rss):,.0f} MiB |",
        flush=True,
    )
    return runs


def _dask(job: Path, workers: int, out: Path) -> None:
    """``batch`` of the job's folder on a local cluster; the workers' own peak RSS."""
    import resource

    import distributed

    from tcreport.batch import runner

    def peak() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    cluster = distributed.LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
    )
    client = distributed.Client(cluster)  # type: ignore[no-untyped-call]
    with cluster, client:
        t0 = time.perf_counter()
        result = runner.run_batch(
            job, out, executor=runner.Executor.DASK, scheduler=cluster.scheduler_address
        )
        wall = time.perf_counter() - t0
        peaks = client.run(peak)
    assert result.processed == 1 and not result.failed, result
    rss = ", ".join(f"{v:,.0f}" for v in sorted(peaks.values()))
    print(f"| `batch --executor dask` ({workers} workers, 1 thread each) | {wall:.1f} s | "
          f"- | workers: {rss} MiB |")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--src", type=Path, help="a Kineto trace (default: the largest shared one)")
    ap.add_argument("--grow", type=int, default=1, help="copies of its events per rank")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--report", action="store_true", help="also time `tcreport report` of the job")
    ap.add_argument("--dask", type=int, default=0, metavar="W", help="also batch on W Dask workers")
    ap.add_argument("--tmp", type=Path, default=None, help="scratch folder (default: a temp dir)")
    args = ap.parse_args()
    src = args.src or largest_kineto()
    tool = shutil.which("tcreport") or sys.exit("tcreport is not on PATH")
    scratch = Path(tempfile.mkdtemp(prefix="bench-job-", dir=args.tmp))
    try:
        job = make_ranks(src, args.grow, args.ranks, scratch)
        size = (job / "trace.rank-0.json").stat().st_size / 2**20
        print(f"{_machine()}; load {os.getloadavg()[0]:.2f}")
        print(f"{args.ranks} ranks of {src.name} grown x{args.grow}: {size:,.0f} MiB each\n")
        print("| | wall | CPU | peak RSS |\n|---|---|---|---|")
        one = _series(
            "one rank: `summary --json RANK0`",
            [tool, "summary", "--json", str(job / "trace.rank-0.json")],
            args.repeat,
        )
        many = _series(
            f"job: `summary --json` of {args.ranks} ranks",
            [tool, "summary", "--json", str(job)],
            args.repeat,
        )
        if args.report:
            _series(
                f"job: `report` of {args.ranks} ranks",
                [tool, "report", str(job), "-o", str(scratch / "r.html")],
                args.repeat,
            )
        if args.dask:
            _dask(job, args.dask, scratch / "out")
        ratio = max(c.rss_mib for c in many) / min(c.rss_mib for c in one)
        print(
            f"\npeak RSS, job over one rank (worst over best): {ratio:.2f}x; load {os.getloadavg()[0]:.2f}"
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
