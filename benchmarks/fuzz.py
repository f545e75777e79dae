"""Long fuzz run of every reader family: per-family counts of cases, tracebacks, hangs, negatives.

Each case mutates a real trace (``tests/fuzzing.py`` has the mutators: values, types, NULLs, dropped
tables and columns, renamed headers, flipped and truncated bytes) and runs load -> analyze ->
summary JSON in this process. Counted per family:

* ``rejected``: a one-line TcreportError (the right answer for a damaged file);
* ``tracebacks``: anything else escaping (a bug), with each distinct signature and its first seed;
* ``known13``: tracebacks that issue 13 fixes (NVTX ``_op_row`` IndexError, NULL names in CV002);
* ``invariant``: an accepted input whose figures break an invariant (tcreport.analysis.invariants,
  run strictly here as in the tests, and any check in ``fuzzing.INVARIANT_CHECKS``);
* ``hangs``: a case still running after ``--hang`` seconds (SIGALRM);
* ``negative``: a summary with a negative time or share (issue 13's inverted intervals);
* ``peak_rss_mb``: this process's peak resident memory when the family ends (``ru_maxrss``; run
  one family per process, ``--family``, to attribute it).

An ``invariant`` case is a bug like a traceback: the run exits 1 when any case is one.

Families: ``nsys``, ``kineto``, ``dlprof-csv``, ``dlprof-json``, ``dlprof-sqlite`` (the Viewer
database), ``ncu``, ``xplane`` and ``ingest`` (``tcreport ingest`` folders: manifest and Parquet
values, see ``tests/fuzzing_ingest.py``).

Case ``i`` of family ``f`` uses ``random.Random(f"{f}:{i}")``, so any failure replays alone with
``--family f --start i --cases 1``.

    python benchmarks/fuzz.py --cases 10000                    # every family
    python benchmarks/fuzz.py --family nsys --cases 10000 --json /tmp/nsys.json
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import resource
import signal
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType

# the mutators live with the tests (tests/fuzzing.py), which import their helpers by bare name
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import fuzzing  # noqa: E402
import known_violations  # noqa: E402


class Hang(BaseException):
    pass


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise Hang


def run_family(
    fam: fuzzing.Family, start: int, cases: int, hang_s: int, every: int
) -> dict[str, object]:
    counts: collections.Counter[str] = collections.Counter()
    sigs: dict[str, list[int]] = {}  # signature -> [count, first seed]
    neg_fields: collections.Counter[str] = collections.Counter()
    started = time.perf_counter()
    signal.signal(signal.SIGALRM, _alarm)
    for i in range(start, start + cases):
        rng = random.Random(f"{fam.name}:{i}")
        with tempfile.TemporaryDirectory(prefix="tcreport-fuzz-") as tmp:
            src = fuzzing.pick_source(rng, fam)
            path = fam.mutate(rng, src, Path(tmp))
            signal.alarm(hang_s)
            try:
                v = fuzzing.verdict(path)
            except Hang:
                v = fuzzing.Verdict("hang", f"seed {i}")
            finally:
                signal.alarm(0)
        counts["cases"] += 1
        counts[v.kind] += 1
        if v.signature:
            if f"{v.kind}: {v.signature}" not in sigs:
                print(f"  new {v.kind} (seed {i}): {v.signature}", flush=True)
            entry = sigs.setdefault(f"{v.kind}: {v.signature}", [0, i])
            entry[0] += 1
        if v.negative:
            counts["negative"] += 1
            neg_fields.update({p.split("[")[0] for p in v.negative})
        if every and counts["cases"] % every == 0:
            print(
                f"  {fam.name}: {dict(counts)} ({time.perf_counter() - started:.0f} s)", flush=True
            )
    return {
        "family": fam.name,
        "cases": counts["cases"],
        "ok": counts["ok"],
        "rejected": counts["rejected"],
        "tracebacks": counts["traceback"],
        "known13": counts["known"],
        "hangs": counts["hang"],
        "invariant": counts["invariant"],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "negative": counts["negative"],
        "negative_fields": dict(neg_fields),
        "signatures": {k: {"count": n, "first_seed": s} for k, (n, s) in sigs.items()},
        "seconds": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", action="append", help="family name (repeatable; default: all)")
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--hang", type=int, default=60, help="seconds before a case counts as a hang")
    ap.add_argument("--every", type=int, default=500, help="progress line every N cases")
    ap.add_argument("--json", type=Path, help="also write the counts here")
    args = ap.parse_args()
    os.environ.update(known_violations.environ())  # a broken invariant is a bug, as in the tests
    with tempfile.TemporaryDirectory(prefix="tcreport-fuzz-src-") as scratch:
        fams = fuzzing.families(Path(scratch))
        names = args.family or sorted(fams)
        results = []
        for name in names:
            if name not in fams:
                print(f"{name}: no source files here, skipped")
                continue
            r = run_family(fams[name], args.start, args.cases, args.hang, args.every)
            results.append(r)
            print(json.dumps(r, indent=1), flush=True)
            if args.json:
                args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(
        "\nfamily         cases  tracebacks  invariant  known(issue 13)  hangs  negative  rejected"
        "      ok  peak RSS MB"
    )
    for r in results:
        print(
            f"{r['family']:<14}{r['cases']:>6}{r['tracebacks']:>12}{r['invariant']:>11}"
            f"{r['known13']:>17}{r['hangs']:>7}{r['negative']:>10}{r['rejected']:>10}{r['ok']:>8}"
            f"{r['peak_rss_mb']:>13}"
        )
    if any(r["invariant"] for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
