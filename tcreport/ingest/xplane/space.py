"""What the converters do not give, read from the XSpace itself: GPUs, kernel and memcpy launches
per device with the TF op that launched them, and op dtypes.

xprof's ``kernel_stats`` aggregates over devices and, for older profiles, attributes no kernel to
an op; the device planes still carry each launch with its stream, grid, correlation id and the
``name:type`` of the op that ran it. The loop over events is Python (protobuf gives no columnar
access); XSpace files are bounded by the profiler's short capture window.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tcreport.ingest.xplane import hlo
from tcreport.model import Gpu, gpu_vendor
from tcreport.schema import MAX_INTERVAL_NS, POSITIONS_NS, MemoryKind

_GPU_PLANE = re.compile(r"^/device:GPU:(\d+)$")
#: Any other device plane (``/device:TPU:0``, ``/device:CUSTOM:...``): device activity tcreport
#: does not read, which still means the profile is not CPU-only.
_OTHER_DEVICE = re.compile(r"^/device:(?!GPU:)([A-Za-z_]+)(?::(\d+))?")
#: ``device_vendor`` stat values (tsl's kDeviceVendorNvidia / kDeviceVendorAMD).
_VENDORS = {"nvidia": "nvidia", "amd": "amd"}
#: Host event names only one framework's runtime records: JAX's C++ jit dispatch
#: (``PjitFunction(<fn>)``) against TensorFlow's executor, sessions and eager runtime.
_JAX_EVENT = re.compile(r"^PjitFunction\(|^PjitFunctionCache|/jax/_src/")
_TF_EVENT = re.compile(
    r"^(?:SessionRun|EagerKernelExecute|EagerLocalExecute|ExecutorState::Process|FunctionRun"
    r"|__inference_|Iterator::)"
)
_DETAILS = re.compile(r"grid:(\d+),(\d+),(\d+)\s+block:(\d+),(\d+),(\d+)")
_SIZE = re.compile(r"(?:size|num_bytes):(\d+)")
#: JAX writes ``Memset 3`` with ``Memset_details`` (``kind:device num_bytes:4194304 async:1``),
#: TensorFlow ``MemcpyH2D`` with ``memcpy_details``: names lose spaces and a trailing number.
_MEMORY_NAME = re.compile(r"\s+|(?<=memset)\d+$")
_DETAILS_KEYS = ("memcpy_details", "memset_details")
_DTYPE = re.compile(r"([a-z][a-z0-9_]*)\[")
#: The op xprof writes for every kernel of a JAX program (``tf_op`` = ``XlaModule:``).
_XLA_MODULE = "XlaModule"
_MEMORY = {
    "memcpyh2d": MemoryKind.HTOD,
    "memcpyd2h": MemoryKind.DTOH,
    "memcpyd2d": MemoryKind.DTOD,
    "memcpyp2p": MemoryKind.PEER,
    "memset": MemoryKind.MEMSET,
}
_FLOATS = ("half", "bfloat16", "float", "double", "float8_e4m3fn", "float8_e5m2")
_TF_DTYPE = {"half": "float16", "float": "float32", "double": "float64"}


@dataclass
class Columns:
    """Plain columns for one canonical table, filled in one pass."""

    data: dict[str, list[Any]] = field(default_factory=lambda: defaultdict(list))

    def add(self, **values: Any) -> None:
        for k, v in values.items():
            self.data[k].append(v)

    def __len__(self) -> int:
        return len(next(iter(self.data.values()), []))


@dataclass
class SpaceFacts:
    gpus: list[Gpu] = field(default_factory=list)
    host_planes: int = 0
    kernels: Columns = field(default_factory=Columns)
    memory: Columns = field(default_factory=Columns)
    op_shapes: dict[str, str] = field(default_factory=dict)  # op name -> "(half[4,384];half[])"
    op_types: dict[str, str] = field(default_factory=dict)  # op name -> type, from kernel events
    #: XLA ops (HLO instructions) that launched kernels, by name: type, scope, shapes, precision
    hlo_ops: dict[str, hlo.HloOp] = field(default_factory=dict)
    hlo_owner: dict[str, int] = field(default_factory=dict)  # op id -> its program id
    #: host step annotations (``StepTraceAnnotation``: events with a ``step_num`` stat)
    ranges: Columns = field(default_factory=Columns)
    hostnames: tuple[str, ...] = ()
    #: a run of several hosts' profiles: which of the run's GPU ids each host's GPUs became
    host_devices: str | None = None
    #: device planes other than GPUs ("TPU"), by kind: counted, never read
    other_devices: dict[str, int] = field(default_factory=dict)
    other_events: int = 0  # events on those planes
    #: frameworks whose runtime events the host planes hold ("jax", "tensorflow")
    frameworks: set[str] = field(default_factory=set)
    dropped: int = 0  # GPU events with a negative or 13-day duration, or a start past the clock
    dropped_steps: int = 0  # step annotations so damaged


def main_dtype(shapes: str | None) -> str | None:
    """The first floating-point dtype among an op's inputs (TF spells float32 ``float``).

    Integer inputs are shapes, seeds and indices rather than the op's precision, so an op with
    only those gets no dtype.
    """
    if not shapes:
        return None
    return next((_TF_DTYPE.get(d, d) for d in _DTYPE.findall(shapes) if d in _FLOATS), None)


def _within(start_ns: int) -> bool:
    return POSITIONS_NS[0] <= start_ns < POSITIONS_NS[1]


def _stat_value(stat: Any, names: dict[int, str]) -> Any:
    if stat.ref_value:
        return names.get(stat.ref_value, "")
    for f in ("str_value", "int64_value", "uint64_value", "double_value"):
        v = getattr(stat, f)
        if v:
            return v
    return None


def _gpu(plane: Any, index: int, names: dict[int, str]) -> Gpu:
    """One GPU plane's device: ``device_vendor`` says whose it is (ROCm writes "AMD"), and only
    an NVIDIA (or unnamed-vendor) device's ``compute_cap_*`` is a compute capability: ROCm fills
    them with the gfx version (9.4 on an MI300X), which is not one. ``gpu_device_name`` is the
    model (CUDA) or the gfx id (ROCm's rocprofiler-sdk tracer: "gfx942")."""
    stats = {names.get(s.metadata_id, ""): _stat_value(s, names) for s in plane.stats}
    name = next(
        (
            str(stats[k])[:200]
            for k in ("gpu_model", "device_model", "device_name", "gpu_device_name")
            if stats.get(k)
        ),
        None,
    )
    vendor = _VENDORS.get(str(stats.get("device_vendor") or "").strip().lower()) or gpu_vendor(name)
    major, minor = stats.get("compute_cap_major"), stats.get("compute_cap_minor")
    nvidia = vendor in (None, "nvidia")
    cc = f"{int(major)}.{int(minor or 0)}" if major and nvidia else None
    cores = stats.get("core_count")
    return Gpu(
        device_id=index,
        name=name,
        compute_capability=cc,
        sm_count=int(cores) if cores else None,
        vendor=vendor,
    )


def _op_of(annotation: str) -> tuple[str | None, str | None, str | None]:
    """``name:type#shape=...#`` or ``name:type`` -> (name, type, shape string)."""
    if not annotation:
        return None, None, None
    head, _, rest = annotation.partition("#")
    shape = None
    if rest.startswith("shape="):
        shape = rest[len("shape=") :].split("#", 1)[0]
    name, _, typ = head.rpartition(":") if ":" in head else (head, "", "")
    return name or None, typ or None, shape


def _programs(space: Any) -> dict[int, hlo.Program | bytes]:
    """The serialised HLO of every XLA program on the ``/host:metadata`` planes, by program id
    (decoded when a kernel first names it: most programs of a profile are small set-up ones)."""
    found: dict[int, hlo.Program | bytes] = {}
    for plane in space.planes:
        if plane.name != "/host:metadata":
            continue
        names = {k: v.name for k, v in plane.stat_metadata.items()}
        for md in plane.event_metadata.values():
            stats = {names.get(s.metadata_id, ""): s for s in md.stats}
            proto, pid = stats.get(hlo.HLO_PROTO_STAT), stats.get("program_id")
            if proto is not None and proto.bytes_value and pid is not None:
                found[int(pid.uint64_value or pid.int64_value)] = proto.bytes_value
    return found


def _hlo_op(
    stats: dict[str, Any], kernel: str, programs: dict[int, hlo.Program | bytes]
) -> tuple[int, str, hlo.HloOp] | None:
    """The HLO instruction a kernel event ran (:mod:`.hlo`); ``None`` without the program."""
    if "program_id" not in stats:
        return None
    # a stat of value 0 has no field set (proto3), so _stat_value reads it as None: program 0
    pid = stats["program_id"] or 0
    if not programs or not isinstance(pid, int) or pid not in programs:
        return None
    program = programs[pid]
    if isinstance(program, bytes):
        try:
            program = programs[pid] = hlo.Program(hlo.message(program))
        except Exception:  # noqa: BLE001 - protobuf's DecodeError: an unreadable program is absent
            programs.pop(pid)
            return None
    hlo_op = stats.get("hlo_op")
    found = program.op(str(hlo_op) if hlo_op else None, kernel)
    return None if found is None else (pid, program.module, found)


def _op_key(facts: SpaceFacts, program: int, module: str, xla: hlo.HloOp) -> str:
    """The op id of an HLO instruction: its name, as XLA and xprof show it, unless another
    program of the run has an instruction of that name (XLA names instructions per program:
    every jitted function has its ``gemm_fusion_dot.4``); then ``module/name``, and with the
    program id where two programs share a module name (a recompilation)."""
    for key in (xla.name, f"{module}/{xla.name}", f"{module}({program})/{xla.name}"):
        owner = facts.hlo_owner.setdefault(key, program)
        if owner == program:
            facts.hlo_ops.setdefault(key, xla)
            return key
    return key  # unreachable: the last key names the program


def _device_plane(
    plane: Any, device: int, facts: SpaceFacts, programs: dict[int, hlo.Program | bytes]
) -> None:
    names = {k: v.name for k, v in plane.stat_metadata.items()}
    metadata = plane.event_metadata
    for line in plane.lines:
        if not line.name.startswith("Stream #"):
            continue  # derived lines (TensorFlow Ops, Name Scope, Steps) repeat the stream events
        base_ns = line.timestamp_ns
        for ev in line.events:
            md = metadata[ev.metadata_id]
            stats = {names.get(s.metadata_id, ""): _stat_value(s, names) for s in ev.stats}
            start = base_ns + ev.offset_ps // 1000
            dur = ev.duration_ps // 1000
            op, typ, shape = _op_of(str(stats.get("level 0") or stats.get("tf_op") or ""))
            found = _hlo_op(stats, md.name, programs)
            if found is not None:
                xla = found[2]
                op, typ, shape = _op_key(facts, *found), xla.type, xla.input_shapes
            elif op == _XLA_MODULE:  # xprof's name for "some op of a JAX program"
                op = str(stats.get("name") or "") or None
                typ = op.rsplit("/", 1)[-1] if op else None
            if shape is None and stats.get("shape"):
                shape = str(stats["shape"])
            if op and shape:
                facts.op_shapes.setdefault(op, shape)
            if op and typ:
                facts.op_types.setdefault(op, typ)
            if not (0 <= dur < MAX_INTERVAL_NS and _within(start)):
                facts.dropped += 1  # damage: summed, it would wrap int64 totals negative
                continue
            kind = _MEMORY.get(_MEMORY_NAME.sub("", md.name.lower()))
            detail = next((str(v) for k, v in stats.items() if k.lower() in _DETAILS_KEYS), None)
            if kind is not None or detail is not None:
                detail = detail or ""
                size = _SIZE.search(detail)
                facts.memory.add(
                    kind=(kind or MemoryKind.MEMCPY_OTHER).value,
                    name=md.name,
                    device_id=device,
                    stream_id=line.id,
                    correlation_id=stats.get("correlation_id"),
                    start_ns=start,
                    duration_ns=dur,
                    calls=1,
                    bytes=int(size.group(1)) if size else None,
                    op_id=op,
                )
                continue
            grid = _DETAILS.search(str(stats.get("kernel_details") or ""))
            g = [int(x) for x in grid.groups()] if grid else [None] * 6
            facts.kernels.add(
                name=md.name,
                long_name=md.name,
                device_id=device,
                stream_id=line.id,
                correlation_id=stats.get("correlation_id"),
                start_ns=start,
                duration_ns=dur,
                calls=1,
                op_id=op,
                grid_x=g[0],
                grid_y=g[1],
                grid_z=g[2],
                block_x=g[3],
                block_y=g[4],
                block_z=g[5],
            )


def _host_plane(plane: Any, facts: SpaceFacts) -> None:
    """Op shapes recorded on host op events (TF writes them at host_tracer_level 3 on GPU), and
    the step annotations (``StepTraceAnnotation`` in JAX and TensorFlow, Keras's ``train`` steps:
    events with a ``step_num`` stat), which mark the iterations as ``ProfilerStep`` does."""
    names = {k: v.name for k, v in plane.stat_metadata.items()}
    shape_ids = {k for k, v in names.items() if v == "shape"}
    step_ids = {k for k, v in names.items() if v == "step_num"}
    if not (shape_ids or step_ids):
        return
    for line in plane.lines:
        for ev in line.events:
            for s in ev.stats:
                if s.metadata_id in step_ids:
                    start = line.timestamp_ns + ev.offset_ps // 1000
                    dur = ev.duration_ps // 1000
                    if not (0 <= dur < MAX_INTERVAL_NS and _within(start)):
                        facts.dropped_steps += 1  # damage, as on the device planes
                        break
                    facts.ranges.add(
                        name=plane.event_metadata[ev.metadata_id].name,
                        thread_id=line.id,
                        start_ns=start,
                        end_ns=start + dur,
                        depth=0,
                    )
                    break
                if s.metadata_id in shape_ids and s.str_value:
                    op, _, _ = _op_of(plane.event_metadata[ev.metadata_id].name)
                    if op:
                        facts.op_shapes.setdefault(op, s.str_value)
                    break


def _frameworks(plane: Any) -> set[str]:
    """Which framework's runtime ran on this host, from the distinct event names only (the
    metadata map, not the events: a few thousand strings however long the capture)."""
    found: set[str] = set()
    for md in plane.event_metadata.values():
        if "jax" not in found and _JAX_EVENT.search(md.name):
            found.add("jax")
        elif "tensorflow" not in found and _TF_EVENT.match(md.name):
            found.add("tensorflow")
        if len(found) == 2:
            break
    return found


def collect(space: Any) -> SpaceFacts:
    facts = SpaceFacts(hostnames=tuple(space.hostnames))
    programs = _programs(space)
    for plane in space.planes:
        names = {k: v.name for k, v in plane.stat_metadata.items()}
        m = _GPU_PLANE.match(plane.name)
        if m:
            device = int(m.group(1))
            facts.gpus.append(_gpu(plane, device, names))
            _device_plane(plane, device, facts, programs)
        elif plane.name.startswith("/host:"):
            facts.host_planes += 1
            _host_plane(plane, facts)
            facts.frameworks |= _frameworks(plane)
        elif (other := _OTHER_DEVICE.match(plane.name)) and (
            n := sum(len(line.events) for line in plane.lines)
        ):
            kind = other.group(1).upper()
            facts.other_devices[kind] = facts.other_devices.get(kind, 0) + 1
            facts.other_events += n
    facts.gpus.sort(key=lambda g: g.device_id)
    return facts


def _renumber(one: SpaceFacts, offset: int) -> None:
    """One host's GPUs and their events moved to ids from ``offset`` on: every host numbers its
    own GPUs from 0, so two hosts' "GPU 0" would be one device of the merged run (one per-device
    row holding both hosts' kernels, two GPUs of one id)."""
    one.gpus = [replace(g, device_id=g.device_id + offset) for g in one.gpus]
    for cols in (one.kernels.data, one.memory.data):
        if "device_id" in cols:
            cols["device_id"] = [d + offset for d in cols["device_id"]]


def merge(spaces: list[Any], names: Sequence[str] = ()) -> SpaceFacts:
    """The facts of every XSpace (one per host of a multi-worker run) as one. A device's identity
    includes its host: the second host's GPUs follow the first's (host 1's GPU 0 is the run's
    GPU 1 when host 0 has one), and a note names each host's GPUs. One host: ids unchanged."""
    facts = SpaceFacts()
    hosts: list[str] = []
    for i, space in enumerate(spaces):
        one = collect(space)
        offset = max((g.device_id for g in facts.gpus), default=-1) + 1
        if i and one.gpus and offset:
            _renumber(one, offset)
        if len(spaces) > 1 and one.gpus:
            label = names[i] if i < len(names) else f"profile {i + 1}"
            host = f" ({one.hostnames[0]})" if one.hostnames else ""
            ids = ", ".join(str(g.device_id) for g in one.gpus)
            hosts.append(f"{label}{host}: GPU{'s' if len(one.gpus) > 1 else ''} {ids}")
        facts.gpus += one.gpus
        facts.host_planes += one.host_planes
        facts.dropped += one.dropped
        facts.dropped_steps += one.dropped_steps
        facts.frameworks |= one.frameworks
        facts.other_events += one.other_events
        for kind, n in one.other_devices.items():
            facts.other_devices[kind] = facts.other_devices.get(kind, 0) + n
        for k, v in one.kernels.data.items():
            facts.kernels.data[k] += v
        for k, v in one.memory.data.items():
            facts.memory.data[k] += v
        facts.op_shapes.update(one.op_shapes)
        facts.op_types.update(one.op_types)
        if not len(facts.ranges):  # one host's steps cut the iterations, as one rank's do
            for k, v in one.ranges.data.items():
                facts.ranges.data[k] += v
        for name, op in one.hlo_ops.items():
            facts.hlo_ops.setdefault(name, op)
    if len(hosts) > 1:
        facts.host_devices = (
            f"{len(hosts)} hosts' profiles, their GPUs numbered one after the other: "
            + "; ".join(hosts)
        )
    return facts
