"""Every output of every real trace into one folder, to prove a change byte-identical (or not).

A refactor or an optimisation must leave `summary --json`, the HTML report and the Markdown
report of every real trace unchanged, except for the changes it names. This writes them, one file
per (trace, format), with the command's exit code and stderr beside them, so two trees compare
with ``diff -r``:

    python benchmarks/snapshot_outputs.py /tmp/snap-before            # on main
    python benchmarks/snapshot_outputs.py /tmp/snap-after             # on the branch
    diff -r /tmp/snap-before /tmp/snap-after

``--tcreport CMD`` runs another installation (say an older checkout's venv:
``--tcreport /work/old/.venv/bin/tcreport``). Traces: every file or DLProf folder under
``../shared/realtraces`` (``--realtraces DIR``) and the bundled ``sample_traces``; ``--extra PATH``
adds more (the x1000 export, say).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: What one trace becomes: (file suffix, arguments after the trace path).
OUTPUTS = (
    ("summary.json", ["summary", "{trace}", "--json", "-o", "-"]),
    ("summary.txt", ["summary", "{trace}"]),
    ("report.html", ["report", "{trace}", "-o", "-"]),
    ("report.md", ["report", "{trace}", "--markdown", "-o", "-"]),
)
#: Files in ../shared that are not traces (oracles, provenance).
NOT_TRACES = {"README.md", "hta-oracle.json"}


def traces(realtraces: Path) -> list[Path]:
    """Each real trace once: a DLProf folder as one run, plus its SQLite files read alone."""
    found: list[Path] = []
    if realtraces.is_dir():
        for path in sorted(realtraces.rglob("*")):
            if "tracelens-oracle" in path.parts or path.name in NOT_TRACES:
                continue
            dlprof_folder = path.is_dir() and any(p.suffix == ".csv" for p in path.iterdir())
            if dlprof_folder or (path.is_file() and path.suffix != ".csv"):
                found.append(path)
    found += sorted(
        p
        for p in (ROOT / "sample_traces").rglob("*")
        if p.is_file() and p.suffix != ".md" and not _not_a_sample_trace(p)
    )
    return found


def _not_a_sample_trace(path: Path) -> bool:
    """A sample's provenance scripts (``make/``), capture sidecars and oracles are not traces."""
    return "make" in path.parts or path.name in {"tcreport-capture.json", *NOT_TRACES}


def slug(path: Path) -> str:
    parts = path.resolve().parts[-3:]
    return "__".join(parts).replace(" ", "_")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("out", type=Path, help="folder to write (replaced if it exists)")
    ap.add_argument("--tcreport", default=shutil.which("tcreport") or "tcreport")
    ap.add_argument("--realtraces", type=Path, default=ROOT.parent / "shared" / "realtraces")
    ap.add_argument("--extra", type=Path, action="append", default=[])
    args = ap.parse_args()
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    env = dict(os.environ, COLUMNS="120", NO_COLOR="1", TERM="dumb")
    for trace in traces(args.realtraces) + args.extra:
        for suffix, argv in OUTPUTS:
            cmd = [args.tcreport, *(a.replace("{trace}", str(trace)) for a in argv)]
            # cwd: `python -m tcreport` puts its working folder first on sys.path, so a command
            # run from a checkout would import that checkout's tcreport, not the one asked for
            done = subprocess.run(cmd, capture_output=True, env=env, check=False, cwd=args.out)
            base = args.out / f"{slug(trace)}.{suffix}"
            base.write_bytes(done.stdout)
            stderr = done.stderr.decode("utf-8", "replace").replace(str(trace), "{trace}")
            Path(f"{base}.exit").write_text(f"{done.returncode}\n{stderr}", encoding="utf-8")
        print(f"{trace}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
