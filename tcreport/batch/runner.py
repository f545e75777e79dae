"""``tcreport batch``: an archive of traces -> a partitioned Parquet dataset, an index and reports.

Layout of ``OUT``::

    dataset/<table>/gpu=<GPU model>/month=<YYYY-MM>/<run_id>.parquet   tables runs, ops, kernels,
                                                                        findings (hive partitions)
    reports/<trace name>.html                                           one report per run
    index.html                                                          every run, a TC-share trend
                                                                        per GPU model

A query over one GPU model or one month reads only its files. ``run_id`` is the start of the content
hash (file bytes; for a folder its sorted (name, bytes)), so re-running skips what the dataset holds
and a renamed copy is recognised. The month is when the trace says it was recorded
(``runs.date_source`` names what said so), the file's mtime only where it says nothing. A failed
run is stored too, with its reason, the tcreport version and any missing extra
(``runs.missing_extra``): ``status = 'error'`` for a failure of the run itself, ``'retry'`` for one
outside the trace (its worker died twice, the entry was unreadable). The index lists both, and the
next batch tries every failed run again (done runs stay skipped): a newer tcreport, an extra
installed since, or a fixed file may read it now. A fixed file has new content and so a new run
id; the failed row of the same source is then removed.

One batch at a time writes to ``OUT`` (:mod:`tcreport.batch.lock`); a second one refuses at once.

Atomicity: workers write nothing; this process writes each run's files under ``OUT/.staging`` and
renames them into their partitions, the ``runs`` file last (a run without its ``runs`` row does not
exist for the next batch), and the index is rewritten last of all.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from tcreport import _fs, fmt, ingest
from tcreport._fs import write_text_atomic
from tcreport.batch import identity, lock, pool
from tcreport.batch import index as batch_index
from tcreport.batch import jobs as batch_jobs
from tcreport.batch.naming import partition_value, report_name, taken_names
from tcreport.batch.work import TABLES, Outcome, Task, failed_like, is_legacy_out, retryable
from tcreport.errors import EmptyInputError, InputError, OutputError, TcreportError, UsageError

#: Files whose name says "trace" are listed as failed runs when detection rejects them; any other
#: file that no reader recognises (READMEs, scripts) is not a run and is skipped silently.
TRACE_SUFFIXES = (
    ".sqlite",
    ".sqlite3",
    ".json.gz",
    ".pt.trace.json",
    ".xplane.pb",
    ".nsys-rep",
    ".qdrep",
    ".ncu-rep",
)
#: The statuses of a failed run; the next batch tries each again.
FAILED = ("error", "retry")
#: How the errors of entries that could not be read at all begin: recorded as 'retry', not 'error'.
UNREADABLE = ("cannot read", "cannot list folder", "dangling symbolic link")
STAGING = ".staging"
#: What a batch puts in OUT (``dataset`` first: an unmarked OUT from before the marker has it).
OWN_ENTRIES = ("dataset", "reports", "index.html", STAGING)


class Executor(StrEnum):
    PROCESS = "process"
    DASK = "dask"


@dataclass(frozen=True)
class Found:
    path: Path
    format: str | None
    error: str | None
    members: tuple[Path, ...] = ()  # a distributed job's rank traces (path: their folder)
    source: str | None = None  # a job's name, relative to the batch folder


@dataclass(frozen=True)
class BatchResult:
    processed: int
    skipped: int
    failed: tuple[tuple[str, str], ...]  # (source, error) of runs under DIR now in error state
    new_failures: int
    seconds: float
    index: Path
    duplicates: tuple[str, ...] = ()  # sources of copies of an entry before them: skipped
    notes: tuple[str, ...] = ()  # what discovery left out and why (a link out of DIR)


def discover(
    root: Path, exclude: Path | None = None, notes: list[str] | None = None
) -> list[Found]:
    """Every run under ``root``: a detected directory is one run and is not descended into. A
    link to a folder outside ``root`` (``/`` would crawl the filesystem) is not followed, and
    said in ``notes``."""
    seen: set[Path] = set()
    found: list[Found] = []
    inside = root.resolve()

    def visit_file(path: Path) -> None:
        try:
            with path.open("rb"):
                pass
        except OSError as exc:  # unreadable: a failed run, whatever its name, and the batch goes on
            found.append(Found(path, None, f"cannot read: {exc.strerror or exc}"))
            return
        try:
            found.append(Found(path, ingest.detect(path).value, None))
        except InputError as exc:
            if path.name.lower().endswith(TRACE_SUFFIXES):
                found.append(Found(path, None, exc.reason))
        except OSError as exc:
            found.append(Found(path, None, f"cannot read: {exc.strerror or exc}"))

    def visit_dir(path: Path) -> None:
        real = path.resolve()
        if real in seen or (exclude is not None and real == exclude):
            return
        seen.add(real)
        try:
            children = sorted(path.iterdir())
        except OSError as exc:
            if path == root:
                raise InputError(f"cannot list: {exc.strerror}", path) from exc
            found.append(Found(path, None, f"cannot list folder: {exc.strerror or exc}"))
            return
        try:
            found.append(Found(path, ingest.detect(path).value, None))
            return
        except InputError:
            pass
        except OSError as exc:
            found.append(Found(path, None, f"cannot read: {exc.strerror or exc}"))
            return
        start = len(found)
        for child in children:
            if child.name.startswith("."):
                continue
            try:
                is_dir, is_file = child.is_dir(), child.is_file()
            except OSError as exc:  # e.g. a link into a folder we may not search
                found.append(Found(child, None, f"cannot read: {exc.strerror or exc}"))
                continue
            if is_dir and child.is_symlink() and not _within(child.resolve(), inside):
                if notes is not None:
                    notes.append(
                        f"not followed: {_source(root, child)} -> {os.readlink(child)} "
                        "(a folder link that leads outside the input folder)"
                    )
            elif is_dir:
                visit_dir(child)
            elif is_file:
                visit_file(child)
            elif child.is_symlink() and not child.exists():
                found.append(Found(child, None, f"dangling symbolic link to {os.readlink(child)}"))
        found[start:] = batch_jobs.regroup(root, path, found[start:], Found)

    if not root.exists():
        raise InputError("no such file or directory", root)
    if root.is_file():
        visit_file(root)
    else:
        visit_dir(root)
    return found


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def existing_runs(out: Path) -> pa.Table:
    """The ``runs`` table of the dataset under ``out`` (empty when there is none yet); a column
    added since a file was written (``missing_extra``) reads as null from it."""
    root = out / "dataset" / "runs"
    files = sorted(p.as_posix() for p in root.glob("*/*/*.parquet"))
    if not files:
        return TABLES["runs"].empty_table()
    try:
        # the table's schema, so a column added since an older batch (work.ADDED_LATER) is null
        dataset = ds.dataset(files, schema=TABLES["runs"], format="parquet")
        return dataset.to_table(columns=TABLES["runs"].names)
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"dataset unreadable: {exc}", root) from exc


@contextlib.contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Hold Ctrl-C while one run's files are renamed into place (milliseconds), then honour it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def _write_run(out: Path, o: Outcome) -> Outcome:
    """Stage the run's files, then rename them into their partitions, ``runs`` last. A run whose
    tables Parquet cannot hold is written as failed instead; the outcome written is returned."""
    part = f"gpu={partition_value(o.gpu_model)}/month={o.date:%Y-%m}"
    stage = out / STAGING / o.run_id
    try:
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir(parents=True, exist_ok=True)
        try:
            for name, table in o.tables.items():
                pq.write_table(table, stage / f"{name}.parquet", compression="zstd")
        except pa.ArrowException as exc:
            if not o.ok:
                raise  # a failed run's one row: nothing simpler to fall back on
            return _write_run(out, failed_like(o, f"internal error: {type(exc).__name__}: {exc}"))
        for old in (out / "dataset").glob(f"*/*/*/{o.run_id}.parquet"):
            old.unlink()  # --force on a run whose partition moved
        if o.report_html is not None:
            (out / "reports").mkdir(exist_ok=True)
            rel = o.tables["runs"].column("report")[0].as_py() or f"reports/{o.run_id}.html"
            write_text_atomic(out / rel, o.report_html)
        for name in (*(n for n in TABLES if n != "runs"), "runs"):
            target = out / "dataset" / name / part / f"{o.run_id}.parquet"
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(stage / f"{name}.parquet", target)
    except OSError as exc:
        raise OutputError(f"cannot write run {o.run_id}: {exc.strerror or exc}", out) from exc
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return o


def _source(root: Path, path: Path) -> str:
    return (path.relative_to(root).as_posix() if path != root else path.name) or path.name


def _drop_stale_failures(
    out: Path, before: pa.Table, found: list[Found], root: Path, written: set[str]
) -> None:
    """Remove failed rows ('error', 'retry') of earlier batches whose entry this batch saw and did
    not fail on again under the same id.

    Every failed run is tried again; one whose content is the same is rewritten under its id, but
    one that was fixed (or is readable now) has a new content id, so its old row would linger.
    Only entries under this batch's folder are touched (``source`` is relative to it), so other
    folders archived into OUT keep theirs.
    """
    failed = before.filter(pc.is_in(before.column("status"), pa.array(FAILED)))
    if failed.num_rows == 0:
        return
    seen = {_source(root, f.path) for f in found}
    for r in failed.select(["run_id", "source"]).to_pylist():  # one row per failed run: small
        src, rid = r["source"], r["run_id"]
        if rid in written:
            continue  # tried again this time: its row is fresh
        if src in seen or any(s.startswith(src + "/") for s in seen):
            for old in (out / "dataset").glob(f"*/*/*/{rid}.parquet"):
                old.unlink()


def _tasks(
    root: Path, found: list[Found], known: set[str], force: bool, taken: dict[str, str],
    duplicates: list[str],
) -> tuple[list[Task], list[str]]:  # fmt: skip
    """Tasks to run, and the run ids skipped because the dataset holds them; the sources of
    copies of an entry before them go to ``duplicates`` (one run each)."""
    tasks: list[Task] = []
    skipped: list[str] = []
    queued: set[str] = set()
    for f in found:
        source = _source(root, f.path)
        digest = ""
        # the runs table is Arrow (UTF-8): a name's undecodable byte is kept as its escape
        source = fmt.encodable(f.source or source)
        if f.error is None or not f.error.startswith(UNREADABLE):
            try:
                digest = (
                    batch_jobs.members_hash(f.members)
                    if f.members
                    else identity.content_hash(f.path)
                )
            except OSError as exc:
                f = Found(f.path, None, f"cannot read: {exc.strerror or exc}")
        if not digest:
            # no content to hash: the id names the entry, and 'retry' makes the next batch look again
            digest = hashlib.sha256(f"unreadable\0{source}".encode()).hexdigest()
        rid = digest[:16]
        if rid in queued:  # the same content twice under DIR: one run, the copy counted
            duplicates.append(source or f.path.name)
            continue
        queued.add(rid)
        if rid in known and not force:
            skipped.append(rid)
            continue
        tasks.append(
            Task(
                path=str(f.path.resolve()),
                source=source or f.path.name,
                run_id=rid,
                content_hash=digest,
                mtime=identity.mtime(f.path),
                format=f.format,
                error=f.error,
                report_name=report_name(source or f.path.name, rid, taken),
                members=tuple(str(m.resolve()) for m in f.members),
            )
        )
    return tasks, skipped


def run_batch(
    root: Path,
    out: Path,
    *,
    jobs: int = 1,
    force: bool = False,
    executor: Executor = Executor.PROCESS,
    scheduler: str | None = None,
    on_start: Callable[[int], None] | None = None,
    on_done: Callable[[Outcome], None] | None = None,
) -> BatchResult:
    """Process every run under ``root`` into ``out``; never stops on a bad trace."""
    started = time.perf_counter()
    if jobs < 1:
        raise UsageError(f"--jobs must be at least 1, not {jobs}")
    if executor is Executor.DASK and not scheduler:
        raise UsageError("--executor dask needs --scheduler ADDRESS")
    _fs.refuse_inputs(out, [root])
    notes: list[str] = []
    found = discover(root, exclude=out.resolve(), notes=notes)
    if not found:  # before OUT is claimed: an empty folder (a wrong path?) leaves nothing behind
        raise EmptyInputError(
            "no traces found (looked recursively for DLProf, Nsight Systems, PyTorch, "
            "TensorFlow and Nsight Compute outputs); nothing written",
            root,
        )
    _fs.claim_folder(
        out, "batch", legacy=OWN_ENTRIES, is_legacy=is_legacy_out, scratch=(lock.LOCK_NAME, STAGING)
    )
    with lock.exclusive(out):
        runs = existing_runs(out)
        duplicates: list[str] = []
        tasks, skipped = _tasks(root, found, _known(runs), force, taken_names(runs), duplicates)
        if on_start is not None:
            on_start(len(tasks))
        done_ids: set[str] = set()
        try:
            new_failures = _process(out, tasks, jobs, executor, scheduler, on_done, done_ids)
            _drop_stale_failures(out, runs, found, root, done_ids)
        except Exception:  # the index still lists what the dataset holds (Ctrl-C: left alone)
            with contextlib.suppress(TcreportError, OSError, pa.ArrowException):
                batch_index.write(out, existing_runs(out))
            raise
        runs = existing_runs(out)
        index = batch_index.write(out, runs)
    mine = {t.run_id for t in tasks} | set(skipped)
    failed = tuple(
        (r["source"], r["error"] or "")
        for r in runs.filter(pc.is_in(runs.column("status"), pa.array(FAILED)))
        .select(["run_id", "source", "error"])
        .to_pylist()
        if r["run_id"] in mine
    )
    return BatchResult(
        processed=len(done_ids),
        skipped=len(skipped),
        failed=tuple(sorted(failed)),
        new_failures=new_failures,
        seconds=time.perf_counter() - started,
        index=index,
        duplicates=tuple(duplicates),
        notes=tuple(notes),
    )


def _known(runs: pa.Table) -> set[str]:
    """Run ids the dataset holds for good: the done ones; every failed run is tried again."""
    keep = runs.filter(pc.equal(runs.column("status"), "ok"))
    return set(keep.column("run_id").to_pylist())


def _process(
    out: Path,
    tasks: list[Task],
    jobs: int,
    executor: Executor,
    scheduler: str | None,
    on_done: Callable[[Outcome], None] | None,
    done_ids: set[str],
) -> int:
    """Run the tasks and write each outcome as it arrives (its id into ``done_ids``); unreadable
    entries never reach a worker. Returns how many failed."""
    unreadable = [t for t in tasks if t.error is not None and t.error.startswith(UNREADABLE)]
    rest = [t for t in tasks if t.error is None or not t.error.startswith(UNREADABLE)]
    outcomes: Iterable[Outcome]
    if executor is Executor.DASK:
        from tcreport.batch import dask_executor as batch_dask  # dask: the [cluster] extra

        outcomes = batch_dask.run(rest, str(scheduler))
    else:
        outcomes = pool.run(rest, jobs)
    new_failures = 0
    first = (retryable(t, t.error or "") for t in unreadable)
    for o in itertools.chain(first, outcomes):
        with _sigint_deferred():
            o = _write_run(out, o)
        done_ids.add(o.run_id)
        new_failures += 0 if o.ok else 1
        if on_done is not None:
            on_done(o)
    return new_failures
