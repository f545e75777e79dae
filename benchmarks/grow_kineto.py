"""Grow a real PyTorch profiler (Kineto) trace N times, to time readers on production-sized files.

The real traces we may use are a few MB; the traces users bring are hundreds. Each copy of the
events is shifted past the end of the previous copy, and every identifier that joins events
(``correlation`` / flow ``id``, ``External id`` / ``external id``, ``ProfilerStep#N``) is offset so
that joins stay one-to-one, as they would in a long real run. Metadata events (``ph: M``) and the
top-level keys (``deviceProperties``, ``distributedInfo``, ...) are written once.

    python benchmarks/grow_kineto.py \\
        ../shared/realtraces/kineto/v100-legacy-resnet50/worker0.1623143089861.pt.trace.json.gz \\
        /tmp/kineto-big/rank0.json 8
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import time
from pathlib import Path
from typing import Any, TextIO

_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_ID_ARGS = ("correlation", "External id", "external id")


def _load(src: Path) -> dict[str, Any]:
    opener = gzip.open if src.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(src, "rt", encoding="utf-8") as fh:
        doc: dict[str, Any] = json.load(fh)
    return doc


def _extent(events: list[dict[str, Any]]) -> tuple[float, float, int, int]:
    """Time span, largest id and largest ProfilerStep number of one copy."""
    lo, hi, top, steps = float("inf"), float("-inf"), 0, 0
    for e in events:
        ts = e.get("ts")
        if isinstance(ts, int | float) and e.get("ph") != "M":
            lo = min(lo, ts)
            hi = max(hi, ts + (e.get("dur") or 0))
        args = e.get("args")
        if isinstance(args, dict):
            for k in _ID_ARGS:
                if isinstance(args.get(k), int):
                    top = max(top, args[k])
        if e.get("ph") in ("s", "f", "t") and isinstance(e.get("id"), int):
            top = max(top, e["id"])
        m = _STEP.match(str(e.get("name", "")))
        if m:
            steps = max(steps, int(m.group(1)) + 1)
    return lo, hi, top, steps


def _shifted(e: dict[str, Any], dt: float, did: int, dstep: int) -> dict[str, Any]:
    out = dict(e)
    if isinstance(out.get("ts"), int | float):
        out["ts"] = out["ts"] + dt
    if out.get("ph") in ("s", "f", "t") and isinstance(out.get("id"), int):
        out["id"] = out["id"] + did
    args = out.get("args")
    if isinstance(args, dict):
        args = dict(args)
        for k in _ID_ARGS:
            if isinstance(args.get(k), int) and args[k] > 0:
                args[k] = args[k] + did
        if isinstance(args.get("external ts"), int | float):
            args["external ts"] = args["external ts"] + dt
        out["args"] = args
    m = _STEP.match(str(out.get("name", "")))
    if m:
        out["name"] = f"ProfilerStep#{int(m.group(1)) + dstep}"
    return out


def grow(src: Path, dst: Path, times: int) -> int:
    """Write ``times`` copies of ``src``'s events to ``dst``; returns the number of events."""
    doc = _load(src)
    events: list[dict[str, Any]] = doc.pop("traceEvents")
    lo, hi, top, steps = _extent(events)
    span: float = (hi - lo) + 1000.0  # one millisecond of idle between copies
    if all(isinstance(e.get("ts", 0), int) for e in events):
        span = int(round(span))  # 2021 traces use int microseconds: keep them ints
    dst.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    enc = json.JSONEncoder(separators=(",", ":"))
    with dst.open("w", encoding="utf-8") as fh:
        fh.write("{")
        for key, value in doc.items():
            fh.write(f"{enc.encode(key)}:{enc.encode(value)},")
        fh.write('"traceEvents":[')
        first = True
        for k in range(times):
            dt = span * k
            for e in events:
                if k and e.get("ph") == "M":
                    continue
                first = _write(fh, enc, _shifted(e, dt, k * (top + 1), k * steps), first)
                n += 1
        fh.write("]}\n")
    return n


def _write(fh: TextIO, enc: json.JSONEncoder, event: dict[str, Any], first: bool) -> bool:
    if not first:
        fh.write(",\n")
    fh.write(enc.encode(event))
    return False


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("src", type=Path, help="a Kineto trace, .json or .json.gz")
    ap.add_argument("dst", type=Path, help="where to write the grown trace (plain .json)")
    ap.add_argument("times", type=int)
    args = ap.parse_args()
    t0 = time.perf_counter()
    n = grow(args.src, args.dst, args.times)
    size = args.dst.stat().st_size / 2**20
    print(f"{args.dst}: {n:,} events, {size:,.0f} MiB, grown in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
