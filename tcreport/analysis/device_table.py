"""What an accelerator is, from the one sourced, dated table in ``device_table.toml``.

A verdict about matrix units is only honest against the device that ran: a GeForce GTX 1060
(Pascal, compute capability 6.1) has no Tensor Cores at all, an RTX 2070 SUPER (Turing, 7.5) has
them but no TF32 or BF16, an MI300X names its matrix units differently and has no NVIDIA compute
capability. So the device's facts live in data, each row citing the vendor document, and code
only looks them up:

* :func:`for_name`: a device name as a trace reports it -> its model row (first match wins), or
  ``None``: an unknown name stays unknown, it is never guessed into the nearest model. A row's
  pattern matches whole tokens only ("A100" is not found inside "RTX A1000"): a substring match
  gave a consumer card the data-centre part's compute capability and peaks.
* :func:`mig_profile`: the MIG instance a name denotes ("1g.10gb"): the GPU's row still says
  what the silicon is, but the row's peaks are the whole GPU's, so :mod:`peaks` gives none.
* :func:`architecture_of_cc` / :func:`architecture_of_gfx`: the generation of a recorded NVIDIA
  compute capability or AMD gfx id, for traces that record those but no model name.
* :func:`describe`: the :class:`DeviceFacts` of one :class:`~tcreport.model.Gpu`, from its name,
  else its compute capability or gfx id; where nothing identifies it, everything is ``None``.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from tcreport.model import Gpu

DATA = "device_table.toml"
#: Peak keys a row may carry (dense TFLOP/s), in the order documents list them.
PEAK_KEYS = ("fp4", "fp8", "bf16", "fp16", "tf32", "fp32_matrix", "fp32")
NONE = "none"  # ``matrix_unit`` of a device without matrix units
_GFX = re.compile(r"\bgfx(\d{2,3}[0-9a-f])\b", re.IGNORECASE)
#: A row's pattern may neither start nor end inside a token (a run of letters and digits).
_TOKEN_START, _TOKEN_END = r"(?<![0-9A-Za-z])", r"(?![0-9A-Za-z])"
#: nvidia-smi's name of a MIG instance: "NVIDIA A100-SXM4-40GB MIG 1g.5gb", "... MIG 1c.2g.20gb"
_MIG = re.compile(r"(?<![0-9A-Za-z])MIG(?:[\s-]+((?:\d+c\.)?\d+g\.\d+gb(?:\+me)?))?(?![0-9A-Za-z])",
                  re.IGNORECASE)  # fmt: skip


@dataclass(frozen=True)
class Architecture:
    id: str
    vendor: str
    name: str
    matrix_unit: str  # "Tensor Cores", "Matrix Cores", "AI Accelerators", or NONE
    matrix_precisions: tuple[str, ...]
    source: str
    compute_capabilities: tuple[str, ...] = ()
    gfx: tuple[str, ...] = ()
    #: the parts of this generation that have no matrix units although its compute capability
    #: says nothing of it (Turing's TU116/TU117: 7.5 like the RTX parts): a device known only by
    #: the capability may be one of them
    parts_without: str | None = None


@dataclass(frozen=True)
class DeviceModel:
    """One ``[[gpu]]`` row."""

    model: str
    pattern: re.Pattern[str]
    vendor: str
    architecture: Architecture
    source: str
    compute_capability: str | None = None  # NVIDIA only
    gfx: str | None = None  # AMD only
    matrix_unit: str | None = None  # overrides the architecture's (GTX 16: Turing, no TCs)
    tflops: tuple[tuple[str, float], ...] = ()
    memory_gbs: float | None = None
    #: NVLink bandwidth as the vendor prints it (GB/s, both directions), and the document
    nvlink_gbs: float | None = None
    nvlink_source: str | None = None

    @property
    def has_matrix_units(self) -> bool:
        return (self.matrix_unit or self.architecture.matrix_unit) != NONE


@dataclass(frozen=True)
class Table:
    compiled: str
    architectures: tuple[Architecture, ...]
    models: tuple[DeviceModel, ...]


def _architecture(raw: dict[str, Any]) -> Architecture:
    return Architecture(
        id=str(raw["id"]),
        vendor=str(raw["vendor"]),
        name=str(raw["name"]),
        matrix_unit=str(raw["matrix_unit"]),
        matrix_precisions=tuple(str(p) for p in raw.get("matrix_precisions", ())),
        source=str(raw["source"]),
        compute_capabilities=tuple(str(c) for c in raw.get("compute_capabilities", ())),
        gfx=tuple(str(g).lower() for g in raw.get("gfx", ())),
        parts_without=raw.get("parts_without"),
    )


def _model(raw: dict[str, Any], archs: dict[str, Architecture]) -> DeviceModel:
    return DeviceModel(
        model=str(raw["model"]),
        pattern=re.compile(f"{_TOKEN_START}(?:{raw['match']}){_TOKEN_END}", re.IGNORECASE),
        vendor=str(raw["vendor"]),
        architecture=archs[str(raw["architecture"])],
        source=str(raw["source"]),
        compute_capability=raw.get("compute_capability"),
        gfx=raw.get("gfx"),
        matrix_unit=raw.get("matrix_unit"),
        tflops=tuple((k, float(raw[k])) for k in PEAK_KEYS if k in raw),
        memory_gbs=float(raw["memory_gbs"]) if "memory_gbs" in raw else None,
        nvlink_gbs=float(raw["nvlink_gbs"]) if "nvlink_gbs" in raw else None,
        nvlink_source=raw.get("nvlink_source"),
    )


@cache
def table() -> Table:
    """The shipped table, read once per process."""
    text = resources.files("tcreport.analysis").joinpath(DATA).read_text(encoding="utf-8")
    raw = tomllib.loads(text)
    archs = {a.id: a for a in (_architecture(r) for r in raw["architecture"])}
    return Table(
        compiled=str(raw["compiled"]),
        architectures=tuple(archs.values()),
        models=tuple(_model(r, archs) for r in raw["gpu"]),
    )


def for_name(name: str | None) -> DeviceModel | None:
    """The model row whose ``match`` finds ``name`` (first in file order), else ``None``."""
    if not name:
        return None
    return next((m for m in table().models if m.pattern.search(name)), None)


def mig_profile(name: str | None) -> str | None:
    """The MIG instance profile a device name carries ("1g.10gb"; "MIG" when the name says MIG
    without one), else ``None``. A MIG instance has a fraction of its GPU's SMs and memory
    bandwidth; the fraction per profile is not in the device table, so it gets no peaks."""
    m = _MIG.search(name or "")
    if m is None:
        return None
    return m.group(1) or "MIG"


def plain_cc(cc: str) -> str:
    """A compute capability in the one spelling the readers write ("8.0", "7.5"), whatever the
    input's (" 8.00 ", "8", "08.0"): what every output shows and what two runs' capabilities are
    compared by; a text that is not a capability is returned as it is."""
    m = re.fullmatch(r"\s*([0-9]+)(?:\.([0-9]+))?\s*", cc)  # ASCII digits: "٨.٠" is no spelling
    return f"{int(m.group(1))}.{(m.group(2) or '0').rstrip('0') or '0'}" if m else cc


def architecture_of_cc(cc: str | None) -> Architecture | None:
    """The NVIDIA generation of a compute capability ("7.5" -> Turing), else ``None``."""
    if not cc:
        return None
    key = plain_cc(cc)
    return next(
        (
            a
            for a in table().architectures
            if a.vendor == "nvidia" and key in a.compute_capabilities
        ),
        None,
    )


def gfx_id(text: str | None) -> str | None:
    """The AMD gfx id a name or string carries ("gfx942"), lower-case, else ``None``."""
    m = _GFX.search(text or "")
    return f"gfx{m.group(1).lower()}" if m else None


def architecture_of_gfx(gfx: str | None) -> Architecture | None:
    """The AMD generation of a gfx id ("gfx942" -> CDNA 3), else ``None``."""
    if not gfx:
        return None
    return next(
        (a for a in table().architectures if a.vendor == "amd" and gfx.lower() in a.gfx), None
    )


@dataclass(frozen=True)
class DeviceFacts:
    """What the table says of one device; ``None`` fields are unknown, never guessed."""

    model: str | None = None  # the table's model name
    vendor: str | None = None
    architecture: str | None = None  # "Turing", "CDNA 3"
    compute_capability: str | None = None  # recorded, else the model's (NVIDIA only)
    matrix_unit: str | None = None  # "Tensor Cores", ... or NONE
    matrix_precisions: tuple[str, ...] = ()
    source: str | None = None
    #: set when only the compute capability identifies the device and some parts of that
    #: generation have no matrix units (a 7.5 may be a GTX 1650): then ``matrix_unit`` is
    #: ``None`` (not known) and ``matrix_precisions`` are what the units take where they exist
    parts_without: str | None = None

    @property
    def has_matrix_units(self) -> bool | None:
        """True/False when the device is identified, ``None`` when it is not (or when its compute
        capability is shared by parts with and without matrix units)."""
        return None if self.matrix_unit is None else self.matrix_unit != NONE

    @property
    def matrix_unit_words(self) -> str | None:
        """What is known of the device's matrix units, in words: "Tensor Cores", "none", or, for
        a device known only by a capability its generation's smaller parts share, "Tensor Cores
        unless this is a GeForce GTX 16-series ... part"; ``None`` when nothing is known."""
        if self.parts_without is not None and self.architecture is not None:
            unit = next(
                (a.matrix_unit for a in table().architectures if a.name == self.architecture),
                None,
            )
            return f"{unit} unless this is a {self.parts_without} part"
        return self.matrix_unit


