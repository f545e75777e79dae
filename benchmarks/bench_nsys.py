"""Time ``tcreport.ingest.load()`` on an Nsight Systems export against a bare ``sqlite3`` scan.

The baseline is the ``sqlite3`` command-line shell reading the same tables and columns the reader
needs (what any tool must at least pay to get the rows off disk), measured in the same run, so the
ratio means something on any machine. Peak RSS is printed for both.

    python benchmarks/grow_nsys.py sample_traces/nsys-h100x2-bf16/mfu_2gpu_after.sqlite /tmp/big.sqlite 1000
    python benchmarks/bench_nsys.py /tmp/big.sqlite
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

SCAN = """
SELECT COUNT(*), TOTAL("end" - start), TOTAL(shortName), TOTAL(correlationId), TOTAL(globalPid),
       TOTAL(deviceId + streamId + gridX + blockX)
  FROM CUPTI_ACTIVITY_KIND_KERNEL;
SELECT COUNT(*), TOTAL(start), TOTAL(correlationId), TOTAL(globalTid) FROM CUPTI_ACTIVITY_KIND_RUNTIME;
SELECT COUNT(*), TOTAL("end" - start), TOTAL(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY;
SELECT COUNT(*), TOTAL("end" - start), TOTAL(bytes) FROM CUPTI_ACTIVITY_KIND_MEMSET;
SELECT COUNT(*), TOTAL(start), TOTAL("end"), TOTAL(globalTid), TOTAL(LENGTH(text)) FROM NVTX_EVENTS
 WHERE eventType = 59;
"""


def _peak_mib(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # KiB on Linux


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    size = args.path.stat().st_size / 2**20

    shell = shutil.which("sqlite3")
    base: float | None = None
    if shell is None:
        print(
            "sqlite3 shell not found (apt-get install sqlite3); baseline skipped", file=sys.stderr
        )
    else:
        runs = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            subprocess.run(
                [shell, "-readonly", str(args.path)],
                input=SCAN,
                text=True,
                check=True,
                capture_output=True,
            )
            runs.append(time.perf_counter() - t0)
        base = min(runs)

    from tcreport.ingest import load

    best = float("inf")
    run = None
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        run = load(args.path)
        best = min(best, time.perf_counter() - t0)
    assert run is not None and run.kernels is not None
    ops = 0 if run.ops is None else run.ops.num_rows

    print(f"file                 {args.path} ({size:,.0f} MiB)")
    print(f"kernels / ops        {run.kernels.num_rows:,} / {ops:,}")
    if base is not None:
        print(
            f"sqlite3 shell scan   {base:8.2f} s   peak RSS {_peak_mib(resource.RUSAGE_CHILDREN):8.0f} MiB"
        )
    print(
        f"tcreport load()      {best:8.2f} s   peak RSS {_peak_mib(resource.RUSAGE_SELF):8.0f} MiB"
    )
    if base:
        print(f"ratio                {best / base:8.2f} x the bare scan")


if __name__ == "__main__":
    main()
