"""The rank a trace is of, from Kineto's ``distributedInfo``: shared by the Kineto reader (which
records it in :class:`~tcreport.model.RunMeta`) and job detection (which sniffs it)."""

from __future__ import annotations

from typing import Any

from tcreport.model import Distributed


def _int(v: Any) -> int | None:
    return v if type(v) is int and 0 <= v < 1 << 31 else None


def _text(v: Any) -> str | None:
    return v[:64] if isinstance(v, str) and v else None


def distributed_from(info: Any) -> Distributed | None:
    """The identity ``distributedInfo`` states; None without a rank. ``{"rank": 0}`` alone (the
    A100 AlexNet sample) is still a rank, of a world size the trace does not say. The default
    process group (``pg_config``'s ``default_pg``, where written) is kept as
    ``backend_config/size``: ranks of one job share it, whatever other groups each is in."""
    if not isinstance(info, dict):
        return None
    rank = _int(info.get("rank"))
    if rank is None:
        return None
    world = _int(info.get("world_size"))
    default_group = None
    configs = info.get("pg_config")
    for pg in configs if isinstance(configs, list) else ():
        if isinstance(pg, dict) and pg.get("pg_desc") == "default_pg":
            default_group = f"{_text(pg.get('backend_config'))}/{_int(pg.get('pg_size'))}"
    return Distributed(
        rank=rank,
        world_size=world if world is not None and world > rank else None,
        backend=_text(info.get("backend")),
        nccl_version=_text(info.get("nccl_version")),
        default_group=default_group,
    )
