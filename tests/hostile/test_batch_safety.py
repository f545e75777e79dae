"""``tcreport batch`` survives what archives and machines do to it: a second writer, a killed
worker, a killed coordinator, Ctrl-C and entries it cannot read. Real Kineto traces as inputs; the
process-level cases run the CLI in a subprocess with test hooks from ``fixtures/batch_hooks``."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, NoReturn

import pyarrow.dataset as ds
import pytest
from trace_paths import REALTRACES, ROOT

from tcreport.batch import identity, lock
from tcreport.batch import runner as batch
from tcreport.errors import InputError, OutputError

HOOKS = ROOT / "tests" / "fixtures" / "batch_hooks"
KINETO = REALTRACES / "kineto"


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    """Four real Kineto traces, flat, named a.json.gz .. d.json.gz."""
    traces = sorted(KINETO.glob("*/*.json.gz"))
    if len(traces) < 4:
        pytest.skip("real traces not available")
    root = tmp_path / "in"
    root.mkdir()
    for name, src in zip("abcd", traces, strict=False):
        shutil.copy(src, root / f"{name}.json.gz")
    return root


def _runs(out: Path) -> list[dict[str, Any]]:  # a Parquet row: str, int, None, ...
    table = ds.dataset(out / "dataset" / "runs", format="parquet", partitioning="hive").to_table()
    rows: list[dict[str, Any]] = table.to_pylist()
    return rows


def _cli(args: list[str], tag: str, **env: str) -> subprocess.Popen[str]:
    full = {
        **os.environ,
        "PYTHONPATH": f"{ROOT}{os.pathsep}{HOOKS}",
        "TCREPORT_TEST_TAG": tag,  # finds every process of this batch in /proc afterwards
        **env,
    }
    return subprocess.Popen(
        [sys.executable, "-m", "tcreport", *args],
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _tagged(tag: str) -> list[int]:
    """Live processes whose environment holds ``TCREPORT_TEST_TAG=tag`` (zombies excluded)."""
    pids = []
    needle = f"TCREPORT_TEST_TAG={tag}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def test_a_second_writer_is_refused_with_one_line(archive: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with lock.exclusive(out), pytest.raises(OutputError, match="another tcreport batch"):
        batch.run_batch(archive, out)
    assert not (out / "dataset").exists()
    proc = _cli(["batch", str(archive), "-o", str(out)], uuid.uuid4().hex)
    with lock.exclusive(out):
        _, err = proc.communicate(timeout=120)
    assert err.strip().count("\n") == 0 and "another tcreport batch" in err, err
    result = batch.run_batch(archive, out)  # the lock is gone with its holder
    assert result.processed == 4


def test_a_leftover_staging_folder_is_not_a_traceback(archive: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    rid = identity.content_hash(archive / "a.json.gz")[:16]
    (out / batch.STAGING / rid / "runs.parquet").mkdir(parents=True)
    result = batch.run_batch(archive, out)
    assert result.processed == 4 and not result.failed
    assert not any((out / batch.STAGING).iterdir())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")
def test_a_worker_killed_once_is_retried_in_the_same_batch(archive: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    marker = tmp_path / "killed-once"
    proc = _cli(
        ["batch", str(archive), "-o", str(out), "-j", "2"],
        uuid.uuid4().hex,
        TCREPORT_TEST_KILL="b.json.gz",
        TCREPORT_TEST_KILL_ONCE=str(marker),
    )
    _, err = proc.communicate(timeout=300)
    assert marker.exists()  # the worker did die
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert sorted(r["status"] for r in _runs(out)) == ["ok"] * 4


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")
def test_a_run_whose_worker_dies_twice_is_retried_by_the_next_batch(
    archive: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    proc = _cli(
        ["batch", str(archive), "-o", str(out), "-j", "2"],
        uuid.uuid4().hex,
        TCREPORT_TEST_KILL="b.json.gz",
    )
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1 and "Traceback" not in err, err
    runs = {r["source"]: r for r in _runs(out)}
    assert {s: r["status"] for s, r in runs.items()} == {
        "a.json.gz": "ok",
        "b.json.gz": "retry",
        "c.json.gz": "ok",
        "d.json.gz": "ok",
    }
    assert "died twice" in str(runs["b.json.gz"]["error"])
    # the next batch (no killer now, no --force) processes it; the other runs are skipped
    result = batch.run_batch(archive, out, jobs=2)
    assert (result.processed, result.skipped, result.failed) == (1, 3, ())
    assert sorted(r["status"] for r in _runs(out)) == ["ok"] * 4


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc and prctl")
def test_workers_die_with_a_killed_coordinator(archive: Path, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex
    proc = _cli(
        ["batch", str(archive), "-o", str(tmp_path / "out"), "-j", "2"],
        tag,
        TCREPORT_TEST_SLOW="60",
    )
    try:
        deadline = time.monotonic() + 60
        while len(_tagged(tag)) < 5 and time.monotonic() < deadline:  # + tracker, server, 2 workers
            time.sleep(0.2)
        assert len(_tagged(tag)) >= 5, "the pool did not start"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 10
        while _tagged(tag) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _tagged(tag) == []
    finally:
        for pid in _tagged(tag):
            os.kill(pid, signal.SIGKILL)
        proc.communicate()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")
def test_ctrl_c_stops_at_once_leaving_nothing_half_written(archive: Path, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex
    out = tmp_path / "out"
    proc = _cli(["batch", str(archive), "-o", str(out), "-j", "2"], tag, TCREPORT_TEST_SLOW="60")
    try:
        deadline = time.monotonic() + 60
        while len(_tagged(tag)) < 5 and time.monotonic() < deadline:
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)  # a terminal sends it to the whole group
        _, err = proc.communicate(timeout=10)
    finally:
        for pid in _tagged(tag):
            os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert err.strip() == "tcreport: interrupted"
    assert not list(out.rglob("*.parquet")) and not (out / "index.html").exists()
    deadline = time.monotonic() + 10
    while _tagged(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _tagged(tag) == []


def test_unreadable_entries_are_failures_and_the_batch_goes_on(
    archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """chmod 000 does not stop root (these tests run as root in CI), so besides the real chmod the
    PermissionError is simulated by patching ``Path.open`` and ``Path.iterdir`` for those paths."""
    locked_file = archive / "e.json.gz"
    shutil.copy(archive / "a.json.gz", locked_file)
    (archive / "f.json.gz").write_bytes((archive / "b.json.gz").read_bytes() + b"")
    locked_dir = archive / "private"
    locked_dir.mkdir()
    shutil.copy(archive / "c.json.gz", locked_dir / "g.json.gz")
    (archive / "link-to-locked.json.gz").symlink_to(locked_file)
    (archive / "dangling.json.gz").symlink_to(archive / "nowhere.json.gz")
    locked_file.chmod(0)
    locked_dir.chmod(0)
    denied = {locked_file, locked_dir}
    real_open, real_iterdir = Path.open, Path.iterdir

    def fake_open(self: Path, *args: Any, **kwargs: Any) -> IO[Any]:  # Path.open's signature
        if self.resolve() in denied:
            raise PermissionError(13, "Permission denied", str(self))
        handle: IO[Any] = real_open(self, *args, **kwargs)
        return handle

    def fake_iterdir(self: Path) -> Iterator[Path]:
        if self.resolve() in denied:
            raise PermissionError(13, "Permission denied", str(self))
        return real_iterdir(self)

    monkeypatch.setattr(Path, "open", fake_open)
    monkeypatch.setattr(Path, "iterdir", fake_iterdir)
    out = tmp_path / "out"
    try:
        result = batch.run_batch(archive, out)
    finally:
        locked_file.chmod(0o644)
        locked_dir.chmod(0o755)
    assert dict(result.failed) == {
        "dangling.json.gz": f"dangling symbolic link to {archive / 'nowhere.json.gz'}",
        "e.json.gz": "cannot read: Permission denied",
        "link-to-locked.json.gz": "cannot read: Permission denied",
        "private": "cannot list folder: Permission denied",
    }
    statuses = {r["source"]: r["status"] for r in _runs(out)}
    assert {s for s, st in statuses.items() if st == "ok"} == {
        "a.json.gz",
        "b.json.gz",
        "c.json.gz",
        "d.json.gz",
    }
    assert {statuses[s] for s in dict(result.failed)} == {"retry"}
    # readable again: the next batch picks them up without --force, and the failure rows go
    monkeypatch.undo()
    again = batch.run_batch(archive, out)
    assert dict(again.failed) == {
        "dangling.json.gz": f"dangling symbolic link to {archive / 'nowhere.json.gz'}"
    }
    # their contents were already archived under other names (one run per content), so the
    # 'retry' rows are gone and nothing new was processed
    assert again.processed == 1  # the dangling link, tried again
    assert {r["source"]: r["status"] for r in _runs(out)} == {
        "a.json.gz": "ok",
        "b.json.gz": "ok",
        "c.json.gz": "ok",
        "d.json.gz": "ok",
        "dangling.json.gz": "retry",
    }


def test_an_unreadable_root_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "in"
    root.mkdir()

    def denied(self: Path) -> NoReturn:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "iterdir", denied)
    with pytest.raises(InputError, match="cannot list: Permission denied"):
        batch.discover(root)


def _synthetic_archive(tmp_path: Path) -> tuple[Path, Path]:
    """Two identical synthetic ingest folders, a link to a folder outside the archive (holding a
    third run) and a link to a folder inside it."""
    from synthetic import synthetic_run

    from tcreport import api

    root, outside = tmp_path / "in", tmp_path / "elsewhere"
    (root / "a").mkdir(parents=True)
    outside.mkdir()
    api.ingest(synthetic_run("fp32"), root / "a" / "synthetic_run")
    shutil.copytree(root / "a" / "synthetic_run", root / "b_copy")
    api.ingest(synthetic_run("bf16"), outside / "synthetic_outside")
    (root / "link_out").symlink_to(outside, target_is_directory=True)
    (root / "link_in").symlink_to(root / "a", target_is_directory=True)
    return root, outside


def test_synthetic_discovery_follows_no_folder_link_out_of_the_input(tmp_path: Path) -> None:
    """A link to ``/`` would crawl the filesystem: a folder link that resolves outside the input
    folder is not followed, and said; one that stays inside is followed, into a folder not
    already visited (here ``a``, visited first: nothing new)."""
    root, outside = _synthetic_archive(tmp_path)
    notes: list[str] = []
    found = batch.discover(root, notes=notes)
    sources = sorted(f.path.relative_to(root).as_posix() for f in found)
    assert sources == ["a/synthetic_run", "b_copy"]
    assert notes == [
        f"not followed: link_out -> {outside} (a folder link that leads outside the input folder)"
    ]


def test_synthetic_batch_counts_and_says_identical_copies(tmp_path: Path) -> None:
    """Identical copies in different folders are one run; the summary says how many copies were
    skipped, where it said '1 processed, 0 already, 0 failed' and nothing of them."""
    from typer.testing import CliRunner

    from tcreport.cli import app

    root, _ = _synthetic_archive(tmp_path)
    result = batch.run_batch(root, tmp_path / "out")
    assert (result.processed, result.skipped, result.failed) == (1, 0, ())
    assert result.duplicates == ("b_copy",)
    assert len(result.notes) == 1 and result.notes[0].startswith("not followed: link_out -> ")
    res = CliRunner().invoke(app, ["batch", str(root), "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert "tcreport: note: not followed: link_out -> " in res.stderr
    assert (
        "0 processed, 1 already in the dataset, 0 failed, 1 identical copy skipped (one run each)"
        in " ".join(res.stderr.split())
    )
