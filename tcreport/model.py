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


class IterationMethod(StrEnum):
    """How a run's iteration boundaries were found: by the profiler (the first four, set by
    readers) or by tcreport's own slicing (:func:`tcreport.analysis.iterations.select`). The
    values are the words the report shows, for the methods whose words need no name."""

    DLPROF = "dlprof"  # DLProf split and aggregated at profile time
    TF_WINDOW = "TF profiler window"  # the TF capture profiled only the steps it kept
    TF_CAPTURE = "TF profiler capture (steps unknown)"
    PROFILER_STEP = "ProfilerStep"  # the Kineto reader's count of ProfilerStep#N ranges
    PROFILER_STEP_RANGES = "ProfilerStep#N ranges"
    KEY_NODE = "key node"  # the user's key node (IterationInfo.key_node)
    REPEATING_RANGE = "repeating range"  # a repeating outermost range (IterationInfo.key_node)
    WHOLE_RUN = "whole run"

    @property
    def sliced_by_profiler(self) -> bool:
        """The profiler already aggregated only the kept iterations: nothing to re-slice."""
        return self in (IterationMethod.DLPROF, IterationMethod.TF_WINDOW)

    @classmethod
    def parse(cls, text: str | None) -> tuple[IterationMethod | None, str | None]:
        """(method, TF step source) from the free text older versions stored
        (``key node 'x'``, ``TF profiler window over <source>``): an ``ingest`` folder written
        before the enum still reads. Unknown text is kept as nothing rather than guessed."""
        if text is None:
            return None, None
        for m in cls:
            if text == m.value:
                return m, None
        if text.startswith("TF profiler window over "):
            return cls.TF_WINDOW, text.removeprefix("TF profiler window over ")
        for m in (cls.KEY_NODE, cls.REPEATING_RANGE):
            if text.startswith(m.value + " "):
                return m, None
        return None, None


@dataclass(frozen=True)
class IterationInfo:
    """How the run was split into iterations and which were aggregated (DLProf's key-node idea)."""

    key_node: str | None = None  # the key node, or the repeating range that split the run
    total: int | None = None
    start: int | None = None
    stop: int | None = None
    aggregated: int | None = None
    mean_ns: float | None = None
    std_ns: float | None = None
    method: IterationMethod | None = None
    step_source: str | None = None  # what the TF profiler window counted steps by


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


class AuditKey(StrEnum):
    """What the in-process model audit (``tcreport profile``) records about the script's run: the
    framework's own names, so a finding can quote them. A setting's value is text as the framework
    prints it (``"True"``, ``"highest"``, ``"mixed_float16"``)."""

    DEVICE = "device"  # "cpu", or the GPU's name
    GPU_CC = "gpu.compute_capability"  # "8.0", when a GPU ran the script
    KERAS_POLICY = "keras.mixed_precision.global_policy"
    KERAS_FIT = "keras.Model.fit"  # "called" where the script trained with fit()
    KERAS_OPTIMIZER = "keras.optimizers.Optimizer"  # the optimizer class, where it was built
    KERAS_LOSS_SCALE = "keras.mixed_precision.LossScaleOptimizer"  # "used"
    KERAS_JIT = "jit_compile"  # "True"/"False" of Model.compile or tf.function
    TF_TF32 = "tf.config.experimental.enable_tensor_float_32_execution"
    TORCH_AUTOCAST = "torch.autocast"  # the dtype of each autocast entered ("float16")
    TORCH_GRAD_SCALER = "torch.amp.GradScaler"  # "created"
    TORCH_MATMUL_TF32 = "torch.backends.cuda.matmul.allow_tf32"
    TORCH_MATMUL_PRECISION = "torch.set_float32_matmul_precision"
    TORCH_CUDNN_TF32 = "torch.backends.cudnn.allow_tf32"
    TORCH_CUDNN_BENCHMARK = "torch.backends.cudnn.benchmark"


