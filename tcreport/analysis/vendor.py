"""Whose GPU ran the trace, decided once, because a verdict means something only for its vendor.

A PyTorch trace from ROCm looks like a CUDA one (the same ``cuda_runtime``/``kernel`` categories,
``deviceProperties`` with a ``computeMajor``), but its GEMMs are Tensile ``Cijk_*`` kernels that the
NVIDIA name rules cannot judge and its "compute capability" is a HIP architecture number. Reading
such a run with NVIDIA rules turns every unknown GEMM into "did not use Tensor Cores". So the vendor
picks the rule pack (AMD's first on AMD runs) and the name of the matrix unit the report shows; a
vendor tcreport has no rules for (Intel) gets no verdicts at all: unknown, never "no".

Evidence, strongest first: the device table's row for a device name (a model name is the most
specific fact: a recorded vendor that contradicts it is overruled, with a note), the vendor the
reader recorded (``Gpu.vendor``), what the table knows of a recorded NVIDIA compute capability or
AMD gfx id; formats that only exist on NVIDIA (DLProf, Nsight Systems, Nsight
Compute); a ROCm/HIP build string; kernel names.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from enum import StrEnum

from tcreport.analysis import device_table
from tcreport.model import Gpu, RunMeta, SourceFormat


class Vendor(StrEnum):
    NVIDIA = "nvidia"
    AMD = "amd"
    INTEL = "intel"
    META = "meta"  # MTIA-class accelerators (PyTorch's mtia_* Kineto events)
    UNKNOWN = "unknown"


#: What the report calls the matrix units, per vendor.
MATRIX_UNIT = {
    Vendor.NVIDIA: "Tensor Cores",
    Vendor.AMD: "AMD Matrix Cores",
    Vendor.INTEL: "Intel XMX engines",
    Vendor.META: "MTIA matrix units",
    Vendor.UNKNOWN: "Tensor Cores",
}

_NVIDIA_ONLY = frozenset(
    {
        SourceFormat.DLPROF_CSV,
        SourceFormat.DLPROF_JSON,
        SourceFormat.DLPROF_SQLITE,
        SourceFormat.NSYS_SQLITE,
        SourceFormat.NCU_CSV,
    }
)
_ROCM_BUILD = re.compile(r"rocm|\bhip\b", re.IGNORECASE)
#: Kernel names only one vendor's libraries emit (PyTorch's own kernels and RCCL's ``nccl*``
#: keep their CUDA names on ROCm, so they prove nothing).
_AMD_KERNELS = re.compile(
    r"^Cijk_|__amd_rocclr_|MIOpen|miopen|igemm_\w+_gtc|(?:^|\W)ck(?:_tile)?::|xdlops|Tensile"
)
_NVIDIA_KERNELS = re.compile(
    r"(?:^|\W|_)(?:sm\d{2,3}[a-z]?_|ampere_|volta_|turing_|maxwell_|hopper_)|nvjet_|cutlass|xmma|"
    r"cudnn|cublas|h884|s1688|16816"
)


def _named_vendor(g: Gpu) -> str | None:
    """A device's vendor from its metadata: the device table's, where it knows the model name,
    else the vendor recorded with it, else what the table knows of its capability or gfx id.

    The table wins over a recorded vendor that contradicts it: a name is the more specific fact
    (an ingest folder's manifest saying ``vendor: "amd"`` of an "NVIDIA A100-SXM4-40GB" would
    otherwise judge its ``ampere_sgemm`` kernels by AMD's rules); :func:`resolve_gpus` says so in
    a note."""
    row = device_table.for_name(g.name)
    return row.vendor if row is not None else g.vendor or device_table.describe(g).vendor


def detect(meta: RunMeta, kernel_names: Iterable[str] = ()) -> Vendor:
    """The run's GPU vendor from its metadata, else from the names of its kernels."""
    named = {v for g in meta.gpus if (v := _named_vendor(g))}
    if len(named) == 1:
        one = named.pop()
        return Vendor(one) if one in Vendor.__members__.values() else Vendor.UNKNOWN
    if meta.format in _NVIDIA_ONLY:
        return Vendor.NVIDIA
    if _ROCM_BUILD.search(meta.framework or ""):
        return Vendor.AMD
    amd = nvidia = False
    for name in kernel_names:
        amd = amd or bool(_AMD_KERNELS.search(name))
        nvidia = nvidia or bool(_NVIDIA_KERNELS.search(name))
    if amd and not nvidia:
        return Vendor.AMD
    if nvidia and not amd:
        return Vendor.NVIDIA
    return Vendor.UNKNOWN


def resolve_gpus(meta: RunMeta, run_vendor: Vendor) -> RunMeta:
    """Each device's vendor from every source, strongest first: as the reader recorded it, else
    the device table's row for its name, else the run's (a format only NVIDIA writes, a ROCm
    build, the kernel-name families: the last resort). A device that is not NVIDIA's keeps no
    compute capability, whichever source said so: a HIP architecture number is not one."""
    fallback = run_vendor.value if run_vendor is not Vendor.UNKNOWN else None
    gpus = []
    notes = list(meta.notes)
    for g in meta.gpus:
        who = _named_vendor(g) or fallback
        if g.vendor is not None and who != g.vendor:
            notes.append(
                f"GPU {g.device_id}: the input records vendor {g.vendor!r}, but the device table "
                f"knows {g.name!r} as {who!r}; read as {who!r}, the name is the more specific fact"
            )
        cc = g.compute_capability if who in (None, Vendor.NVIDIA.value) else None
        cc = device_table.plain_cc(cc) if cc else cc  # " 8.00 " reads "8.0" in every output
        gpus.append(dataclasses.replace(g, vendor=who, compute_capability=cc))
    resolved = tuple(gpus)
    if resolved == meta.gpus:
        return meta
    return dataclasses.replace(meta, gpus=resolved, notes=tuple(notes))
