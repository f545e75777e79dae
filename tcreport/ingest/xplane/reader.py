"""Reader for TensorFlow and JAX profiler output (``*.xplane.pb`` XSpace files, TF 2.2 and later).

In a JAX (XLA) profile each kernel's op is its HLO instruction, decoded from the programs the
profile stores (:mod:`.hlo`), and step annotations become ranges (:mod:`.space`).

Op figures come from xprof's own converters (``framework_op_stats``, ``kernel_stats``,
``overview_page``), so tcreport agrees with what TensorBoard's profile plugin shows for the same
file; per-launch kernel rows, devices and op dtypes come from the XSpace's device planes, which the
converters aggregate away. xprof (the ``[xplane]`` extra) is imported only when a profile is read.

A ``tcreport-capture.json`` written by ``tcreport profile --backend tf`` beside the profile adds
what the profiler cannot know: which steps the capture window kept and the Keras dtype policies.
"""

from __future__ import annotations

import importlib
import json
import re
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from tcreport import schema
from tcreport.errors import InputError, MissingExtraError
from tcreport.ingest.common import capture, started
from tcreport.ingest.xplane import notes as notes_mod
from tcreport.ingest.xplane.space import SpaceFacts, main_dtype, merge
from tcreport.ingest.xplane.tools import INSTALL, ToolTables, convert
from tcreport.model import (
    Granularity,
    IterationInfo,
    IterationMethod,
    ReportedFigures,
    Run,
    RunMeta,
    SourceFormat,
)

if TYPE_CHECKING:
    import pyarrow as pa

SUFFIX = ".xplane.pb"
SIDECAR = "tcreport-capture.json"
_HEAD = 4096
_PLANE_NAMES = (b"/host:", b"/device:", b"Task Environment", b"/custom:")


def _looks_like_xspace(head: bytes) -> bool:
    """XSpace field 1 (planes) comes first; a plane's name (field 2) follows its id within bytes."""
    if not head or head[0] != 0x0A:
        return False
    window = head[:96]
    return any(
        b"\x12" + bytes([len(n) + k]) + n in window for n in _PLANE_NAMES for k in range(0, 40)
    ) or any(n in window for n in _PLANE_NAMES)


def _candidates(path: Path) -> list[Path]:
    """The ``.xplane.pb`` files of one profiling run under ``path`` (the newest run wins)."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        return []
    for pattern in (f"*{SUFFIX}", f"plugins/profile/*/*{SUFFIX}", f"*/*{SUFFIX}"):
        found = [p for p in path.glob(pattern) if p.is_file()]
        if found:
            newest = max(p.parent for p in found)
            return sorted((p for p in found if p.parent == newest), key=_natural)
    return []


def _natural(path: Path) -> tuple[tuple[int, int | str], ...]:
    """A host file's sort key with its numbers as numbers: worker2 before worker10, so the
    merged run's GPU ids follow the hosts' own order (``space.merge`` numbers them in turn)."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part)
        for part in re.split(r"(\d+)", path.name)
        if part
    )


def sniff(path: Path) -> bool:
    """Judged by the first file that holds anything: an empty host file of a run is the reader's
    to refuse, by name (else the folder was skipped and its other host read alone)."""
    for f in _candidates(path):
        try:
            with f.open("rb") as fh:
                head = fh.read(_HEAD)
        except OSError:
            return False
        if head:
            return _looks_like_xspace(head)
    return False


def _parse(files: list[Path]) -> list[Any]:
    try:
        decode_error: type[Exception] = importlib.import_module(
            "google.protobuf.message"
        ).DecodeError
        from tcreport.ingest.xplane.proto import parse_xspace
    except ImportError as exc:
        raise MissingExtraError(
            f"reading TensorFlow or JAX profiles needs xprof: {INSTALL}", files[0], extra="xplane"
        ) from exc
    spaces = []
    for f in files:
        try:
            data = f.read_bytes()
            if not data and len(files) > 1:  # a host whose profiler died before writing
                raise InputError("file is empty (one of the run's hosts)", f)
            spaces.append(parse_xspace(data))
        except decode_error as exc:
            raise InputError(
                "not a TensorFlow profiler XSpace (protobuf does not decode)", f
            ) from exc
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror or exc}", f) from exc
    return spaces