@dataclass(frozen=True)
class AuditLayer:
    """One layer of the profiled model as the audit saw it in the running process."""

    name: str  # "Net.fc1" (PyTorch: root class and attribute path), "dense_1" (Keras)
    kind: str  # the class: "Linear", "Conv2d", "Dense", "Activation", "InputLayer"
    defined_at: str | None = None  # "train.py:12": the line that built it
    compute_dtype: str | None = None  # Keras compute dtype; PyTorch: the weights' dtype
    dims: tuple[tuple[str, int], ...] = ()  # (("units", 333),), (("in_features", 100), ...)
    activation: str | None = None  # "softmax" for Dense(activation="softmax") or a Softmax layer
    output: bool = False  # the model's last layer
    channels_last: bool | None = None  # PyTorch convolution weights in channels_last


@dataclass(frozen=True)
class AuditSetting:
    key: str  # an :class:`AuditKey` value (kept as text: a newer capture may know more keys)
    value: str
    at: str | None = None  # "train.py:7" where the script set or called it; None: not seen


@dataclass(frozen=True)
class ModelAudit:
    """What ``tcreport profile`` learnt from the model object and the framework's settings while
    the script ran: facts only; the audit rules (``rules/au*.py``) judge them."""

    framework: str  # "pytorch" or "keras"
    layers: tuple[AuditLayer, ...] = ()
    settings: tuple[AuditSetting, ...] = ()

    def setting(self, key: AuditKey) -> AuditSetting | None:
        """The last value recorded for ``key`` (settings can change while the script runs)."""
        found = [s for s in self.settings if s.key == key.value]
        return found[-1] if found else None

    def all(self, key: AuditKey) -> tuple[AuditSetting, ...]:
        return tuple(s for s in self.settings if s.key == key.value)

    @classmethod
    def from_dict(cls, raw: Any) -> ModelAudit | None:
        """From the capture's JSON (a sidecar or an ingest manifest); entries of the wrong shape
        are dropped, never raised on: the file is tcreport's own, but it may be damaged."""
        if not isinstance(raw, dict) or not isinstance(raw.get("framework"), str):
            return None
        layers = tuple(
            layer for x in _list(raw.get("layers")) if (layer := _audit_layer(x)) is not None
        )
        settings = tuple(
            AuditSetting(key=x["key"], value=x["value"], at=_text(x.get("at")))
            for x in _list(raw.get("settings"))
            if isinstance(x, dict)
            and isinstance(x.get("key"), str)
            and isinstance(x.get("value"), str)
        )
        return cls(framework=raw["framework"], layers=layers, settings=settings)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _audit_layer(x: Any) -> AuditLayer | None:
    if not isinstance(x, dict) or not isinstance(x.get("name"), str):
        return None
    if not isinstance(x.get("kind"), str):
        return None
    dims = tuple(
        (d[0], d[1])
        for d in _list(x.get("dims"))
        if isinstance(d, list | tuple)
        and len(d) == 2
        and isinstance(d[0], str)
        and type(d[1]) is int
        and 0 < d[1] < 2**40
    )
    last = x.get("channels_last")
    return AuditLayer(
        name=x["name"],
        kind=x["kind"],
        defined_at=_text(x.get("defined_at")),
        compute_dtype=_text(x.get("compute_dtype")),
        dims=dims,
        activation=_text(x.get("activation")),
        output=x.get("output") is True,
        channels_last=last if isinstance(last, bool) else None,
    )


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
    # The in-process model audit of ``tcreport profile`` (capture sidecar); None: not audited.
    audit: ModelAudit | None = None

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
            iterations=_iteration_info(raw.get("iterations", {})),
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
            audit=ModelAudit.from_dict(raw.get("audit")),
        )


def _iteration_info(raw: dict[str, Any]) -> IterationInfo:
    """An :class:`IterationInfo` as :meth:`RunMeta.to_json` wrote it, or as a version before
    :class:`IterationMethod` did (the method as free text)."""
    method, source = IterationMethod.parse(raw.get("method"))
    fields = {**raw, "method": method}
    if source is not None and raw.get("step_source") is None:
        fields["step_source"] = source
    return IterationInfo(**fields)


@dataclass(frozen=True)
class Run:
    """What a reader returns: metadata plus canonical tables (``None`` = not in this input)."""

    meta: RunMeta
    kernels: pa.Table | None = None
    memory: pa.Table | None = None
    ops: pa.Table | None = None
    iterations: pa.Table | None = None
    ranges: pa.Table | None = None

    def replace(self, **changes: Any) -> Run:
        return dataclasses.replace(self, **changes)
