"""Two ``tcreport batch`` runs into one OUT at the same time, N trials: does every run survive?

Each trial starts two CLI processes (``--jobs 2``) on a copy of ``../shared/realtraces`` into a fresh
OUT at the same instant. The batch lock lets one write and makes the other exit 4 with one line
(or, when the first finished before the second looked, the second skips everything and exits 0).
Counted per trial: every expected source present in ``runs`` exactly once, no duplicate run id, no
leftover staging file, the exit codes, and any ``Traceback`` on stderr.

    python benchmarks/batch_concurrent.py --trials 20
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TypedDict

import pyarrow.dataset as ds

ROOT = Path(__file__).resolve().parent.parent
REALTRACES = Path(os.environ.get("TCREPORT_REALTRACES", ROOT.parent / "shared" / "realtraces"))


def _batch(inp: Path, out: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "tcreport", "batch", str(inp), "-o", str(out), "-j", "2"]
    return subprocess.Popen(
        cmd, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
    )


class Trial(TypedDict):
    """What one trial of two concurrent batches left behind."""

    codes: tuple[int, ...]
    runs_ok: bool
    dup_ids: int
    tracebacks: int
    refusal_one_line: bool
    refused: int
    staging_left: bool


def trial(inp: Path, out: Path, expected: int) -> Trial:
    procs = [_batch(inp, out), _batch(inp, out)]
    errs = [p.communicate(timeout=600)[1] for p in procs]
    codes = sorted(p.returncode for p in procs)
    runs = ds.dataset(out / "dataset" / "runs", format="parquet", partitioning="hive").to_table()
    sources = collections.Counter(runs.column("source").to_pylist())
    ids = collections.Counter(runs.column("run_id").to_pylist())
    refused = [e for e in errs if "another tcreport batch" in e]
    return {
        "codes": tuple(codes),
        "runs_ok": len(sources) == expected and set(sources.values()) == {1},
        "dup_ids": sum(n - 1 for n in ids.values()),
        "tracebacks": sum("Traceback" in e for e in errs),
        "refusal_one_line": all(e.strip().count("\n") == 0 for e in refused),
        "refused": len(refused),
        "staging_left": any((out / ".staging").rglob("*"))
        if (out / ".staging").exists()
        else False,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tcreport-concurrent-") as tmp:
        inp = Path(tmp) / "in"
        shutil.copytree(REALTRACES, inp)
        first = Path(tmp) / "probe"
        subprocess.run(
            [sys.executable, "-m", "tcreport", "batch", str(inp), "-o", str(first)],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            check=False,
        )
        probe = ds.dataset(first / "dataset" / "runs", format="parquet", partitioning="hive")
        expected = probe.count_rows()
        totals: collections.Counter[str] = collections.Counter()
        for i in range(args.trials):
            r = trial(inp, Path(tmp) / f"out{i}", expected)
            print(f"trial {i + 1:2d}: {r}", flush=True)
            totals["all runs once"] += bool(r["runs_ok"]) and r["dup_ids"] == 0
            totals["one refused (exit 4, one line)"] += r["refused"] == 1 and bool(
                r["refusal_one_line"]
            )
            totals["tracebacks"] += r["tracebacks"]
            totals["staging left"] += bool(r["staging_left"])
            totals[f"exit codes {r['codes']}"] += 1
            shutil.rmtree(Path(tmp) / f"out{i}")
    print(f"\n{args.trials} trials, {expected} runs each:")
    for k, v in totals.items():
        print(f"  {k}: {v}")


if __name__ == "__main__":
    main()
