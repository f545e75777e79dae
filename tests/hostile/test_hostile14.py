"""Hostile tests of the job's NCCL-size note counted off the critical path (hostile14).

The note of a multi-process nsys export (``tcreport.ingest.nsys.processes.sizes_later``) is now a
count run later: through ADBC in a thread the reader starts once its scan is done, or through
``sqlite3`` when the job asks for it. Every input is the real torchrun export
(sample_traces/nsys-h100x2-bf16) or a copy edited with ``sqlite3`` (``*synthetic*``). Each test is
a defect found on the day the change landed.
"""

from __future__ import annotations

import copy
import os
import pickle
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import FrameType

import pytest
from trace_paths import SAMPLES

from tcreport import api
from tcreport.errors import InputError
from tcreport.ingest.common import later
from tcreport.ingest.nsys import db as nsys_db
from tcreport.ingest.nsys import processes

NSYS = SAMPLES / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"
ROOT = Path(__file__).resolve().parents[2]
#: a view that never ends: every NVTX row, once per natural number
_ENDLESS_NVTX = (
    "ALTER TABLE NVTX_EVENTS RENAME TO stored_nvtx;"
    "CREATE VIEW nvtx_events AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
    "SELECT e.* FROM stored_nvtx e, n;"
)


def _edited(tmp_path: Path, name: str, script: str) -> Path:
    path = tmp_path / name
    shutil.copy(NSYS, path)
    with sqlite3.connect(path) as con:
        con.executescript(script)
    con.close()
    return path


_SWAPPED = textwrap.dedent(
    """
    import os, shutil, sys, time
    from tcreport import api
    from tcreport.ingest.common import later
    from tcreport.ingest.nsys import db
    if sys.argv[4] == "sqlite3":
        db.has_adbc = lambda: False
    job = api.find_job(sys.argv[1])
    shutil.copy(sys.argv[2], sys.argv[3])
    os.replace(sys.argv[3], sys.argv[1])  # a new export written over it: after detection
    later.start_waiting()  # the reader's scan (of any export) is done
    started = time.monotonic()
    print(repr(job.sizes_note), round(time.monotonic() - started, 1), flush=True)
    """
)


@pytest.mark.parametrize("path", ["adbc", "sqlite3"])
def test_synthetic_an_export_replaced_by_an_endless_view_after_detection_is_not_counted(
    tmp_path: Path, path: str
) -> None:
    """``sizes_later`` refused views when the job was found; the count ran later, on whatever the
    path then held, with no check (and through ADBC with no bound): a file replaced in between
    by one whose NVTX_EVENTS is an endless view kept a thread at 100 % of a core for ever, and
    ``job.sizes_note`` never returned (the sqlite3 path spent its 2 s step budget on it)."""
    job_file = tmp_path / "job_synthetic.sqlite"
    shutil.copy(NSYS, job_file)
    endless = _edited(tmp_path, "endless_synthetic.sqlite", _ENDLESS_NVTX)
    script = tmp_path / "swap.py"
    script.write_text(_SWAPPED)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, str(script), str(job_file), str(endless), str(tmp_path / "new"), path]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 0, err.decode()
    note, seconds = out.decode().split()
    assert note == "None" and float(seconds) < 1.0


def test_synthetic_ctrl_c_during_the_sqlite3_count_is_not_swallowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ADBC the count runs in the caller's thread under the guard's Python progress
    handler: a Ctrl-C there surfaced as ``sqlite3.OperationalError('interrupted')``, which the
    count took for an unreadable file (note None) and the command went on as if never asked to
    stop. Here the interrupt comes from a timer, in the middle of a count of 400,000 rows. Once
    interrupted, the value is not that interrupt for ever: asked again, it is counted."""
    path = _edited(
        tmp_path,
        "many_nccl_synthetic.sqlite",
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400000) "
        "INSERT INTO NVTX_EVENTS (start, end, eventType, text, domainId) "
        "SELECT i, i + 1, 59, 'ncclAllReduce', 7 FROM n;",
    )
    monkeypatch.setattr(nsys_db, "has_adbc", lambda: False)
    count = processes.sizes_later(path)

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.01)
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            count.value()
            time.sleep(5)  # the count was quicker than the timer: the sleep is interrupted
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - started < 4
    note = count.value()  # asked again: counted now, not the interrupt of the first ask again
    assert note is not None and "NCCL's 400,420 NVTX ranges" in note


def test_synthetic_blob_texts_give_the_same_note_through_adbc_and_sqlite3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ADBC bundles SQLite 3.5x, where ``x'6e63636c' LIKE 'nccl%'`` is true; Python's sqlite3 may
    be 3.40, where a BLOB never matches LIKE. NCCL's 60 default-domain ranges stored as BLOB
    texts (moved to a domain) were counted through ADBC and not through sqlite3: the note said
    480 ranges with ADBC installed, 420 without."""
    path = _edited(
        tmp_path,
        "blob_texts_synthetic.sqlite",
        "UPDATE NVTX_EVENTS SET text = CAST(text AS BLOB), domainId = 5 WHERE text LIKE 'nccl%';",
    )
    threaded = processes.sizes_later(path)
    later.start_waiting()
    with monkeypatch.context() as m:
        m.setattr(nsys_db, "has_adbc", lambda: False)
        plain = processes.sizes_later(path).value()
    assert threaded.value() == plain
    assert plain is not None and "NCCL's 480 NVTX ranges" in plain


def test_synthetic_two_jobs_one_after_the_other_in_one_process(tmp_path: Path) -> None:
    """Two copies found, then analysed one after the other (the first read starts both counts)."""
    first, second = tmp_path / "a_synthetic.sqlite", tmp_path / "b_synthetic.sqlite"
    shutil.copy(NSYS, first)
    shutil.copy(NSYS, second)
    jobs = [api.find_job(first), api.find_job(second)]
    notes = []
    for job in jobs:
        assert job is not None
        notes.append(api.analyze_job(job).section.bandwidth.note)
    assert notes[0] == notes[1] and notes[0] is not None and "NCCL's 420" in notes[0]


def test_synthetic_an_export_deleted_after_detection_is_a_one_line_error(tmp_path: Path) -> None:
    """``load_rank`` stat'ed a multi-process export's path unguarded (its cache key): an export
    deleted between detection and reading was a FileNotFoundError traceback out of ``summary``
    (seen with a file deleted 0.25 s into the command), not a one-line error naming the file."""
    path = tmp_path / "gone_synthetic.sqlite"
    shutil.copy(NSYS, path)
    job = api.find_job(path)
    assert job is not None
    path.unlink()
    with pytest.raises(InputError, match="no such file or directory") as caught:
        api.analyze_job(job)
    assert str(path) in str(caught.value)


def test_synthetic_a_found_job_pickles_and_copies_as_before(tmp_path: Path) -> None:
    """A Job was a frozen dataclass of plain values: a user could hand it to a process pool
    (``pool.map(api.analyze_job, jobs)``) or deepcopy it. Its note became a Later holding an
    Event and local functions: ``Can't pickle local object '_counted.<locals>.through_adbc'``,
    ``cannot pickle '_thread.lock' object``. It pickles as its value."""
    path = tmp_path / "job_synthetic.sqlite"
    shutil.copy(NSYS, path)
    job = api.find_job(path)
    assert job is not None and job.sizes_note is not None
    for copied in (pickle.loads(pickle.dumps(job)), copy.deepcopy(job)):
        assert copied.sizes_note == job.sizes_note and copied.ranks == job.ranks
