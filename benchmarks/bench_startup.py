"""A small report's cost, start-up included, on this tree and (side by side) another one.

``check`` in CI and ``batch`` over many small traces start a process per trace, so a small
trace's run is mostly imports and first-call costs. This times, as child processes reaped with
``os.wait4`` (wall, CPU user + system, peak RSS), ``tcreport --help``, ``summary``,
``summary --json`` and ``report -o FILE`` of one trace (default: the bundled 2.4 MB nsys sample),
alternating the trees run by run so both see the same neighbours, and reads
``python -X importtime`` of ``summary``: how many modules, and the sum of their own import
times. The baseline beside them is the floor: a Python that imports numpy and
``pyarrow.compute`` and does nothing else.

    python benchmarks/bench_startup.py --repeat 5
    python benchmarks/bench_startup.py --repeat 5 --pythonpath /tmp/base   # against another tree

Best of the runs is the figure to quote on a shared machine (the 1-minute load average is
printed before and after); CPU is what neighbours disturb least. Bytecode: every module is
compiled once before timing (``PYTHONPYCACHEPREFIX`` under a temporary folder, since a checkout
run with ``PYTHONDONTWRITEBYTECODE`` would otherwise compile tcreport on every run, which an
installed wheel never does).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_nsys import Child, _machine, _run

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_traces" / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"
#: What every command that reads a trace imports before tcreport does anything: the baseline.
FLOOR = "import numpy, pyarrow, pyarrow.compute"


def _commands(trace: Path, out: Path) -> dict[str, list[str]]:
    return {
        "--help": ["--help"],
        "summary": ["summary", str(trace)],
        "summary --json": ["summary", str(trace), "--json"],
        "report -o FILE": ["report", str(trace), "-o", str(out)],
    }


def _env(tree: Path | None, pycache: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(pycache))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), env.get("PYTHONPATH")]))
    return env


def _imports(env: dict[str, str], trace: Path) -> tuple[int, float]:
    """Modules ``summary`` imported and the sum of their own times (ms), from -X importtime."""
    done = subprocess.run(
        [sys.executable, "-P", "-X", "importtime", "-m", "tcreport", "summary", str(trace)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    rows = [
        line.split("|")
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and line.split("|")[0].split(":")[1].strip().isdigit()
    ]
    return len(rows), sum(int(r[0].split(":")[1]) for r in rows) / 1000


def _line(name: str, runs: list[Child]) -> str:
    wall = sorted(c.wall for c in runs)
    cpu = sorted(c.cpu for c in runs)
    rss = max(c.rss for c in runs)
    return (
        f"  {name:8s} wall best {wall[0]:.3f} s (median {wall[len(wall) // 2]:.3f}), "
        f"CPU best {cpu[0]:.3f} s (median {cpu[len(cpu) // 2]:.3f}), peak {rss:.0f} MiB"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", nargs="?", type=Path, default=SAMPLE)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--pythonpath", type=Path, help="also run tcreport from this source tree")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tcr-startup-") as tmp:
        trees: dict[str, dict[str, str]] = {"this": _env(ROOT, Path(tmp) / "pyc-this")}
        if args.pythonpath is not None:
            trees["other"] = _env(args.pythonpath.resolve(), Path(tmp) / "pyc-other")
        commands = _commands(args.trace.resolve(), Path(tmp) / "report.html")
        print(_machine())
        print(f"load before: {Path('/proc/loadavg').read_text().split()[:3]}")
        for env in trees.values():  # compile every module, fill the template cache
            for argv in commands.values():
                _run([sys.executable, "-P", "-m", "tcreport", *argv], env=env)
        floor = [
            _run([sys.executable, "-P", "-c", FLOOR], env=trees["this"]) for _ in range(args.repeat)
        ]
        print(f"floor, python -c '{FLOOR}':")
        print(_line("", floor))
        for label, argv in commands.items():
            runs: dict[str, list[Child]] = {t: [] for t in trees}
            for _ in range(args.repeat):
                for tree, env in trees.items():
                    runs[tree].append(
                        _run([sys.executable, "-P", "-m", "tcreport", *argv], env=env)
                    )
            print(f"tcreport {label}:")
            for tree, children in runs.items():
                print(_line(tree, children))
        for tree, env in trees.items():
            counted = [_imports(env, args.trace.resolve()) for _ in range(args.repeat)]
            print(
                f"imports of summary, {tree}: {counted[0][0]} modules, own time best "
                f"{min(ms for _, ms in counted):.0f} ms (-X importtime adds its own overhead)"
            )
        print(f"load after: {Path('/proc/loadavg').read_text().split()[:3]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
