"""Time and peak memory of ``tcreport.ingest.load()`` on a Kineto trace against HTA on the same file.

The baseline is Holistic Trace Analysis (PyPI ``HolisticTraceAnalysis``), the tool PyTorch users
already load these traces with: ``TraceAnalysis(trace_dir=...)`` parses every rank's trace into
DataFrames. Both run in fresh subprocesses, one after the other, in the same run of this script,
so the ratio means something on any machine; peak RSS is each process's own (``wait4``), imports
included, and the time is the load call alone, measured inside the child.

HTA pulls in pandas and friends, so it usually lives in a virtual environment of its own; point
``--hta-python`` at that interpreter (default: this one). ``--tcreport-python`` does the same for
tcreport, to compare with and without the ``[fast]`` extra (msgspec; without it tcreport parses
with the ``json`` module), or with an older checkout on ``PYTHONPATH`` in a wrapper script.

    python -m venv /tmp/hta && /tmp/hta/bin/pip install HolisticTraceAnalysis
    python benchmarks/grow_kineto.py ../shared/realtraces/kineto/v100-legacy-resnet50/*.json.gz \\
        /tmp/kineto-big/worker0.pt.trace.json 8
    python benchmarks/bench_kineto.py /tmp/kineto-big/worker0.pt.trace.json --hta-python /tmp/hta/bin/python

``--command`` compares what a user runs instead of the load call: ``tcreport summary --json``
(read, analysis, JSON; the CLI's own start-up and imports included) against HTA loading the trace
and computing its temporal breakdown (``get_temporal_breakdown``: idle, compute and non-compute
time per rank, the closest HTA figure to tcreport's step breakdown). Each process's CPU time
(user + system, from ``wait4``) is the main figure: on a shared machine it moves much less than
wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

TCREPORT = """
import json, logging, sys, time
from pathlib import Path
from tcreport.ingest import load
from tcreport.ingest.kineto import reader as kineto_json
gave_up = []
class Note(logging.Handler):
    def emit(self, record):
        gave_up.append(record.getMessage())
log = logging.getLogger("tcreport.ingest.kineto.reader")
log.addHandler(Note())
log.setLevel(logging.DEBUG)
t0 = time.perf_counter()
run = load(Path(sys.argv[1]))
dt = time.perf_counter() - t0
fast = getattr(kineto_json, "fast", None)  # None: msgspec missing, or a tcreport before it
note = "msgspec" if fast is not None and not gave_up else "json"
if gave_up:
    note += " (msgspec gave up: " + gave_up[0][-80:] + ")"
print(json.dumps({"seconds": dt, "rows": run.kernels.num_rows, "note": note}))
"""

HTA = """
import json, logging, sys, time
from importlib.metadata import version
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
t0 = time.perf_counter()
ta = TraceAnalysis(trace_dir=sys.argv[1])
dt = time.perf_counter() - t0
df = ta.t.get_trace(0)
ids = ta.t.symbol_table.get_sym_id_map()
kernels = int(df["cat"].isin([ids[c] for c in ("kernel", "Kernel") if c in ids]).sum())
note = f"HTA {version('HolisticTraceAnalysis')}, {len(df):,} events kept"
print(json.dumps({"seconds": dt, "rows": kernels, "note": note}))
"""

HTA_BREAKDOWN = """
import json, logging, sys, time
from importlib.metadata import version
logging.disable(logging.WARNING)
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
ta = TraceAnalysis(trace_dir=sys.argv[1])
bd = ta.get_temporal_breakdown(visualize=False)
dt = time.perf_counter() - t0
note = f"HTA {version('HolisticTraceAnalysis')}, idle {float(bd['idle_time_pctg'].iloc[0]):.1f} %"
print(json.dumps({"seconds": dt, "rows": len(bd), "note": note}))
"""
#: ``tcreport summary --json`` as the console script runs it (``python -m tcreport`` is the same
#: entry point); the JSON goes to a temporary file, the process's own numbers are what count.
SUMMARY = """
import sys, time
sys.argv = ["tcreport", "summary", sys.argv[1], "--json"]
try:
    from tcreport.cli import command  # the console script's entry (quick exit, cli/_exit.py)
except ImportError:  # a baseline tree from before it
    from tcreport.cli import main as command
