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
(``runs.date_source`` names what said so), the file's mtime only where it says nothing. A failed run is stored too (``status = 'error'``), so the index
keeps listing it and the next batch does not retry it unless ``--force``.

Atomicity: workers write nothing; this process writes each run's files under ``OUT/.staging`` and
renames them into their partitions, the ``runs`` file last (a run without its ``runs`` row does not
exist for the next batch), and the index is rewritten last of all.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from tcreport import _fs
from tcreport._fs import write_text_atomic
from tcreport.batch.work import TABLES, Outcome, Task, failed, is_legacy_out, process
from tcreport.errors import InputError, OutputError, UsageError

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
HASH_CHUNK = 1 << 20
STAGING = ".staging"
#: What a batch puts in OUT (``dataset`` first: an unmarked OUT from before the marker has it).
OWN_ENTRIES = ("dataset", "reports", "index.html", STAGING)


class EmptyInputError(InputError):
    """``batch`` found nothing to archive: a warning and a non-zero exit, not an empty index."""


class Executor(StrEnum):
    PROCESS = "process"
    DASK = "dask"


@dataclass(frozen=True)
class Found:
    path: Path
    format: str | None
    error: str | None


@dataclass(frozen=True)
class BatchResult:
    processed: int
    skipped: int
    failed: tuple[tuple[str, str], ...]  # (source, error) of runs under DIR now in error state
    new_failures: int
    seconds: float
    index: Path


def discover(root: Path, exclude: Path | None = None) -> list[Found]:
    """Every run under ``root``: a detected directory is one run and is not descended into."""
    from tcreport import ingest

    seen: set[Path] = set()
    found: list[Found] = []

    def visit_file(path: Path) -> None:
        try:
            found.append(Found(path, ingest.detect(path).value, None))
        except InputError as exc:
            if path.name.lower().endswith(TRACE_SUFFIXES):
                found.append(Found(path, None, exc.reason))

    def visit_dir(path: Path) -> None:
        real = path.resolve()
        if real in seen or (exclude is not None and real == exclude):
            return
        seen.add(real)
        try:
            found.append(Found(path, ingest.detect(path).value, None))
            return
        except InputError:
            pass
        try:
            children = sorted(path.iterdir())
        except OSError as exc:
            raise InputError(f"cannot list: {exc.strerror}", path) from exc
        for child in children:
            if child.name.startswith("."):
                continue
            if child.is_dir():
                visit_dir(child)
            elif child.is_file():
                visit_file(child)

    if not root.exists():
        raise InputError("no such file or directory", root)
    if root.is_file():
        visit_file(root)
    else:
        visit_dir(root)
    return found


def _files(path: Path) -> Iterator[tuple[str, Path]]:
    if path.is_file():
        yield path.name, path
        return
    for p in sorted(path.rglob("*")):
        if p.is_file():
            yield p.relative_to(path).as_posix(), p


def content_hash(path: Path) -> str:
    """sha256 of the bytes; for a folder, of its files' sorted (relative name, bytes)."""
    h = hashlib.sha256()
    folder = path.is_dir()
    for name, file in _files(path):
        if folder:
            h.update(name.encode("utf-8") + b"\0" + str(file.stat().st_size).encode() + b"\0")
        with file.open("rb") as fh:
            while chunk := fh.read(HASH_CHUNK):
                h.update(chunk)
    return h.hexdigest()


def _mtime(path: Path) -> float:
    return max((f.stat().st_mtime for _, f in _files(path)), default=path.stat().st_mtime)


def partition_value(text: str | None) -> str:
    """A partition directory value: readable, filesystem- and URL-safe."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", text or "").strip("-.")
    return slug or "unknown"


def existing_runs(out: Path) -> pa.Table:
    """The ``runs`` table of the dataset under ``out`` (empty when there is none yet)."""
    root = out / "dataset" / "runs"
    if not any(root.glob("*/*/*.parquet")):
        return TABLES["runs"].empty_table()
    try:
        dataset = ds.dataset(root, format="parquet", partitioning="hive")
        return dataset.to_table(columns=TABLES["runs"].names)
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"dataset unreadable: {exc}", root) from exc


def _write_run(out: Path, o: Outcome) -> None:
    """Stage the run's files, then rename them into their partitions, ``runs`` last."""
    part = f"gpu={partition_value(o.gpu_model)}/month={o.date:%Y-%m}"
    stage = out / STAGING / o.run_id
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(parents=True)
    try:
        for name, table in o.tables.items():
            pq.write_table(table, stage / f"{name}.parquet", compression="zstd")
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


