"""Transient memory of each analysis step on one trace: how far RSS rises above where it started.

``tcreport.api.analyze`` runs its steps one after the other over run tables that already hold
most of the process's memory (~1.3-1.45 GiB on the x1000 Nsight Systems export); what decides
whether two steps can run side by side under a memory ceiling is how much each one adds on top
of that while it runs, and for how long. This script loads the trace, then wraps each step of
:func:`tcreport.analysis.result.compute` (and, with ``--detail``, the functions inside the
costly ones) so that each call records its start RSS, its CPU time and its wall time, while a
thread samples ``/proc/self/statm`` every 10 ms; a step's transient is the highest sample during
the call minus its start RSS. Nested calls are listed under their caller, indented.

    python benchmarks/analysis_memory.py /tmp/big.sqlite
    python benchmarks/analysis_memory.py /tmp/big.sqlite --detail
    python benchmarks/analysis_memory.py /tmp/big.sqlite --no-timeline  # as summary --json
    python benchmarks/analysis_memory.py /tmp/big.sqlite --trim --repeat 3
    python benchmarks/analysis_memory.py /tmp/big.sqlite --pythonpath /tmp/old-checkout
    python benchmarks/analysis_memory.py /tmp/big.sqlite --trim --repeat 3 --baseline /tmp/old

``--baseline TREE`` runs the script twice in child processes (a fresh heap each), on TREE and
on this tree (or ``--pythonpath``), and prints the two side by side: the baseline measured in
the same run, as every benchmark here does. TREE holds a ``tcreport`` package, e.g. from
``git archive <commit> tcreport | tar -x -C TREE``.

The Arrow memory pool is the system allocator, and pandas is refused, as the CLI does both. glibc keeps part of what a
step frees and hands it to the next step, so a step's transient depends on what ran before it;
``--trim`` returns the free heap to the system (``malloc_trim``) before each step, so that each
figure is what the step itself needs, the same from run to run. ``--repeat`` analyses the loaded
run again and prints each step's lowest and highest figure. CPU time is that of the whole
process during the call (the sampler thread's share is small), so it stays comparable when the
machine is busy; wall time does not, and is printed for completeness only.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import ctypes.util
import functools
import importlib
import inspect
import json
import os
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

_PAGE = os.sysconf("SC_PAGE_SIZE")

#: The steps of ``result.compute`` (module, function), as the brief of the analysis names them.
STEPS = [
    ("tcreport.analysis.result", "_classify"),
    ("tcreport.analysis.result", "_suggestions"),
    ("tcreport.analysis.figures", "time_figures"),
    ("tcreport.analysis.figures", "op_rows"),
    ("tcreport.analysis.figures", "tc_figures"),
    ("tcreport.analysis.figures", "kernel_rows"),
    ("tcreport.analysis.timeline", "kernel_timeline"),
    ("tcreport.analysis.result", "_steps"),
    ("tcreport.analysis.result", "_why_not"),
    ("tcreport.analysis.result", "_throughput"),
    ("tcreport.analysis.result", "_per_name"),
    ("tcreport.analysis.autotune", "autotuned_ops"),
    ("tcreport.analysis.devices", "device_rows"),
    ("tcreport.analysis.result", "_op_agreements"),
    ("tcreport.analysis.result", "_agreement"),
    ("tcreport.analysis.timeline", "host_markers"),
    ("tcreport.analysis.compilation", "compilation"),
    ("tcreport.analysis.derived", "iteration_rows"),
    ("tcreport.analysis.communication", "communication"),
    ("tcreport.analysis.counters", "disagreements"),
    # the sections' builders (tcreport.analysis.sections), each labelled by its section
    *(
        (f"tcreport.analysis.sections.{section}", "build")
        for section in (
            "time",
            "breakdown",
            "host",
            "verdict",
            "precision",
            "signals",
            "iterations",
            "steps",
            "communication",
        )
    ),
    ("tcreport.analysis.invariants", "enforce"),
]

#: Functions inside the costly steps, wrapped with ``--detail`` (patched where they are looked
#: up: a ``from x import f`` binding is patched in the importing module as well).
DETAIL = [
    ("tcreport.analysis.tc_kernels", "classify_kernels"),
    ("tcreport.analysis.eligibility", "classify_ops"),
    ("tcreport.analysis.activity", "collect"),
    ("tcreport.analysis.steps", "breakdown_with_gaps"),
    ("tcreport.analysis.steps", "host_intervals"),
    ("tcreport.analysis.steps", "_group_keys"),
    ("tcreport.analysis.sweep", "sweep"),
    ("tcreport.analysis.overlap", "from_steps"),
    ("tcreport.analysis.iteration_timeline", "build"),
    ("tcreport.analysis.iteration_timeline", "_host"),
    ("tcreport.analysis.iteration_timeline", "_gpu_lanes"),
    ("tcreport.analysis.throughput", "compute"),
]


class _NoPandas:
    """As the ``tcreport`` command runs (tcreport/_no_pandas.py, inlined so that a ``--baseline``
    tree from before it is measured the same way): pyarrow, finding no pandas, imports none on
    its first conversion (~40 MiB). ``--pandas`` measures what a notebook process pays."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError("refused, as the tcreport command does", name=name)


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE / 2**20


