"""Run metadata and the :class:`Run` bundle that readers return.

Metadata is small and typed (frozen dataclasses, StrEnums for closed sets); bulk rows live in the
canonical Arrow tables of :mod:`tcreport.schema`. A table that is ``None`` means "this input does not
carry that information" (a DLProf folder holding only ``dlprof_summary.csv`` has no kernel rows),
which is different from an empty table ("it does, and there were none"): the summary then says
``null`` instead of a false 0.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa


class SourceFormat(StrEnum):
    DLPROF_CSV = "dlprof-csv"
    DLPROF_JSON = "dlprof-json"
    DLPROF_SQLITE = "dlprof-sqlite"
    NSYS_SQLITE = "nsys-sqlite"
    KINETO_JSON = "kineto-json"
    TF_XPLANE = "tf-xplane"
    NCU_CSV = "ncu-csv"
    TCREPORT_PARQUET = "tcreport-parquet"


class Granularity(StrEnum):
    LAUNCH = "launch"  # one row per kernel launch / op instance
    AGGREGATE = "aggregate"  # one row per kernel or op, totals over calls
    NONE = "none"  # the input has no such rows


@dataclass(frozen=True)
class Gpu:
    device_id: int
    name: str | None = None
    compute_capability: str | None = None  # "7.5"; NVIDIA only (a HIP arch number is not one)
    sm_count: int | None = None
    vendor: str | None = None  # "nvidia", "amd", "intel", "meta"; None = not recorded


_AMD_NAME = re.compile(r"\bAMD\b|Radeon|Instinct|\bMI\d{2,3}[A-Z]?\b|gfx\d", re.IGNORECASE)
_INTEL_NAME = re.compile(
    r"\bIntel\b|\bArc\b|Data Center GPU Max|Ponte Vecchio|Gaudi", re.IGNORECASE
)
#: Meta's MTIA accelerators (an MTIA Kineto trace's ``deviceProperties`` name the device "ARTEMIS").
_META_NAME = re.compile(r"\bMTIA\b|\bARTEMIS\b", re.IGNORECASE)
_NVIDIA_NAME = re.compile(
    r"NVIDIA|GeForce|Quadro|Tesla|TITAN|\b[ABHLTV]\d{1,3}[A-Z]?\b|\bGB?\d{3}\b|\bRTX\b",
    re.IGNORECASE,
)


def gpu_vendor(name: str | None) -> str | None:
    """The vendor a device name states ("AMD Radeon Graphics" is how ROCm names an MI250), or
    ``None`` when the name does not say. Readers record it so nothing downstream mistakes a HIP
    architecture number for an NVIDIA compute capability."""
    if not name:
        return None
    for vendor, pattern in (
        ("amd", _AMD_NAME),
        ("intel", _INTEL_NAME),
        ("meta", _META_NAME),
        ("nvidia", _NVIDIA_NAME),
    ):
        if pattern.search(name):
            return vendor
    return None


@dataclass(frozen=True)
class IterationInfo:
    """How the run was split into iterations and which were aggregated (DLProf's key-node idea)."""

    key_node: str | None = None
    total: int | None = None
    start: int | None = None
    stop: int | None = None
    aggregated: int | None = None
    mean_ns: float | None = None
    std_ns: float | None = None
    method: str | None = None  # how the boundaries were found ("dlprof", "key node X", "whole run")


@dataclass(frozen=True)
class ReportedFigures:
    """Figures the profiler itself reported, kept so tcreport can fall back on them and be checked
    against them. All optional: a figure the input does not give stays ``None``."""

    wall_ns: int | None = None
    all_kernel_ns: int | None = None  # compute kernels + memory, DLProf's "All kernels"
    gpu_kernel_ns: int | None = None  # compute kernels only
    tc_kernel_ns: int | None = None
    memory_ns: int | None = None
    unique_kernels: int | None = None
    op_count: int | None = None
    op_gpu_ns: int | None = None
    eligible_op_count: int | None = None
    using_op_count: int | None = None
    using_gpu_ns: int | None = None
    eligible_not_using_op_count: int | None = None
    eligible_not_using_gpu_ns: int | None = None
    gpu_utilization: float | None = None  # fraction in [0, 1]
    tc_kernel_utilization: float | None = None  # fraction in [0, 1]


@dataclass(frozen=True)
class SourceFinding:
    """A finding the profiler itself emitted (DLProf's expert systems), carried over verbatim."""

    id: str
    problem: str
    recommendation: str


@dataclass(frozen=True)
class RunSettings:
    """Framework settings the profiler recorded (DLProf's model config); ``None`` = not recorded."""

    cudnn_benchmark: bool | None = None
    amp_enabled: bool | None = None
    num_workers: int | None = None
    pin_memory: bool | None = None


@dataclass(frozen=True)
class Distributed:
    """The rank of a distributed job a trace is of, as the profiler recorded it (Kineto's
    ``distributedInfo``); ``None`` fields were not recorded."""

    rank: int
    world_size: int | None = None
    backend: str | None = None  # "nccl", "gloo"
    nccl_version: str | None = None
    default_group: str | None = None  # the default process group: "cuda:nccl/128"


@dataclass(frozen=True)
class RunMeta:
    format: SourceFormat
    path: str
    profiler: str | None = None  # "DLProf v1.8.0", "Nsight Systems 2026.2.1"
    profiler_version: str | None = None
    framework: str | None = None  # "PyTorch 1.10.1+cu102"
    cuda_version: str | None = None
    cudnn_version: str | None = None
    driver_version: str | None = None
    gpus: tuple[Gpu, ...] = ()
    iterations: IterationInfo = field(default_factory=IterationInfo)
    reported: ReportedFigures = field(default_factory=ReportedFigures)
    source_findings: tuple[SourceFinding, ...] = ()
    kernel_granularity: Granularity = Granularity.NONE
    op_granularity: Granularity = Granularity.NONE
    files: tuple[str, ...] = ()  # base names of what was read
    notes: tuple[str, ...] = ()  # reader remarks worth showing (missing optional reports, ...)
    settings: RunSettings = field(default_factory=RunSettings)
    # When the profile was recorded, read from the trace itself (ISO 8601, UTC, to the second), and
    # what said so ("Nsight Systems session start"); None when the trace does not say.
    started_at: str | None = None
    started_at_source: str | None = None
    # Device events the reader saw but does not read (device-side annotations, accelerator
    # counters, TPU planes): device activity, so a run with only these is never "CPU-only".
    device_events_unread: int = 0
    #: The job rank this trace is of (Kineto ``distributedInfo``); None when not recorded.
    distributed: Distributed | None = None

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> RunMeta:
        raw: dict[str, Any] = json.loads(text)
        return cls(
            format=SourceFormat(raw["format"]),
            path=raw["path"],
            profiler=raw.get("profiler"),
            profiler_version=raw.get("profiler_version"),
            framework=raw.get("framework"),
            cuda_version=raw.get("cuda_version"),
            cudnn_version=raw.get("cudnn_version"),
            driver_version=raw.get("driver_version"),
            gpus=tuple(Gpu(**g) for g in raw.get("gpus", ())),
            iterations=IterationInfo(**raw.get("iterations", {})),
            reported=ReportedFigures(**raw.get("reported", {})),
            source_findings=tuple(SourceFinding(**f) for f in raw.get("source_findings", ())),
            kernel_granularity=Granularity(raw.get("kernel_granularity", "none")),
            op_granularity=Granularity(raw.get("op_granularity", "none")),
            files=tuple(raw.get("files", ())),
            notes=tuple(raw.get("notes", ())),
            settings=RunSettings(**raw.get("settings", {})),
            started_at=raw.get("started_at"),
            started_at_source=raw.get("started_at_source"),
            device_events_unread=int(raw.get("device_events_unread", 0)),
            distributed=Distributed(**raw["distributed"]) if raw.get("distributed") else None,
        )


@dataclass(frozen=True)
class Run:
    """What a reader returns: metadata plus canonical tables (``None`` = not in this input)."""

    meta: RunMeta
    kernels: pa.Table | None = None
    memory: pa.Table | None = None
    ops: pa.Table | None = None
    iterations: pa.Table | None = None
    ranges: pa.Table | None = None
    collectives: pa.Table | None = None  # collective launches with their message sizes

    def replace(self, **changes: Any) -> Run:
        return dataclasses.replace(self, **changes)