def _sidecar(run_dir: Path) -> dict[str, Any]:
    p = run_dir / SIDECAR
    if not p.is_file():
        return {}
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _us_to_ns(v: Any) -> int | None:
    return None if v is None else int(round(float(v) * 1000))


def _layer_dtypes(layers: list[dict[str, str]]) -> dict[str, str]:
    return {
        x["name"]: x["compute_dtype"] for x in layers if x.get("name") and x.get("compute_dtype")
    }


def _dtype_from_layers(op_name: str, by_layer: dict[str, str]) -> str | None:
    """The compute dtype of the innermost Keras layer in the op's scope path.

    Keras 3 names a layer's call scope ``<layer>_<n>`` (``dense_1_1`` for layer ``dense_1``), so
    an exact match is tried first, then the name without its last ``_<n>``.
    """
    for part in reversed(op_name.split("/")[:-1]):
        if part in by_layer:
            return by_layer[part]
        stem, _, digits = part.rpartition("_")
        if digits.isdigit() and stem in by_layer:
            return by_layer[stem]
    return None


def _ops(
    tables: ToolTables,
    facts: SpaceFacts,
    layers: dict[str, str],
    kernel_ns: dict[str, tuple[int, int]],
    runs: dict[str, int] | None = None,
) -> list[dict[str, Any]]:
    """One row per op name, host and device rows of framework_op_stats merged."""
    merged: dict[str, dict[str, Any]] = {}
    for r in tables.op_stats or []:
        name = str(r.get("operation") or "")
        if not name or (facts.hlo_ops and r.get("host_or_device") == "Device"):
            continue  # an XLA program's device time is its HLO ops' (facts.hlo_ops), not these
        row = merged.setdefault(
            name,
            {
                "op_id": name,
                "name": name,
                "type": r.get("type"),
                "calls": 0,
                "eager": r.get("eager"),
            },
        )
        occ = int(r.get("occurrences") or 0)
        if r.get("host_or_device") == "Device":
            row["gpu_ns"] = _us_to_ns(r.get("total_self_time"))
            row["gpu_total_ns"] = _us_to_ns(r.get("total_time"))
            row["calls"] = max(row["calls"], occ)
        else:
            row["cpu_ns"] = _us_to_ns(r.get("total_self_time"))
            row["calls"] = max(row["calls"], occ)
    tc: dict[str, tuple[bool, bool]] = {}
    for k in tables.kernel_stats or []:
        op = str(k.get("op_name") or "")
        if op:
            e, u = tc.get(op, (False, False))
            tc[op] = (
                e or bool(k.get("is_op_tensor_core_eligible")),
                u or bool(k.get("is_kernel_using_tensor_core")),
            )
    for name, (launches, _ns) in kernel_ns.items():
        if name not in merged:  # ran on a device, absent from the converter's op table
            merged[name] = {"op_id": name, "name": name, "type": facts.op_types.get(name)}
            merged[name]["calls"] = (runs or {}).get(name, launches)
    for name, row in merged.items():
        shapes = facts.op_shapes.get(name)
        row["input_shapes"] = shapes
        row["dtype"] = main_dtype(shapes) or _dtype_from_layers(name, layers)
        if (xla := facts.hlo_ops.get(name)) is not None:
            row.update(
                type=xla.type, scope=xla.scope, dtype=xla.dtype, output_shapes=xla.output_shapes
            )
        launches, ns = kernel_ns.get(name, (0, 0))
        if launches:
            row["kernel_calls"] = launches
            if row.get("gpu_ns") is None:
                row["gpu_ns"] = ns  # the converter attributed no device time; the planes did
        if name in tc:
            row["profiler_tc_eligible"], row["profiler_uses_tc"] = tc[name]
    return sorted(merged.values(), key=lambda r: r["name"])