#: Suffixes dropped from a trace's name to name its report (longest first).
_NAME_SUFFIXES = (".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".xplane.pb")


def report_name(source: str, run_id: str, taken: dict[str, str]) -> str:
    """``reports/<name>.html`` after the trace: its file (or folder) name without the format's
    suffix, made filesystem- and URL-safe; a name another run holds gets the run id appended.
    ``taken`` maps names already given (in the dataset and this batch) to their run ids."""
    base = source.rstrip("/").rsplit("/", 1)[-1]
    lower = base.lower()
    suffix = next((x for x in _NAME_SUFFIXES if lower.endswith(x)), None)
    stem = base[: -len(suffix)] if suffix else (base.rsplit(".", 1)[0] or base)
    name = partition_value(stem)[:80]
    if taken.get(name, run_id) != run_id:
        name = f"{name}-{run_id[:8]}"
    taken[name] = run_id
    return name


def _taken_names(runs: pa.Table) -> dict[str, str]:
    """Report names the dataset already uses -> their run ids (hash-named reports included)."""
    out: dict[str, str] = {}
    for r in runs.select(["run_id", "report"]).to_pylist():  # one row per run: small
        rel = r["report"] or ""
        if rel.startswith("reports/") and rel.endswith(".html"):
            out[rel[len("reports/") : -len(".html")]] = r["run_id"]
    return out


def _tasks(
    root: Path, found: list[Found], known: set[str], force: bool, taken: dict[str, str]
) -> tuple[list[Task], list[str]]:
    """Tasks to run, and the run ids skipped because the dataset holds them."""
    tasks: list[Task] = []
    skipped: list[str] = []
    queued: set[str] = set()
    for f in found:
        digest = content_hash(f.path)
        rid = digest[:16]
        source = f.path.relative_to(root).as_posix() if f.path != root else f.path.name
        if rid in queued:
            continue  # the same content twice under DIR: one run
        if rid in known and not force:
            skipped.append(rid)
            continue
        queued.add(rid)
        tasks.append(
            Task(
                path=str(f.path.resolve()),
                source=source or f.path.name,
                run_id=rid,
                content_hash=digest,
                mtime=_mtime(f.path),
                format=f.format,
                error=f.error,
                report_name=report_name(source or f.path.name, rid, taken),
            )
        )
    return tasks, skipped


def _run_process(tasks: list[Task], jobs: int) -> Iterator[Outcome]:
    if jobs <= 1 or len(tasks) <= 1:
        yield from map(process, tasks)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    # forkserver, not fork: the parent runs a progress-bar thread, and forking a threaded process
    # can copy a held lock into the child. The server preloads tcreport once for every worker.
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if ctx.get_start_method() == "forkserver":
        ctx.set_forkserver_preload(["tcreport.batch.work"])
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        futures = {pool.submit(process, t): t for t in tasks}
        for fut in as_completed(futures):
            try:
                yield fut.result()
            except BrokenProcessPool:
                # A worker died (a crash or the OOM killer): the pool cannot say on which trace, so
                # every unfinished run is recorded as failed; the next batch retries none of them
                # unless --force, and --jobs 1 names the culprit.
                yield failed(futures[fut], "worker process died (crash or out of memory)")


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
    from tcreport.batch import index as batch_index

    started = time.perf_counter()
    if jobs < 1:
        raise UsageError(f"--jobs must be at least 1, not {jobs}")
    if executor is Executor.DASK and not scheduler:
        raise UsageError("--executor dask needs --scheduler ADDRESS")
    _fs.refuse_inputs(out, [root], nested_ok=True)
    found = discover(root, exclude=out.resolve())
    if not found:  # before OUT is claimed: an empty folder (a wrong path?) leaves nothing behind
        raise EmptyInputError(
            "no traces found (looked recursively for DLProf, Nsight Systems, PyTorch, "
            "TensorFlow and Nsight Compute outputs); nothing written",
            root,
        )
    _fs.claim_folder(out, "batch", legacy=OWN_ENTRIES, is_legacy=is_legacy_out)
    runs = existing_runs(out)
    known = set(runs.column("run_id").to_pylist())
    tasks, skipped = _tasks(root, found, known, force, _taken_names(runs))
    if on_start is not None:
        on_start(len(tasks))
    outcomes: Iterable[Outcome]
    if executor is Executor.DASK:
        from tcreport.batch import dask_executor as batch_dask

        outcomes = batch_dask.run(tasks, str(scheduler))
    else:
        outcomes = _run_process(tasks, jobs)
    new_failures = 0
    done_ids: set[str] = set()
    for o in outcomes:
        _write_run(out, o)
        done_ids.add(o.run_id)
        new_failures += 0 if o.ok else 1
        if on_done is not None:
            on_done(o)
    runs = existing_runs(out)
    index = batch_index.write(out, runs)
    mine = {t.run_id for t in tasks} | set(skipped)
    failed = tuple(
        (r["source"], r["error"] or "")
        for r in runs.filter(pc.equal(runs.column("status"), "error"))
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
    )
