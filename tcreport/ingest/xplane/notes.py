"""The plain-language remarks a TensorFlow profile earns: CPU-only, op time share, precision mix.

A CPU-only profile cannot say anything about Tensor Cores, but it still shows where the time goes
and in which precision the model computes; until the report has a host-time view those figures
are given here, as notes, so a laptop run is not an empty report.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from tcreport.model import Gpu

CPU_ONLY = (
    "CPU-only run: this profile has no GPU, so Tensor Core analysis needs a GPU run; op time "
    "share and precision mix below are from host (CPU) self-time."
)


def other_devices(kinds: Mapping[str, int]) -> str | None:
    """Device planes of accelerators other than GPUs (a TPU profile): named, never read, and
    reason enough not to call the profile CPU-only."""
    if not kinds:
        return None
    found = ", ".join(f"{n} {k} plane{'s' if n > 1 else ''}" for k, n in sorted(kinds.items()))
    return (
        f"Device activity on accelerators that are not GPUs ({found}): tcreport reads GPU planes "
        "only, so no matrix-unit verdict exists for them."
    )


def _pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole > 0 else "n/a"


def op_type_share(ops: Sequence[Mapping[str, Any]], limit: int = 6) -> str | None:
    """Host self-time by op type, the top few."""
    by_type: dict[str, int] = defaultdict(int)
    for op in ops:
        by_type[str(op.get("type") or "(unknown)")] += int(op.get("cpu_ns") or 0)
    total = sum(by_type.values())
    if total <= 0:
        return None
    top = sorted(by_type.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    parts = ", ".join(f"{t} {_pct(ns, total)}" for t, ns in top)
    return f"Op time share (host self-time by op type): {parts}."


def dtype_share(
    ops: Sequence[Mapping[str, Any]], key: str, what: str, source: str | None = None
) -> str | None:
    by_dtype: dict[str, int] = defaultdict(int)
    for op in ops:
        by_dtype[str(op.get("dtype") or "unknown")] += int(op.get(key) or 0)
    total = sum(by_dtype.values())
    if total <= 0 or set(by_dtype) == {"unknown"}:
        return None
    parts = ", ".join(
        f"{d} {_pct(ns, total)}"
        for d, ns in sorted(by_dtype.items(), key=lambda kv: (-kv[1], kv[0]))
    )
    via = f", dtypes {source}" if source else ""
    return f"Precision mix ({what} by op dtype{via}): {parts}."


def layer_policies(policy: str | None, layers: Sequence[Mapping[str, str]]) -> str | None:
    by_dtype: dict[str, list[str]] = defaultdict(list)
    for layer in layers:
        if layer.get("class") in ("Sequential", "Functional", "Model", "InputLayer"):
            continue
        by_dtype[layer.get("compute_dtype", "?")].append(layer.get("name", "?"))
    if not by_dtype:
        return None
    parts = "; ".join(f"{d}: {', '.join(sorted(n))}" for d, n in sorted(by_dtype.items()))
    head = f"Keras policy {policy}; " if policy else ""
    return f"Precision mix (Keras layer compute dtypes, recorded at capture): {head}{parts}."


def device_compute_precision(props: Mapping[str, str]) -> str | None:
    lo, hi = props.get("device_compute_16bit_percent"), props.get("device_compute_32bit_percent")
    if not lo or not hi:
        return None
    return f"TensorFlow profiler: device compute time {lo} in 16-bit ops, {hi} in 32-bit ops."


def eager_share(rows: Sequence[Mapping[str, Any]]) -> str | None:
    eager = [r for r in rows if str(r.get("eager", "")).lower() == "eager"]
    if not eager:
        return None
    total = sum(float(r.get("total_self_time") or 0) for r in rows)
    part = sum(float(r.get("total_self_time") or 0) for r in eager)
    return (
        f"{len(eager)} op(s) ran eagerly ({_pct(part, total)} of self-time); eager ops skip "
        "graph optimisations: wrap the step in tf.function."
    )


def per_device(gpus: Sequence[Gpu], kernels: Mapping[int, tuple[int, int]]) -> str | None:
    """``kernels``: device id -> (launches, total ns)."""
    if not gpus:
        return None
    busy, idle = [], []
    for g in gpus:
        n, ns = kernels.get(g.device_id, (0, 0))
        if not n:
            idle.append(str(g.device_id))
            continue
        cc = f" (sm_{g.compute_capability.replace('.', '')})" if g.compute_capability else ""
        busy.append(f"GPU {g.device_id}{cc}: {n} kernel launches, {ns / 1e6:.3f} ms")
    text = "; ".join(busy) if busy else "no kernel launches on any GPU"
    if busy and idle:
        text += f"; no kernels on GPU {', '.join(idle)}"
    return f"Per device: {text}."
