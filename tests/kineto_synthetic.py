"""Synthetic Kineto traces for step-time edge cases the real traces lack, written as the PyTorch
profiler writes them (``ProfilerStep#N`` annotations, ``cpu_op`` ops, ``cuda_runtime`` calls
linked to ``kernel`` / ``gpu_memcpy`` / ``gpu_memset`` events by ``correlation``). Times in µs, as
in the files. Named as synthetic wherever they are used."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PID, TID = 100, 100


@dataclass
class Trace:
    events: list[dict[str, Any]] = field(default_factory=list)
    _corr: int = 0
    _eid: int = 0

    def step(self, n: int, ts: float, dur: float) -> None:
        self._host("user_annotation", f"ProfilerStep#{n}", ts, dur)

    def op(self, name: str, ts: float, dur: float) -> int:
        """A ``cpu_op``; returns its External id (GPU work launched inside names it)."""
        self._eid += 1
        self._host("cpu_op", name, ts, dur, {"External id": self._eid})
        return self._eid

    def launch(
        self,
        call: str,
        ts: float,
        cat: str,
        name: str,
        gpu_ts: float | None,
        gpu_dur: float,
        stream: int = 7,
        eid: int | None = None,
        nbytes: int | None = None,
    ) -> None:
        """A runtime call at ``ts`` and the GPU event it launched (``gpu_ts`` None: the call only);
        ``eid`` ties both to the op they ran in."""
        self._corr += 1
        args: dict[str, Any] = {"correlation": self._corr}
        if eid is not None:
            args["External id"] = eid
        self._host("cuda_runtime", call, ts, 3.0, args)
        if gpu_ts is None:
            return
        gpu_args = {**args, "device": 0, "stream": stream}
        if nbytes is not None:
            gpu_args["bytes"] = nbytes
        self.events.append(
            {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": gpu_ts,
             "dur": gpu_dur, "args": gpu_args}
        )  # fmt: skip

    def gpu_only(self, cat: str, name: str, gpu_ts: float, gpu_dur: float, corr: int) -> None:
        """A GPU event whose launching call is not in the trace (queued before profiling)."""
        self.events.append(
            {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": gpu_ts,
             "dur": gpu_dur, "args": {"correlation": corr, "device": 0, "stream": 7}}
        )  # fmt: skip

    def _host(
        self, cat: str, name: str, ts: float, dur: float, args: dict[str, Any] | None = None
    ) -> None:
        self.events.append(
            {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": TID, "ts": ts, "dur": dur,
             "args": args or {}}
        )  # fmt: skip

    def write(self, path: Path) -> Path:
        doc = {
            "schemaVersion": 1,
            "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-40GB", "computeMajor": 8,
                                  "computeMinor": 0, "numSms": 108}],
            "traceEvents": self.events,
        }  # fmt: skip
        with gzip.open(path, "wt") as f:
            json.dump(doc, f)
        return path


KERNEL = "ampere_sgemm_128x64_nn"


def cpu_only_trace(path: Path, small_ops: int = 30, name: str = "aten::op_{:02d}") -> Path:
    """A PyTorch-profiler trace as a GPU-less machine writes it (``cpu_op`` events only, no
    ``deviceProperties``): three ``ProfilerStep``s of a float16 ``aten::mm`` and a float16
    ``aten::_softmax`` (PR002's case), and ``small_ops`` float32 ops named by ``name`` so the host
    table has more rows than a page shows."""
    events: list[dict[str, Any]] = []

    def op(op_name: str, ts: float, dur: float, dtype: str = "float") -> None:
        args = {"Input type": [dtype, ""], "Input Dims": [[8, 24], []]}
        events.append(
            {"ph": "X", "cat": "cpu_op", "name": op_name, "pid": 1, "tid": 1, "ts": ts,
             "dur": dur, "args": args}
        )  # fmt: skip

    for step in range(3):
        t0 = 1000.0 + step * (500 + 15 * small_ops)
        events.append(
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1,
             "tid": 1, "ts": t0, "dur": 450 + 15 * small_ops}
        )  # fmt: skip
        op("aten::mm", t0 + 10, 300, "c10::Half")
        op("aten::_softmax", t0 + 320, 40, "c10::Half")
        for i in range(small_ops):
            op(name.format(i), t0 + 400 + i * 15, 10)
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def equal_host_steps_trace(path: Path, steps: int) -> Path:
    """A CPU-only trace of ``steps`` identical 2 ms ``ProfilerStep``s 10 ms apart, each one
    float32 ``aten::mm`` filling it: iterations whose host time cannot vary."""
    events: list[dict[str, Any]] = []
    for n in range(steps):
        t0 = 10_000.0 * (n + 1)
        events.append(
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 1,
             "tid": 1, "ts": t0, "dur": 2000}
        )  # fmt: skip
        events.append(
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t0 + 1,
             "dur": 1998, "args": {"Input type": ["float", "float"]}}
        )  # fmt: skip
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path
