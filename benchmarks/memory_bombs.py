"""Peak RSS of ``tcreport summary`` on hostile inputs (gzip bombs, a sparse file) and on a big trace.

Each input is written under a scratch folder (default: a new one in /tmp, deleted afterwards) and
read by ``python -m tcreport summary FILE --json`` in a fresh subprocess; peak RSS is the child's
own (``wait4`` ``ru_maxrss``, imports included). Hostile inputs must end in a one-line error well
under 2 GB; ``--trace`` adds a legitimate trace (e.g. grown with ``grow_kineto.py``) for comparison.

    python benchmarks/memory_bombs.py [--trace /tmp/kineto-big/worker0.pt.trace.json]

Cases:

* ``gzip-4GiB-string``: ``{"traceEvents":[{"name":"aaaa...`` with one 4 GiB string (4 MB of gzip);
* ``gzip-4GiB-spaces``: 4 GiB of whitespace before the ``traceEvents`` key;
* ``gzip-empty-events``: ``{"traceEvents":[{},{},...`` 8 GiB of empty events (a ratio of ~1000x);
* ``gzip-nesting``: ``{"traceEvents":[[[[[...`` 1 GiB of brackets;
* ``sparse-5GB``: ``{"traceEvents":[`` then 5 GB of NUL bytes (a sparse file: no disk used).
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GIB = 1 << 30
BLOCK = 1 << 24


def _gzip(path: Path, parts: Callable[[], Iterator[bytes]]) -> None:
    # level 1 is plenty for runs of one byte, and 10x faster than 9 to write 8 GiB
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1) as gz:
        for part in parts():
            gz.write(part)


def _repeat(head: bytes, unit: bytes, total: int, tail: bytes) -> Callable[[], Iterator[bytes]]:
    def parts() -> Iterator[bytes]:
        yield head
        block = unit * (BLOCK // len(unit))
        for _ in range(total // len(block)):
            yield block
        yield tail

    return parts


def make_cases(tmp: Path) -> dict[str, Path]:
    cases = {
        "gzip-4GiB-string": (b'{"traceEvents":[{"name":"', b"a", 4 * GIB, b'"}]}'),
        "gzip-4GiB-spaces": (b"{", b" ", 4 * GIB, b'"traceEvents":[]}'),
        "gzip-empty-events": (b'{"traceEvents":[', b"{},", 8 * GIB, b"{}]}"),
        "gzip-nesting": (b'{"traceEvents":[', b"[", GIB, b"]"),
    }
    out = {}
    for name, (head, unit, total, tail) in cases.items():
        p = tmp / f"{name}.json.gz"
        if not p.exists():  # a kept --scratch folder is reused
            _gzip(p, _repeat(head, unit, total, tail))
        out[name] = p
    sparse = tmp / "sparse-5GB.json"
    with sparse.open("r+b" if sparse.exists() else "wb") as fh:
        fh.write(b'{"traceEvents":[')
        fh.truncate(5 * 10**9)
    out["sparse-5GB"] = sparse
    return out


def measure(path: Path, command: str = "summary") -> tuple[int, float, float, str]:
    """(exit code, peak RSS MiB, seconds, last stderr line) of ``tcreport summary|report path``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    out = Path(tempfile.gettempdir()) / f"tcreport-bombs-{os.getpid()}.html"
    args = (
        ["summary", str(path), "--json"]
        if command == "summary"
        else ["report", str(path), "-o", str(out)]
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "tcreport", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=tempfile.gettempdir(),
    )
    assert proc.stderr is not None
    err = proc.stderr.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    out.unlink(missing_ok=True)
    lines = [line for line in err.splitlines() if line.strip()]
    summary = lines[-1] if lines else ""
    if len(lines) > 1:
        summary = f"[{len(lines)} lines] {summary}"
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024, seconds, summary


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--trace", type=Path, action="append", default=[], help="a legitimate trace")
    ap.add_argument("--scratch", type=Path, help="where to write the inputs (kept)")
    ap.add_argument("--only-trace", action="store_true", help="skip the hostile inputs")
    ap.add_argument("--command", choices=["summary", "report"], default="summary")
    args = ap.parse_args()
    tmp = args.scratch or Path(tempfile.mkdtemp(prefix="tcreport-bombs-"))
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        cases = {} if args.only_trace else make_cases(tmp)
        cases.update({f"trace {p.name} ({p.stat().st_size / 1e9:.2f} GB)": p for p in args.trace})
        print(f"{'input':<44} {'on disk':>10} {'exit':>4} {'peak RSS':>10} {'time':>7}  message")
        for name, path in cases.items():
            size = path.stat().st_blocks * 512
            code, rss, secs, msg = measure(path, args.command)
            print(f"{name:<44} {size / 1e6:>8.1f}MB {code:>4} {rss:>7.0f}MiB {secs:>6.1f}s  {msg}")
    finally:
        if args.scratch is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except zlib.error as exc:  # pragma: no cover - only when /tmp fills up
        sys.exit(f"cannot write the inputs: {exc}")