def _kernels(facts: SpaceFacts, tables: ToolTables) -> pa.Table | None:
    if not len(facts.kernels):
        return None if not facts.gpus else schema.empty(schema.TableKind.KERNELS)
    by_pair: dict[tuple[str, str], bool] = {}
    by_name: dict[str, bool] = {}
    for k in tables.kernel_stats or []:
        name, op, uses = (
            str(k.get("kernel_name") or ""),
            str(k.get("op_name") or ""),
            k.get("is_kernel_using_tensor_core"),
        )
        if isinstance(uses, bool):
            by_pair[(name, op)] = uses
            by_name[name] = by_name.get(name, False) or uses
    data = dict(facts.kernels.data)
    data["profiler_uses_tc"] = [
        by_pair.get((n, o or ""), by_name.get(n))
        for n, o in zip(data["name"], data["op_id"], strict=True)
    ]
    return schema.conform(data, schema.TableKind.KERNELS)


def _iterations(side: dict[str, Any]) -> IterationInfo:
    window = side.get("window")
    if not (isinstance(window, list) and len(window) == 2):
        return IterationInfo(method=IterationMethod.TF_CAPTURE)
    step_ns = [int(x) for x in side.get("step_ns", []) if isinstance(x, int | float)]
    return IterationInfo(
        key_node=side.get("key_node"),
        total=int(side.get("steps_seen") or 0) or None,
        start=int(window[0]),
        stop=int(window[1]),
        aggregated=int(window[1]) - int(window[0]) + 1,
        mean_ns=statistics.fmean(step_ns) if step_ns else None,
        std_ns=statistics.pstdev(step_ns) if step_ns else None,
        method=IterationMethod.TF_WINDOW,
        step_source=str(side.get("step_source")),
    )


def _first_line_ns(spaces: list[Any]) -> int | None:
    """The earliest XLine start (epoch ns in every XSpace), when it is a plausible date."""
    firsts = [
        int(line.timestamp_ns)
        for space in spaces
        for plane in space.planes
        for line in plane.lines
        if started.plausible(int(line.timestamp_ns))
    ]
    return min(firsts, default=None)


#: The profiler that wrote the XSpace, by framework: TensorFlow's and JAX's are the same TSL
#: profiler, named as its users call it.
_PROFILER = {
    "TensorFlow": "TensorFlow profiler (XSpace)",
    "JAX": "JAX profiler (XSpace)",
    None: "TSL/XLA profiler (XSpace)",
}


def _framework(side: dict[str, Any], seen: set[str]) -> str | None:
    """Whose program the profile is of: tcreport's own TensorFlow capture says so in its sidecar;
    otherwise the host planes' runtime events (JAX's ``PjitFunction(...)`` dispatch against
    TensorFlow's executor and sessions), since JAX writes the same XSpace format. ``None`` when
    neither shows: the format alone does not say."""
    if side.get("tensorflow"):
        return f"TensorFlow {side['tensorflow']}"
    if "jax" in seen:
        return "JAX"
    return "TensorFlow" if "tensorflow" in seen else None


def read(path: Path) -> Run:
    """A stat of an unexpected type (a string where a number belongs, an int past 64 bits) reaches
    the canonical tables as a column of mixed types: damage, reported as such (found by fuzzing)."""
    try:
        return _read(path)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        raise InputError(f"unexpected value in the XSpace: {exc}", path) from exc


def _notes(
    side: dict[str, Any],
    facts: SpaceFacts,
    tables: ToolTables,
    op_rows: list[dict[str, Any]],
    layers: list[dict[str, str]],
    per_dev: dict[int, tuple[int, int]],
) -> list[str]:
    """The run's notes: the capture's own, then what the profile shows beside the tables."""
    gpu_run = bool(facts.gpus)
    notes: list[str] = [str(n) for n in side.get("notes", []) if isinstance(n, str)]
    candidates = [
        None if gpu_run or facts.other_events else notes_mod.CPU_ONLY,
        notes_mod.other_devices(facts.other_devices),
        None if gpu_run else notes_mod.op_type_share(op_rows),
        notes_mod.dtype_share(
            op_rows,
            "gpu_ns" if gpu_run else "cpu_ns",
            "device time" if gpu_run else "host self-time",
            None if gpu_run else "from the Keras layer each op ran in",
        ),
        notes_mod.layer_policies(side.get("global_policy"), layers),
        # xprof's overview counts an XLA program's device time by its own op table, which has
        # no precision for HLO ops: "0.0% in 16-bit ops" for a bf16 JAX run
        notes_mod.device_compute_precision(tables.overview_props)
        if gpu_run and not facts.hlo_ops
        else None,
        notes_mod.eager_share(tables.op_stats or []),
        facts.host_devices,
        notes_mod.per_device(facts.gpus, per_dev),
        f"xprof could not convert: {', '.join(tables.failed)}." if tables.failed else None,
        f"dropped {facts.dropped:,} GPU events whose duration is negative or 13 days or more, or "
        "whose start lies past the int64 clock's range: they are left out of every figure"
        if facts.dropped
        else None,
        f"dropped {facts.dropped_steps:,} step annotations (events with a step_num) whose "
        "duration is negative or 13 days or more: the steps around them may read as one"
        if facts.dropped_steps
        else None,
    ]
    return notes + [n for n in candidates if n]


