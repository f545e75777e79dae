"""The devices of a Kineto trace: ``deviceProperties``, matched to the devices events ran on.

A node lists all its devices, a process uses some: only those that ran GPU events are kept. A
device that ran events but is not listed (ROCm traces of a process pinned to GPU 2 list only id
0: the list is numbered from the process's point of view) takes what the listed devices agree on:
their name and vendor when they are all one model, their vendor when they are one vendor; the
note says so. It is never left an "unknown GPU" when the trace does identify it.

ROCm writes the HIP architecture (9.0 on an MI250) into ``computeMajor``/``computeMinor``: that
is not an NVIDIA compute capability and is never read as one.
"""

from __future__ import annotations

from typing import Any

from tcreport.ingest.kineto import columns as col
from tcreport.model import Gpu, gpu_vendor


def _listed(devices: tuple[tuple[Any, Any, Any, Any, Any], ...]) -> dict[int, Gpu]:
    listed: dict[int, Gpu] = {}
    for dev, name, major, minor, sms in devices:
        if type(dev) is not int:
            continue
        label = col.clean_str(name[:200]) if isinstance(name, str) else None
        vendor = gpu_vendor(label)
        cc = (
            f"{major}.{minor}"
            if type(major) is int and type(minor) is int and vendor in (None, "nvidia")
            else None
        )
        listed.setdefault(
            dev,
            Gpu(
                device_id=dev,
                name=label,
                compute_capability=cc,
                sm_count=sms if type(sms) is int else None,
                vendor=vendor,
            ),
        )
    return listed


def gpus(
    devices: tuple[tuple[Any, Any, Any, Any, Any], ...], used: set[int]
) -> tuple[tuple[Gpu, ...], str | None]:
    """The devices that ran events (all listed ones when none did), and a note when some of
    them are not in ``deviceProperties``."""
    listed = _listed(devices)
    found = {d: g for d, g in listed.items() if not used or d in used}
    missing = sorted(used - found.keys())
    models = {(g.name, g.vendor, g.compute_capability, g.sm_count) for g in listed.values()}
    vendors = {g.vendor for g in listed.values()}
    for d in missing:
        if len(models) == 1:
            name, vendor, cc, sms = next(iter(models))
            found[d] = Gpu(d, name, cc, sms, vendor)
        else:
            found[d] = Gpu(d, vendor=next(iter(vendors)) if len(vendors) == 1 else None)
    note = None
    if missing and listed:
        note = (
            f"GPU events ran on device {', '.join(map(str, missing))}, which deviceProperties "
            f"does not list (it lists {', '.join(map(str, sorted(listed)))}): "
            + (
                "named after the listed devices, all one model"
                if len(models) == 1
                else "model unknown"
            )
        )
    return tuple(found[d] for d in sorted(found)), note