@dataclass
class Call:
    name: str
    depth: int
    run: int
    t0: float
    t1: float
    cpu_s: float
    rss0: float


def _malloc_trim() -> Callable[[], None]:
    trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim

    def run() -> None:
        trim(0)

    return run


class Recorder:
    def __init__(self, trim: bool, period_s: float = 0.01) -> None:
        self.samples: list[tuple[float, float]] = []
        self.calls: list[Call] = []
        self.depth = 0
        self.run = 0
        self.trim = _malloc_trim() if trim else None
        self._stop = threading.Event()
        self._period = period_s
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.perf_counter(), rss_mib()))
            time.sleep(self._period)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def peak(self, a: float, b: float, floor: float) -> float:
        return max((m for t, m in self.samples if a <= t <= b), default=floor)

    def wrap(self, module: str, name: str) -> bool:
        """Record every call of ``module.name``; False when this tree has no such function (the
        steps are named as in this tree, and a ``--baseline`` tree may predate or rename some)."""
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError:
            return False
        original = getattr(mod, name, None)
        if original is None:
            return False

        # every section's builder is a ``build``: named by its section
        label = f"{module.rsplit('.', 1)[1]}.{name}" if name == "build" else name

        @functools.wraps(original)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if self.trim is not None and self.depth == 0:
                self.trim()
            call = Call(
                label,
                self.depth,
                self.run,
                time.perf_counter(),
                0.0,
                time.process_time(),
                rss_mib(),
            )
            self.calls.append(call)
            self.depth += 1
            try:
                return original(*args, **kwargs)
            finally:
                self.depth -= 1
                call.t1 = time.perf_counter()
                call.cpu_s = time.process_time() - call.cpu_s

        _patch(original, wrapped)
        return True


def _patch(original: Callable[..., Any], wrapped: Callable[..., Any]) -> None:
    """Replace ``original`` wherever a tcreport module binds it."""
    for mod in list(sys.modules.values()):
        if getattr(mod, "__name__", "").startswith("tcreport"):
            for attr, value in list(vars(mod).items()):
                if value is original:
                    setattr(mod, attr, wrapped)


@dataclass
class Row:
    """One step of the first analysis, with its range over every analysis."""

    label: str
    up_min: float
    up_max: float
    cpu_min: float
    cpu_max: float


