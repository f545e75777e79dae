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
"""

from __future__ import annotations

import argparse
import json
import os
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


@dataclass
class Sample:
    seconds: float
    wall: float
    peak_mib: float
    rows: int
    note: str


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
    res = json.loads(text.strip().splitlines()[-1])
    return Sample(res["seconds"], wall, usage.ru_maxrss / 1024, res["rows"], res["note"])


def _span(values: list[float], fmt: str) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:{fmt}}" if f"{lo:{fmt}}" == f"{hi:{fmt}}" else f"{lo:{fmt}}-{hi:{fmt}}"


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
    args = ap.parse_args()
    trace = args.trace.resolve()
    size = trace.stat().st_size / 2**20
    others = [p.name for p in trace.parent.iterdir() if p.is_file() and p != trace]
    if others:
        sys.exit(f"{trace.parent}: HTA loads every trace in the folder; move {others[0]} out")

    ours: list[Sample] = []
    theirs: list[Sample] = []
    hta_error = None
    for _ in range(args.repeat):  # interleaved, so drift in a shared machine hits both alike
        ours.append(_one(args.tcreport_python, TCREPORT, str(trace)))
        if hta_error is None:
            try:
                theirs.append(_one(args.hta_python, HTA, str(trace.parent)))
            except (RuntimeError, OSError, ValueError) as exc:
                hta_error = str(exc)

    print(f"trace                {trace} ({size:,.0f} MiB), {args.repeat} runs each")
    rows = [("tcreport load()", ours)] + ([("HTA TraceAnalysis", theirs)] if theirs else [])
    for label, s in rows:
        print(
            f"{label:<20} {_span([x.seconds for x in s], '.2f'):>12} s   "
            f"peak RSS {_span([x.peak_mib for x in s], ',.0f'):>13} MiB   "
            f"(process wall {_span([x.wall for x in s], '.1f')} s; "
            f"{s[0].rows:,} kernels; {s[0].note})"
        )
    if hta_error:
        print(f"HTA failed: {hta_error}")
    if theirs:
        speed = [t.seconds / o.seconds for o, t in zip(ours, theirs, strict=False)]
        mem = [o.peak_mib / t.peak_mib for o, t in zip(ours, theirs, strict=False)]
        print(
            f"ratio                tcreport is {_span(speed, '.1f')}x faster, "
            f"uses {_span(mem, '.2f')}x HTA's peak memory (target: >= 3x faster, <= 0.5x memory)"
        )


if __name__ == "__main__":
    main()
