"""Time ``tcreport summary --json`` on an Nsight Systems export against a bare ``sqlite3`` scan.

The baseline is the ``sqlite3`` command-line shell reading every column of every table the reader
reads (what any tool must at least pay to get those rows off disk), run in the same session,
alternating with tcreport so that both see the same machine load; the ratio is taken pair by pair.
Both are child processes, measured with ``os.wait4``: wall time, CPU time (user + system) and peak
RSS of that one child. Issue #3's target: ratio <= 3, tcreport peak RSS <= 2 GiB.

    python benchmarks/grow_nsys.py sample_traces/nsys-h100x2-bf16/mfu_2gpu_after.sqlite /tmp/big.sqlite 1000
    python benchmarks/bench_nsys.py /tmp/big.sqlite --repeat 5
    python benchmarks/bench_nsys.py /tmp/big.sqlite --pythonpath /tmp/old-checkout  # another tree
    python benchmarks/bench_nsys.py /tmp/big.sqlite --report  # the HTML report, timeline included
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

#: The columns tcreport's nsys reader selects, table by table (see tcreport/ingest/nsys_*.py),
#: folded into aggregates so the shell prints five lines instead of millions.
SCAN = """
SELECT COUNT(*), TOTAL("end" - start), TOTAL(deviceId + streamId + correlationId), TOTAL(globalPid),
       TOTAL(shortName + demangledName), TOTAL(gridX + gridY + gridZ + blockX + blockY + blockZ)
  FROM CUPTI_ACTIVITY_KIND_KERNEL;
SELECT COUNT(*), TOTAL(start), TOTAL("end"), TOTAL(correlationId), TOTAL(globalTid)
  FROM CUPTI_ACTIVITY_KIND_RUNTIME;
SELECT COUNT(*), TOTAL("end" - start), TOTAL(deviceId + streamId + correlationId), TOTAL(globalPid),
       TOTAL(bytes + copyKind) FROM CUPTI_ACTIVITY_KIND_MEMCPY;
SELECT COUNT(*), TOTAL("end" - start), TOTAL(deviceId + streamId + correlationId), TOTAL(globalPid),
       TOTAL(bytes) FROM CUPTI_ACTIVITY_KIND_MEMSET;
SELECT COUNT(*), TOTAL(start), TOTAL("end"), TOTAL(eventType), TOTAL(globalTid), TOTAL(domainId),
       TOTAL(LENGTH(text)), TOTAL(textId) FROM NVTX_EVENTS;
"""


#: The scan issue #3 first quoted (4.0-4.3 s there): fewer columns (no eventType, domainId or
#: textId over all NVTX rows, no demangled names, y/z geometry, copy kinds). Kept for comparison.
SCAN_ISSUE = """
SELECT COUNT(*), TOTAL("end" - start), TOTAL(shortName), TOTAL(correlationId), TOTAL(globalPid),
       TOTAL(deviceId + streamId + gridX + blockX)
  FROM CUPTI_ACTIVITY_KIND_KERNEL;