command()
"""


@dataclass
class Sample:
    seconds: float
    wall: float
    peak_mib: float
    rows: int
    note: str
    cpu: float = 0.0  # user + system seconds of the child (wait4)


def _one(python: str, code: str, arg: str) -> Sample:
    """Run ``code`` in a fresh interpreter; its peak RSS comes from wait4, not from a guess."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = os.times().elapsed
        proc = subprocess.Popen([python, "-c", code, arg], stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = os.times().elapsed - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, errors = out.read().decode(), err.read().decode(errors="replace")
    if proc.returncode != 0:
        last = (errors.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"exit {proc.returncode}: {last}")
    cpu = usage.ru_utime + usage.ru_stime
    if code is SUMMARY:  # the command prints nothing of its own to read back
        return Sample(wall, wall, usage.ru_maxrss / 1024, 0, "summary --json", cpu)
    res = json.loads(text.strip().splitlines()[-1])
    peak = usage.ru_maxrss / 1024
    return Sample(res["seconds"], wall, peak, res["rows"], res["note"], cpu)


def _span(values: list[float], fmt: str) -> str:
    """low-high, or low-median-high from three values on (the form benchmarks/README.md uses)."""
    lo, hi = min(values), max(values)
    if f"{lo:{fmt}}" == f"{hi:{fmt}}":
        return f"{lo:{fmt}}"
    if len(values) < 3:
        return f"{lo:{fmt}}-{hi:{fmt}}"
    return f"{lo:{fmt}}-{statistics.median(values):{fmt}}-{hi:{fmt}}"


def _report(args: argparse.Namespace, ours: list[Sample], theirs: list[Sample]) -> None:
    ratio = [t.seconds / o.seconds for o, t in zip(ours, theirs, strict=False)]
    mem = [o.peak_mib / t.peak_mib for o, t in zip(ours, theirs, strict=False)]
    if not args.command:
        labels = ("tcreport load()", "HTA TraceAnalysis")
        for label, s in zip(labels, (ours, theirs), strict=False):
            print(
                f"{label:<20} {_span([x.seconds for x in s], '.2f'):>12} s   "
                f"peak RSS {_span([x.peak_mib for x in s], ',.0f'):>13} MiB   "
                f"(process wall {_span([x.wall for x in s], '.1f')} s; "
                f"{s[0].rows:,} kernels; {s[0].note})"
            )
        if theirs:
            print(
                f"ratio                tcreport is {_span(ratio, '.1f')}x faster, "
                f"uses {_span(mem, '.2f')}x HTA's peak memory (target: >= 3x faster, "
                "<= 0.5x memory)"
            )
        return
    labels = ("tcreport summary", "HTA breakdown")
    for label, s in zip(labels, (ours, theirs), strict=False):
        print(
            f"{label:<20} CPU {_span([x.cpu for x in s], '.2f'):>11} s   "
            f"wall {_span([x.wall for x in s], '.2f'):>11} s   "
            f"peak RSS {_span([x.peak_mib for x in s], ',.0f'):>11} MiB   ({s[0].note})"
        )
    if theirs:
        cpu = [t.cpu / o.cpu for o, t in zip(ours, theirs, strict=False)]
        print(
            f"ratio                tcreport is {_span(cpu, '.1f')}x faster in CPU time "
            f"({_span(ratio, '.1f')}x in wall time), uses {_span(mem, '.2f')}x HTA's peak "
            "memory (target: >= 10x, peak <= 250 MiB)"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("trace", type=Path, help="a Kineto .json trace (alone in its folder, for HTA)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hta-python", default=sys.executable)
    ap.add_argument(
        "--tcreport-python",
        default=sys.executable,
        help="interpreter with tcreport installed (with or without the [fast] extra: msgspec)",
    )
    ap.add_argument(
        "--command",
        action="store_true",
        help="whole commands: `tcreport summary --json` against HTA's load + temporal breakdown",
    )
    ap.add_argument(
        "--baseline-python",
        help="with --command: another tcreport (say an older tree on PYTHONPATH in a wrapper "
        "script) run in the same alternation, its CPU time compared with this one's",
    )
    args = ap.parse_args()
    trace = args.trace.resolve()
    size = trace.stat().st_size / 2**20
    others = [p.name for p in trace.parent.iterdir() if p.is_file() and p != trace]
    if others:
        sys.exit(f"{trace.parent}: HTA loads every trace in the folder; move {others[0]} out")
    ours_code, theirs_code = (SUMMARY, HTA_BREAKDOWN) if args.command else (TCREPORT, HTA)

    ours: list[Sample] = []
    theirs: list[Sample] = []
    base: list[Sample] = []
    hta_error = None
    load = []
    for _ in range(args.repeat):  # interleaved, so drift in a shared machine hits both alike
        load.append(os.getloadavg()[0])
        if args.command and args.baseline_python:
            base.append(_one(args.baseline_python, ours_code, str(trace)))
        ours.append(_one(args.tcreport_python, ours_code, str(trace)))
        if hta_error is None:
            try:
                theirs.append(_one(args.hta_python, theirs_code, str(trace.parent)))
            except (RuntimeError, OSError, ValueError) as exc:
                hta_error = str(exc)

    print(
        f"trace                {trace} ({size:,.0f} MiB), {args.repeat} runs each, "
        f"load average {_span(load, '.1f')}"
    )
    if base:
        rel = [o.cpu / b.cpu for o, b in zip(ours, base, strict=True)]
        print(
            f"{'baseline summary':<20} CPU {_span([x.cpu for x in base], '.2f'):>11} s   "
            f"wall {_span([x.wall for x in base], '.2f'):>11} s   "
            f"peak RSS {_span([x.peak_mib for x in base], ',.0f'):>11} MiB   "
            f"(this tree's CPU: {_span(rel, '.2f')}x the baseline's)"
        )
    _report(args, ours, theirs)
    if hta_error:
        print(f"HTA failed: {hta_error}")


if __name__ == "__main__":
    main()