def describe(gpu: Gpu) -> DeviceFacts:
    """The table's facts for one device: its name first (the model row), else its recorded
    compute capability (NVIDIA or unnamed vendor) or gfx id (AMD)."""
    row = for_name(gpu.name)
    if row is not None and (gpu.vendor in (None, row.vendor)):
        own_cc = gpu.compute_capability if row.vendor == "nvidia" else None
        return DeviceFacts(
            model=row.model,
            vendor=row.vendor,
            architecture=row.architecture.name,
            compute_capability=own_cc or row.compute_capability,
            matrix_unit=row.matrix_unit or row.architecture.matrix_unit,
            matrix_precisions=row.architecture.matrix_precisions if row.has_matrix_units else (),
            source=row.source,
        )
    by_cc = architecture_of_cc(gpu.compute_capability) if gpu.vendor in (None, "nvidia") else None
    if by_cc is not None:
        return _from_arch(by_cc, gpu.compute_capability)
    by_gfx = architecture_of_gfx(gfx_id(gpu.name)) if gpu.vendor in (None, "amd") else None
    if by_gfx is not None:
        return _from_arch(by_gfx, None)
    return DeviceFacts(vendor=gpu.vendor)


def _from_arch(arch: Architecture, cc: str | None) -> DeviceFacts:
    """A device known by its generation only: its matrix units are the generation's, unless the
    generation has parts without them (then not known: ``parts_without`` says which)."""
    return DeviceFacts(
        vendor=arch.vendor,
        architecture=arch.name,
        compute_capability=cc if arch.vendor == "nvidia" else None,
        matrix_unit=None if arch.parts_without else arch.matrix_unit,
        matrix_precisions=arch.matrix_precisions,
        source=arch.source,
        parts_without=arch.parts_without,
    )