def _read(path: Path) -> Run:
    files = _candidates(path)
    if not files:
        raise InputError(f"no {SUFFIX} file here", path)
    spaces = _parse(files)
    facts = merge(spaces, [f.name for f in files])
    tables = convert(files)
    side = _sidecar(files[0].parent)
    raw_layers = side.get("layers")
    layers: list[dict[str, str]] = (
        [x for x in raw_layers if isinstance(x, dict)] if isinstance(raw_layers, list) else []
    )
    kernels = _kernels(facts, tables)
    kernel_ns: dict[str, tuple[int, int]] = {}
    per_dev: dict[int, tuple[int, int]] = {}
    cols = facts.kernels.data
    by_kernel: dict[str, dict[str, int]] = {}  # HLO op -> its kernels' launches, by name
    for op, dev, dur, kname in zip(
        cols.get("op_id", []),
        cols.get("device_id", []),
        cols.get("duration_ns", []),
        cols.get("name", []),
        strict=True,
    ):
        if op:
            n, ns = kernel_ns.get(op, (0, 0))
            kernel_ns[op] = (n + 1, ns + dur)
            if op in facts.hlo_ops:
                counts = by_kernel.setdefault(op, {})
                counts[kname] = counts.get(kname, 0) + 1
        n, ns = per_dev.get(dev, (0, 0))
        per_dev[dev] = (n + 1, ns + dur)
    # an XLA op launches several kernels each time it runs (cuDNN's padding, the convolution, a
    # split-K reduction): it ran as often as its least launched kernel
    runs = {op: min(counts.values()) for op, counts in by_kernel.items()}
    op_rows = _ops(tables, facts, _layer_dtypes(layers), kernel_ns, runs)
    gpu_run = bool(facts.gpus)
    notes = _notes(side, facts, tables, op_rows, layers, per_dev)
    keys = [f.name for f in schema.OPS]
    ops = schema.conform({k: [r.get(k) for r in op_rows] for k in keys}, schema.TableKind.OPS)
    ranges = (
        schema.conform(dict(facts.ranges.data), schema.TableKind.RANGES)
        if len(facts.ranges)
        else None
    )
    memory = (
        schema.conform(dict(facts.memory.data), schema.TableKind.MEMORY)
        if len(facts.memory)
        else (schema.empty(schema.TableKind.MEMORY) if gpu_run else None)
    )
    step_ns = [int(x) for x in side.get("step_ns", []) if isinstance(x, int | float)]
    first = _first_line_ns(spaces)
    framework = _framework(side, facts.frameworks)
    meta = RunMeta(
        format=SourceFormat.TF_XPLANE,
        path=str(path),
        profiler=_PROFILER.get(framework.split(" ")[0] if framework else None, _PROFILER[None]),
        framework=framework,
        gpus=tuple(facts.gpus),
        iterations=_iterations(side),
        reported=ReportedFigures(wall_ns=sum(step_ns) if step_ns else None),
        kernel_granularity=Granularity.LAUNCH
        if kernels is not None and kernels.num_rows
        else Granularity.NONE,
        op_granularity=Granularity.AGGREGATE if op_rows else Granularity.NONE,
        files=tuple(sorted(f.name for f in files)) + ((SIDECAR,) if side else ()),
        notes=tuple(notes),
        started_at=started.iso(first) if first is not None else None,
        started_at_source="TensorFlow profiler XLine timestamps" if first is not None else None,
        device_events_unread=facts.other_events,
        audit=capture.audit(side),
    )
    return Run(meta=meta, kernels=kernels, memory=memory, ops=ops, ranges=ranges)
