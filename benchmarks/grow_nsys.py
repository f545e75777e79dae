"""Grow a real Nsight Systems export N times, to time the reader on production-sized files.

Each copy of the activity rows (kernels, runtime calls, copies, memsets, syncs, NVTX ranges) is
shifted past the end of the previous one and gets correlation ids of its own, so joins and NVTX
nesting stay as valid as in the original. ``StringIds`` and metadata are left as they are.

Copies repeat the original's NVTX texts, so the grown file has as few distinct texts as the
original (16.5 thousand), where a real long autograd-nvtx run numbers every range
(``op_id = 993403``). ``--unique-text`` makes those numbers unique per copy, for the realistic
case: millions of distinct texts.

    python benchmarks/grow_nsys.py sample_traces/nsys-h100x2-bf16/mfu_2gpu_after.sqlite /tmp/big.sqlite 1000
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import time
from pathlib import Path

TABLES = (
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    "NVTX_EVENTS",
)


def grow(src: Path, dst: Path, times: int, unique_text: bool = False) -> None:
    shutil.copyfile(src, dst)
    con = sqlite3.connect(dst)
    names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    tables = [t for t in TABLES if t in names]
    lo, hi, corr = 0, 0, 0
    for t in tables:
        a, b = con.execute(f'SELECT MIN(start), MAX("end") FROM {t}').fetchone()
        if a is not None:
            lo = a if lo == 0 else min(lo, a)
            hi = max(hi, b or a)
        cols = [r[1] for r in con.execute(f'PRAGMA table_info("{t}")')]
        if "correlationId" in cols:
            corr = max(corr, con.execute(f"SELECT MAX(correlationId) FROM {t}").fetchone()[0] or 0)
    span = hi - lo + 1_000_000
    rows = {t: con.execute(f"SELECT MAX(rowid) FROM {t}").fetchone()[0] or 0 for t in tables}
    con.execute("PRAGMA journal_mode=OFF")
    con.execute("PRAGMA synchronous=OFF")
    for k in range(1, times):
        for t in tables:
            cols = [r[1] for r in con.execute(f'PRAGMA table_info("{t}")')]
            expr = []
            for c in cols:
                if c in ("start", "end"):
                    expr.append(f'"{c}" + {k * span}')
                elif c == "correlationId":
                    expr.append(f'"{c}" + {k * (corr + 1)}')
                elif c == "text" and unique_text:
                    expr.append(f"replace(\"text\", 'op_id = ', 'op_id = {k:05d}')")
                else:
                    expr.append(f'"{c}"')
            quoted = ", ".join(f'"{c}"' for c in cols)
            con.execute(
                f"INSERT INTO {t} ({quoted}) SELECT {', '.join(expr)} FROM {t} WHERE rowid <= {rows[t]}"
            )
        if k % 50 == 0:
            con.commit()
    con.commit()
    con.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    ap.add_argument("times", type=int)
    ap.add_argument("--unique-text", action="store_true", help="renumber op_id = N per copy")
    args = ap.parse_args()
    t0 = time.perf_counter()
    grow(args.src, args.dst, args.times, args.unique_text)
    con = sqlite3.connect(args.dst)
    n = con.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    con.close()
    size = args.dst.stat().st_size / 2**20
    print(f"{args.dst}: {n:,} kernels, {size:,.0f} MiB, grown in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