SELECT COUNT(*), TOTAL(start), TOTAL(correlationId), TOTAL(globalTid) FROM CUPTI_ACTIVITY_KIND_RUNTIME;
SELECT COUNT(*), TOTAL("end" - start), TOTAL(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY;
SELECT COUNT(*), TOTAL("end" - start), TOTAL(bytes) FROM CUPTI_ACTIVITY_KIND_MEMSET;
SELECT COUNT(*), TOTAL(start), TOTAL("end"), TOTAL(globalTid), TOTAL(LENGTH(text)) FROM NVTX_EVENTS
 WHERE eventType = 59;
"""


@dataclass(frozen=True)
class Child:
    """One finished child process: wall seconds, CPU seconds (user + system), peak RSS in MiB."""

    wall: float
    cpu: float
    rss: float


def _run(argv: list[str], stdin: str = "", env: dict[str, str] | None = None) -> Child:
    """Spawn, feed ``stdin`` from a file, discard stdout, and reap with ``wait4`` so that the
    rusage is this child's alone (RUSAGE_CHILDREN would mix every child's peak)."""
    with tempfile.TemporaryFile() as inp, open(os.devnull, "wb") as out:
        inp.write(stdin.encode())
        inp.seek(0)
        t0 = time.perf_counter()
        pid = os.posix_spawnp(
            argv[0],
            argv,
            env or dict(os.environ),
            file_actions=[
                (os.POSIX_SPAWN_DUP2, inp.fileno(), 0),
                (os.POSIX_SPAWN_DUP2, out.fileno(), 1),
            ],
        )
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - t0
    if status != 0:
        sys.exit(f"{' '.join(argv)} failed (wait status {status})")
    return Child(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)  # KiB on Linux


def _machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        mem = next(
            int(line.split()[1]) / 2**20
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        )
    except (OSError, StopIteration):
        mem = float("nan")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{model}, {cores} cores, {mem:.0f} GiB RAM, {platform.system()} {platform.release()}"


def _fmt(xs: list[float], unit: str, digits: int = 2) -> str:
    lo, med, hi = min(xs), statistics.median(xs), max(xs)
    return f"{med:8.{digits}f} {unit} (range {lo:.{digits}f}-{hi:.{digits}f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pythonpath", type=Path, help="run tcreport from this source tree instead")
    ap.add_argument("--load-only", action="store_true", help="time api.load() instead of summary")
    ap.add_argument(
        "--report", action="store_true", help="time `tcreport report` (HTML with the timeline)"
    )
    args = ap.parse_args()
    env = dict(os.environ)
    if args.pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(args.pythonpath), env.get("PYTHONPATH")])
        )
    shell = shutil.which("sqlite3")
    if shell is None:
        sys.exit("sqlite3 shell not found (apt-get install sqlite3): no baseline, no ratio")
    # -P: no current directory on sys.path, so --pythonpath (or the installed tcreport) decides
    tcreport = [sys.executable, "-P", "-m", "tcreport", "summary", str(args.path), "--json"]
    if args.load_only:  # the reader's share: tcreport.api.load() alone, no analysis
        code = "import sys; from tcreport import api; api.load(sys.argv[1])"
        tcreport = [sys.executable, "-P", "-c", code, str(args.path)]
    out_dir = Path(tempfile.mkdtemp(prefix="bench-report-"))
    version = subprocess.run([shell, "--version"], capture_output=True, text=True).stdout.split()
    print(f"machine   {_machine()}")
    print(f"software  Python {platform.python_version()}, sqlite3 shell {version[0]}")
    print(f"file      {args.path} ({args.path.stat().st_size / 2**20:,.0f} MiB)")
    where = subprocess.run(
        [sys.executable, "-P", "-c", "import tcreport.ingest.nsys.reader as m; print(m.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(f"reader    {where}")
    print(f"load      {os.getloadavg()[0]:.2f} (1-min average, before)")
    scans: list[Child] = []
    issue_scans: list[Child] = []
    runs: list[Child] = []
    for i in range(args.repeat):
        scans.append(_run([shell, "-readonly", str(args.path)], SCAN))
        issue_scans.append(_run([shell, "-readonly", str(args.path)], SCAN_ISSUE))
        html = out_dir / f"report-{i}.html"
        argv = tcreport
        if args.report:  # the HTML report, timeline included, to a new file each run
            argv = [
                sys.executable,
                "-P",
                "-m",
                "tcreport",
                "report",
                str(args.path),
                "-o",
                str(html),
            ]
        runs.append(_run(argv, env=env))
        s, r = scans[-1], runs[-1]
        size = f", HTML {html.stat().st_size / 1e6:.2f} MB" if args.report else ""
        print(
            f"  run {i + 1}: scan {s.wall:6.2f} s (issue's scan {issue_scans[-1].wall:5.2f} s), "
            f"tcreport {r.wall:6.2f} s ({r.cpu:6.2f} s CPU, {r.rss:6.0f} MiB), "
            f"ratio {r.wall / s.wall:5.2f}{size}",
            flush=True,
        )
    shutil.rmtree(out_dir)
    print(f"load      {os.getloadavg()[0]:.2f} (1-min average, after)")
    ratios = [r.wall / s.wall for r, s in zip(runs, scans, strict=True)]
    issue_ratios = [r.wall / s.wall for r, s in zip(runs, issue_scans, strict=True)]
    what = "api.load()" if args.load_only else "report (HTML)" if args.report else "summary --json"
    for label, xs, unit, digits in (
        ("sqlite3 shell scan, wall", [s.wall for s in scans], "s", 2),
        ("sqlite3 shell scan, CPU", [s.cpu for s in scans], "s", 2),
        ("sqlite3 shell peak RSS", [s.rss for s in scans], "MiB", 0),
        (f"tcreport {what}, wall", [r.wall for r in runs], "s", 2),
        (f"tcreport {what}, CPU", [r.cpu for r in runs], "s", 2),
        ("tcreport peak RSS", [r.rss for r in runs], "MiB", 0),
        ("issue's narrower scan, wall", [s.wall for s in issue_scans], "s", 2),
        ("ratio (wall, run by run)", ratios, "x", 2),
        ("ratio to the issue's scan", issue_ratios, "x", 2),
    ):
        print(f"{label:30s} {_fmt(xs, unit, digits)}")
    print("target (issue #3)              ratio <= 3 x, tcreport peak RSS <= 2048 MiB")


if __name__ == "__main__":
    main()
