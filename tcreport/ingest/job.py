"""Distributed jobs: which traces in a folder are the ranks of one job, judged without parsing them.

PyTorch's profiler writes one trace per rank, so a DDP or FSDP job on 8 GPUs leaves 8 files in one
folder. Reading each as an unrelated run hides what matters about the job (the slow rank, the
time the others wait for it in collectives), so a folder whose traces share a job is read as one.

What makes traces one job, cheapest evidence first, never a whole parse:

* Kineto's ``distributedInfo`` (``rank``, ``world_size``, ``backend``, and ``pg_config`` where the
  profiler wrote it), read from the first MiB of text as :func:`ingest.detect` sniffs (Kineto
  writes it before ``traceEvents``); an uncompressed trace's last MiB is looked at as well (a
  seek). Ranks of one job agree on the backend, the world size, the NCCL version and the default
  process group; each names its own rank.
* Otherwise the file name: ``rank-3``, ``rank_3``, ``rank3`` (HTA's naming, and ``nsys profile -o
  report.rank%q{RANK}``); the names with the number taken out must be equal.
* A ``tcreport ingest`` folder keeps the identity its trace had (``RunMeta.distributed``).
* One Nsight Systems export of a multi-process launch (``torchrun`` under ``nsys profile``) is
  a job by itself: a rank per process (:mod:`tcreport.ingest.nsys.processes`, :func:`launch_job`).

A job needs two or more ranks, each present once. Two traces claiming the same rank of the same
job are told apart by their file names with the rank taken out (two jobs saved side by side); if
the names cannot tell them apart either, neither is taken for a rank of a job. Nothing here
extrapolates: a job of 128 ranks with 2 traces present is "2 of 128 ranks".
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tcreport.ingest.common.distributed import distributed_from
from tcreport.ingest.common.later import Later
from tcreport.model import Distributed, SourceFormat

#: How much text to look at, at each end of a trace, for ``distributedInfo``.
SNIFF_BYTES = 1 << 20
_DIST_KEY = re.compile(rb'"distributedInfo"\s*:\s*\{')
#: ``rank-3``, ``rank_3``, ``rank3`` (not ``frank3``): the rank a file name states.
_RANK_NAME = re.compile(r"(?<![A-Za-z])rank[-_]?(\d{1,6})(?!\d)", re.IGNORECASE)
#: Formats whose traces can be ranks of a job (one process each).
RANK_FORMATS = (SourceFormat.KINETO_JSON, SourceFormat.NSYS_SQLITE, SourceFormat.TCREPORT_PARQUET)


@dataclass(frozen=True)
class RankTrace:
    """One trace and the rank it is of."""

    path: Path
    format: SourceFormat
    rank: int
    distributed: Distributed | None  # None: the rank came from the file name
    stem: str  # the file name with the rank number taken out
    #: the process of a multi-process export this rank is (None: the whole trace is the rank)
    process_id: int | None = None

    @property
    def name(self) -> str:
        """How the rank's trace is named in the job's tables."""
        pid = f" (process {self.process_id})" if self.process_id is not None else ""
        return f"{self.path.name}{pid}"


@dataclass(frozen=True)
class Job:
    """The ranks of one distributed job present in a folder, sorted by rank."""

    folder: Path
    ranks: tuple[RankTrace, ...]
    world_size: int | None  # None when no trace records it (ranks known from file names only)
    backend: str | None
    #: "distributedInfo" | "file names" | "tcreport ingest metadata" | processes of one export
    detected_by: str
    label: str  # how the job is named in lists and batch sources
    #: why no collective message sizes can be read, where the format says more than "none"
    #: (worked out off the critical path: :attr:`sizes_note`)
    sizes: Later[str | None] | None = dataclasses.field(default=None, compare=False, repr=False)
    #: files beside the ranks named like one of them (``*_rank-N.json.gz``) that no reader took:
    #: a crashed rank's half-written trace is named in the job's notes, not silently dropped
    unreadable: tuple[str, ...] = ()

    def unreadable_notes(self) -> tuple[str, ...]:
        return tuple(
            f"{name}: named like a rank of this job but not readable as a trace (cut short or "
            "damaged?): left out"
            for name in self.unreadable
        )

    @property
    def sizes_note(self) -> str | None:
        return None if self.sizes is None else self.sizes.value()

    @property
    def present(self) -> int:
        return len(self.ranks)

    def describe(self) -> str:
        """``2 of 128 ranks (nccl)``: what is present, never more."""
        of = f" of {self.world_size}" if self.world_size is not None else ""
        backend = f", {self.backend}" if self.backend else ""
        return f"{self.present}{of} ranks{backend}; by {self.detected_by}"

    def rank_path(self, rank: int) -> Path:
        return self.rank_trace(rank).path

    def rank_trace(self, rank: int) -> RankTrace:
        for r in self.ranks:
            if r.rank == rank:
                return r
        present = ", ".join(str(r.rank) for r in self.ranks)
        from tcreport.errors import UsageError

        raise UsageError(f"no rank {rank} in this job (ranks present: {present})", self.folder)


def _object_at(text: bytes, start: int) -> dict[str, Any] | None:
    """The JSON object that opens at ``start``, or None when it is cut off or not JSON."""
    try:
        value, _ = json.JSONDecoder().raw_decode(text[start:].decode("utf-8", "replace"))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _kineto_identity(path: Path) -> Distributed | None:
    from tcreport.ingest.kineto.stdlib import GZIP_MAGIC, read_prefix

    try:
        head = read_prefix(path, SNIFF_BYTES, marker=b'"traceEvents"')
        found = _DIST_KEY.search(head)
        if found is None:
            with path.open("rb") as fh:
                if fh.read(2) == GZIP_MAGIC:
                    return None  # the tail of a gzip costs a whole decompression: not for a sniff
                size = fh.seek(0, 2)
                fh.seek(max(0, size - SNIFF_BYTES))
                head = fh.read()
            found = _DIST_KEY.search(head)
            if found is None:
                return None
    except OSError:
        return None
    info = _object_at(head, found.end() - 1)
    return distributed_from(info) if info is not None else None


def _ingest_identity(path: Path) -> Distributed | None:
    from tcreport.model import RunMeta

    try:
        manifest = json.loads((path / "tcreport-run.json").read_text(encoding="utf-8"))
        return RunMeta.from_json(json.dumps(manifest["meta"])).distributed
    except (OSError, ValueError, KeyError, TypeError):
        return None


def name_rank(name: str) -> tuple[int, str] | None:
    """The rank a file name states and the name with it taken out (``rank-*.json.gz``)."""
    hits = list(_RANK_NAME.finditer(name))
    if len(hits) != 1:
        return None
    m = hits[0]
    return int(m.group(1)), name[: m.start(1)] + "*" + name[m.end(1) :]


def _stem(name: str) -> str:
    """The name with its digits taken out: Kineto's ``host_pid.time.pt.trace.json`` names differ
    per rank only in numbers, two jobs saved side by side by their words."""
    return re.sub(r"\d+", "*", name)


def identify(path: Path, fmt: SourceFormat) -> RankTrace | None:
    """``path`` as a rank of a job, or None when nothing says it is one."""
    if fmt not in RANK_FORMATS:
        return None
    dist = None
    if fmt is SourceFormat.KINETO_JSON:
        dist = _kineto_identity(path)
    elif fmt is SourceFormat.TCREPORT_PARQUET:
        dist = _ingest_identity(path)
    named = name_rank(path.name)
    if dist is not None:
        return RankTrace(path, fmt, dist.rank, dist, named[1] if named else _stem(path.name))
    if named is not None:
        return RankTrace(path, fmt, named[0], None, named[1])
    return None


def _key(r: RankTrace) -> tuple[object, ...]:
    """What the ranks of one job share."""
    d = r.distributed
    if d is None:
        return (r.format, "name", r.stem)
    return (r.format, "dist", d.backend, d.world_size, d.nccl_version, d.default_group)


def _split(members: list[RankTrace]) -> list[list[RankTrace]]:
    """Groups of one job key with each rank once: by file name when ranks repeat. Members whose
    names cannot separate a repeated rank belong to no job."""
    counts: dict[int, int] = defaultdict(int)
    for r in members:
        counts[r.rank] += 1
    if max(counts.values()) == 1:
        return [members]
    by_stem: dict[str, list[RankTrace]] = defaultdict(list)
    for r in members:
        by_stem[r.stem].append(r)
    out = []
    for group in by_stem.values():
        seen: dict[int, int] = defaultdict(int)
        for r in group:
            seen[r.rank] += 1
        out.append([r for r in group if seen[r.rank] == 1])
    return out


def _label(folder: Path, ranks: list[RankTrace], alone: bool) -> str:
    if alone:
        return folder.name or str(folder)
    stems = {r.stem for r in ranks}
    if len(stems) == 1 and "*" in (stem := next(iter(stems))):
        return f"{folder.name}/{stem}"
    return f"{folder.name}/{ranks[0].path.name} (+{len(ranks) - 1} ranks)"


def group(folder: Path, traces: list[tuple[SourceFormat, Path]]) -> tuple[list[Job], list[Path]]:
    """The jobs among ``traces`` (the traces directly in ``folder``) and the traces left over."""
    identified = [(p, identify(p, f)) for f, p in traces]
    keyed: dict[tuple[object, ...], list[RankTrace]] = defaultdict(list)
    for _, r in identified:
        if r is not None:
            keyed[_key(r)].append(r)
    groups = [g for members in keyed.values() for g in _split(members) if len(g) >= 2]
    taken = {r.path for g in groups for r in g}
    rest = [p for p, _ in identified if p not in taken]
    alone = len(groups) == 1 and not rest
    jobs = [_job(folder, sorted(g, key=lambda r: r.rank), alone) for g in groups]
    return sorted(jobs, key=lambda j: j.label), rest


def _job(folder: Path, ranks: list[RankTrace], alone: bool) -> Job:
    dists = [r.distributed for r in ranks if r.distributed is not None]
    if not dists:
        by = "file names"
    elif ranks[0].format is SourceFormat.TCREPORT_PARQUET:
        by = "tcreport ingest metadata"
    else:
        by = "distributedInfo"
    note: Later[str | None] | None = None
    if ranks[0].format is SourceFormat.NSYS_SQLITE:  # what its NVTX holds of NCCL's sizes
        from tcreport.ingest.nsys import processes

        note = processes.sizes_later(ranks[0].path)
    return Job(
        folder=folder,
        ranks=tuple(ranks),
        world_size=dists[0].world_size if dists else None,
        backend=dists[0].backend if dists else None,
        detected_by=by,
        label=_label(folder, ranks, alone),
        sizes=note,
    )


def with_unreadable(job: Job, children: list[Path], read: set[Path]) -> Job:
    """``job`` with the files among ``children`` that are named like its ranks (the same name
    with another rank number) but were not read as traces."""
    patterns = {p for r in job.ranks if (p := name_rank(r.path.name)) is not None}
    stems = {stem for _, stem in patterns}
    names = tuple(
        c.name
        for c in children
        if c not in read and (m := name_rank(c.name)) is not None and m[1] in stems
    )
    return dataclasses.replace(job, unreadable=names) if names else job


def describe_contents(jobs: list[Job], rest: list[tuple[SourceFormat, Path]]) -> str:
    """``holds 1 job (...) and 2 other traces: a (kineto-json), b (...)``: for refusals."""
    parts = [
        f"job {j.label} ({j.describe()}: {', '.join(r.path.name for r in j.ranks)})" for j in jobs
    ]
    parts += [f"{p.name} ({f.value})" for f, p in rest]
    return "; ".join(parts)


def launch_job(path: Path) -> Job | None:
    """The job one Nsight Systems export holds when its processes each drove their own GPUs
    (:mod:`tcreport.ingest.nsys.processes`); None for any other export."""
    from tcreport.ingest.nsys import processes

    launch = processes.launch_of(path)
    if launch is None:
        return None
    fmt = SourceFormat.NSYS_SQLITE
    ranks = tuple(RankTrace(path, fmt, r.rank, None, path.name, r.process_id) for r in launch.ranks)
    return Job(
        folder=path,
        ranks=ranks,
        world_size=None,  # the export holds the ranks it holds; a node of a larger job says no more
        backend=None,
        detected_by=processes.DETECTED_BY,
        label=path.name,
        sizes=launch.sizes,
    )
