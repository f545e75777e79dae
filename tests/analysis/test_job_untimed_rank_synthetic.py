"""A rank whose trace holds no timed GPU step (every kernel malformed, or a CPU-only rank) is
compared like an absent rank: the other ranks' per-iteration figures stand, and a note names it.
Before, one such rank turned every rank's step figures into n/a (hostile round 5)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from job_synthetic import write_job

from tcreport import api


def _break_kernels(path: Path) -> None:
    with gzip.open(path, "rt") as fh:
        doc = json.load(fh)
    for e in doc["traceEvents"]:
        if e["cat"] == "kernel":
            e["dur"] = -5  # ends before it starts: the reader skips it
    with gzip.open(path, "wt") as fh:
        json.dump(doc, fh)


def test_synthetic_rank_without_gpu_steps_is_left_out_and_named(tmp_path: Path) -> None:
    paths = write_job(tmp_path, 3, slow=(2,), sleep_us=20_000)
    _break_kernels(paths[1])
    job = api.find_job(tmp_path)
    assert job is not None
    sec = api.analyze_job(job).section
    assert {c.rank for c in sec.cells} == {0, 2}
    assert len(sec.iterations) == 3
    assert sec.straggler is not None and sec.straggler.rank == 2
    assert any(n.startswith("rank 1: no GPU activity") for n in sec.notes), sec.notes
    assert not any("no per-iteration figures" in n for n in sec.notes)
    assert sec.violations == ()


def test_synthetic_job_with_no_timed_rank_still_says_why(tmp_path: Path) -> None:
    for path in write_job(tmp_path, 2):
        _break_kernels(path)
    job = api.find_job(tmp_path)
    assert job is not None
    sec = api.analyze_job(job).section
    assert not sec.cells
    assert any("no per-iteration figures" in n for n in sec.notes)


def _rename_steps(path: Path, shift: int) -> None:
    """The rank's ProfilerStep#N becomes #N+shift: no iteration in common with the others."""
    with gzip.open(path, "rt") as fh:
        doc = json.load(fh)
    for e in doc["traceEvents"]:
        if e["name"].startswith("ProfilerStep#"):
            e["name"] = f"ProfilerStep#{int(e['name'][13:]) + shift}"
    with gzip.open(path, "wt") as fh:
        json.dump(doc, fh)


def _no_common_iteration_job(folder: Path) -> Path:
    """Ranks 0 and 1 timed but with no ProfilerStep in common (so no cells at all), rank 2
    untimed."""
    paths = write_job(folder, 3)
    _rename_steps(paths[1], 10)
    _break_kernels(paths[2])
    return folder


def test_synthetic_untimed_ranks_are_the_sections_own_not_read_from_its_cells(
    tmp_path: Path,
) -> None:
    """The section names its untimed ranks once; with no cells at all (no iteration every rank
    ran) they are still untimed, and a job diff leaves them out of its like-for-like figures.
    Before, the diff worked them out from the cells and, with none, took every rank as timed."""
    base = api.analyze_job(_no_common_iteration_job(tmp_path / "base"))
    head = api.analyze_job(_no_common_iteration_job(tmp_path / "head"))
    sec = base.section
    assert not sec.cells
    assert sec.untimed == (2,) and sec.timed == (0, 1)
    assert json.loads(api.render_job_json(base))["job"]["untimed_ranks"] == [2]
    d = api.diff_jobs(base, head)
    notes = " ".join(d.notes)
    assert "rank 2 in base; rank 2 in head" in notes, notes
    assert "(ranks 0, 1)" in notes, notes


def test_synthetic_every_rank_timed_has_no_untimed(tmp_path: Path) -> None:
    sec = api.analyze_job(write_job(tmp_path, 2)[0].parent).section
    assert sec.untimed == () and sec.timed == (0, 1)