def measure(args: argparse.Namespace) -> tuple[list[str], list[Row]]:
    """Load, analyse ``--repeat`` times, and return the summary lines and one row per step."""
    from tcreport import api

    lines = [f"tcreport from {os.path.dirname(api.__file__)}"]
    for module in {m for m, _ in STEPS + DETAIL}:  # every binding exists before patching
        with contextlib.suppress(ModuleNotFoundError):  # an older --baseline tree
            importlib.import_module(module)
    rec = Recorder(args.trim)
    rec.start()
    t = time.perf_counter()
    run = api.load(args.path)
    t1 = time.perf_counter()
    lines.append(
        f"load: {t1 - t:.1f} s wall, peak {rec.peak(t, t1, 0.0):,.0f} MiB, "
        f"RSS after {rss_mib():,.0f} MiB"
    )
    absent = [
        f"{module.rsplit('.', 1)[1]}.{name}"
        for module, name in STEPS + (DETAIL if args.detail else [])
        if not rec.wrap(module, name)
    ]
    if absent:
        lines.append("not in this tree: " + ", ".join(absent))
    # a tree from before the timeline option analyses as it always did (and says so)
    timeline: dict[str, Any] = {"with_timeline": not args.no_timeline}
    if "with_timeline" not in inspect.signature(api.analyze).parameters:
        timeline = {}
        lines.append("analyze() has no with_timeline in this tree: its one analysis is measured")
    for i in range(args.repeat):
        rec.run = i
        rss0, cpu0 = rss_mib(), time.process_time()
        a0 = time.perf_counter()
        api.analyze(run, source_path=args.path, **timeline)
        a1 = time.perf_counter()
        cpu = time.process_time() - cpu0
        top = rec.peak(a0, a1, rss0)
        lines.append(
            f"analysis {i + 1}: start {rss0:,.0f} MiB, peak {top:,.0f} MiB "
            f"(+{top - rss0:,.0f}), CPU {cpu:.2f} s, wall {a1 - a0:.2f} s"
        )
    rec.stop()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    lines.append(f"process peak RSS (ru_maxrss, imports included): {peak:,.0f} MiB")
    first = [c for c in rec.calls if c.run == 0]
    per_run = [[c for c in rec.calls if c.run == i] for i in range(args.repeat)]
    rows = []
    for j, c in enumerate(first):
        same = [calls[j] for calls in per_run if j < len(calls) and calls[j].name == c.name]
        ups = [rec.peak(x.t0, x.t1, x.rss0) - x.rss0 for x in same]
        cpus = [x.cpu_s for x in same]
        rows.append(Row("  " * c.depth + c.name, min(ups), max(ups), min(cpus), max(cpus)))
    return lines, rows


def _range(lo: float, hi: float, fmt: str) -> str:
    return format(lo, fmt) + ("" if lo == hi else ".." + format(hi, fmt))


def _child(args: argparse.Namespace, tree: str | None) -> tuple[list[str], list[Row]]:
    """This script on one tree in a child process (a fresh heap), its results as JSON."""
    cmd = [sys.executable, __file__, args.path, "--repeat", str(args.repeat), "--json"]
    cmd += [f for f, on in (("--trim", args.trim), ("--detail", args.detail),
                            ("--no-timeline", args.no_timeline), ("--pandas", args.pandas))
            if on]  # fmt: skip
    cmd += ["--pythonpath", tree] if tree else []
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return out["lines"], [Row(**r) for r in out["rows"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path")
    parser.add_argument("--detail", action="store_true", help="also the functions inside steps")
    parser.add_argument("--no-timeline", action="store_true", help="as summary --json does")
    parser.add_argument("--trim", action="store_true", help="malloc_trim before each step")
    parser.add_argument("--repeat", type=int, default=1, help="analyses of the loaded run")
    parser.add_argument("--pythonpath", help="import tcreport from this tree instead")
    parser.add_argument("--baseline", help="also measure this tree, side by side (two children)")
    parser.add_argument("--pandas", action="store_true", help="let pyarrow import pandas")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.pandas:
        sys.meta_path.insert(0, _NoPandas())
    if args.baseline:
        base_lines, base = _child(args, args.baseline)
        lines, rows = _child(args, args.pythonpath)
        print("\n".join(["baseline:", *base_lines, "this tree:", *lines]))
        print(f"{'step':34s} {'+peak MiB':>21s} {'CPU s':>21s}")
        print(f"{'':34s} {'baseline':>10s} {'this':>10s} {'baseline':>10s} {'this':>10s}")
        for b, r in zip(base, rows, strict=False):
            label = r.label if b.label == r.label else f"{b.label} / {r.label}"
            print(
                f"{label:34s} {_range(b.up_min, b.up_max, '+,.0f'):>10s} "
                f"{_range(r.up_min, r.up_max, '+,.0f'):>10s} "
                f"{_range(b.cpu_min, b.cpu_max, '.2f'):>10s} "
                f"{_range(r.cpu_min, r.cpu_max, '.2f'):>10s}"
            )
        return
    if args.pythonpath:
        sys.path.insert(0, args.pythonpath)
    lines, rows = measure(args)
    if args.json:
        print(json.dumps({"lines": lines, "rows": [r.__dict__ for r in rows]}))
        return
    print("\n".join(lines))
    print(f"{'step':34s} {'+peak MiB':>11s} {'CPU s':>11s}")
    for r in rows:
        up, cpu = _range(r.up_min, r.up_max, "+,.0f"), _range(r.cpu_min, r.cpu_max, ".2f")
        print(f"{r.label:34s} {up:>11s} {cpu:>11s}")


if __name__ == "__main__":
    main()
