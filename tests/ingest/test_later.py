"""Work off the critical path (``tcreport.ingest.common.later``) and the job note that uses it.

A multi-process nsys export's note on NCCL's message sizes counts every NVTX row (~1 s on the
x1000 export); it now runs through ADBC in a thread started when the reader's scan ends. These
check that the value, the thread it ran on and its errors are what the caller sees, and that the
note is the one the ``sqlite3`` path (and the LEFT JOIN it replaced) gives, on the real torchrun
export and on a copy edited to hold texts and payloads of each kind (named *synthetic*).
"""

from __future__ import annotations

import shutil
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from trace_paths import SAMPLES

from tcreport import api
from tcreport.ingest.common import later
from tcreport.ingest.common.later import Later
from tcreport.ingest.nsys import db as nsys_db
from tcreport.ingest.nsys import processes

T = TypeVar("T")
NSYS = SAMPLES / "nsys-h100x2-bf16" / "mfu_2gpu_after.sqlite"
#: the note's counts as the job worked them out before (a LEFT JOIN on StringIds)
_JOINED = (
    "SELECT count(*), count(binaryData) + count(jsonText) + count(jsonTextId) FROM NVTX_EVENTS e "
    "LEFT JOIN StringIds s ON s.id = e.textId WHERE e.domainId IS NOT NULL AND e.domainId != 0 "
    "AND coalesce(e.text, s.value) LIKE 'nccl%'"
)


def _noting(ran_in: list[str], result: T) -> Callable[[], T]:
    """``result``, noting the thread it was worked out in."""

    def work() -> T:
        ran_in.append(threading.current_thread().name)
        return result

    return work


def test_a_threaded_value_runs_in_its_own_thread_once_started() -> None:
    ran_in: list[str] = []
    value = Later(_noting(ran_in, 7), threaded=True)
    later.start_waiting()
    assert value.value() == 7 and value.value() == 7
    assert ran_in == ["tcreport-later"]  # once, in the thread


def test_a_value_nobody_started_is_worked_out_by_the_caller() -> None:
    ran_in: list[str] = []
    value = Later(_noting(ran_in, "x"), threaded=True)
    assert value.value() == "x"
    later.start_waiting()  # too late: taken already, never run twice
    assert value.value() == "x" and ran_in == [threading.current_thread().name]
    inline = Later(lambda: 3, threaded=False)
    later.start_waiting()  # not threaded: never started by the reader
    assert inline.value() == 3 and Later.known(None).value() is None


def test_an_error_reaches_the_caller_every_time_it_asks() -> None:
    def fail() -> int:
        raise ValueError("damaged")

    value = Later(fail, threaded=True)
    later.start_waiting()
    for _ in range(2):
        with pytest.raises(ValueError, match="damaged"):
            value.value()


def _notes(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str | None, str | None]:
    """The note through ADBC in a thread, and through ``sqlite3`` (ADBC taken away)."""
    threaded = processes.sizes_later(path)
    later.start_waiting()
    with monkeypatch.context() as m:
        m.setattr(nsys_db, "has_adbc", lambda: False)
        plain = processes.sizes_later(path)
        assert not plain._claimed
        return threaded.value(), plain.value()


def test_the_real_exports_note_is_the_same_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    with sqlite3.connect(NSYS) as con:
        count, payload = con.execute(_JOINED).fetchone()
    assert (count, payload) == (420, 0)
    adbc, plain = _notes(NSYS, monkeypatch)
    assert adbc == plain and adbc is not None and "NCCL's 420 NVTX ranges" in adbc
    job = api.find_job(NSYS)
    assert job is not None and job.sizes_note == adbc


def test_texts_and_payloads_of_each_kind_count_as_the_join_did_synthetic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "edited.sqlite"
    shutil.copy(NSYS, path)
    with sqlite3.connect(path) as con:
        nccl = [r for (r,) in con.execute("SELECT rowid FROM NVTX_EVENTS WHERE domainId = 1")]
        # an explicit text of NCCL's, an explicit text that is not (its textId's string is),
        # a payload of each kind, and a default-domain row named like NCCL (not counted)
        con.execute("UPDATE NVTX_EVENTS SET text = 'ncclAllReduce' WHERE rowid = ?", (nccl[0],))
        con.execute("UPDATE NVTX_EVENTS SET text = 'mine' WHERE rowid = ?", (nccl[1],))
        con.execute("UPDATE NVTX_EVENTS SET binaryData = 'x' WHERE rowid = ?", (nccl[2],))
        con.execute("UPDATE NVTX_EVENTS SET jsonText = '{}' WHERE rowid = ?", (nccl[3],))
        con.execute("UPDATE NVTX_EVENTS SET jsonTextId = 1 WHERE rowid = ?", (nccl[4],))
        con.execute(
            "UPDATE NVTX_EVENTS SET text = 'ncclFake' WHERE rowid = "
            "(SELECT min(rowid) FROM NVTX_EVENTS WHERE domainId = 0)"
        )
        count, payload = con.execute(_JOINED).fetchone()
    assert (count, payload) == (419, 3)
    adbc, plain = _notes(path, monkeypatch)
    assert (
        adbc
        == plain
        == (
            "message sizes not read: 3 of NCCL's 419 NVTX ranges carry a binary payload, which "
            "tcreport does not decode yet"
        )
    )


def test_the_reader_starts_the_count_once_its_scan_is_done() -> None:
    """Not before (it would take a core from the scan), not after the job asks for it."""
    from tcreport import ingest

    job = api.find_job(NSYS)
    assert job is not None and job.sizes is not None
    assert not job.sizes._claimed  # detected: nothing counted yet
    ingest.load_rank(job.ranks[0], geometry=False)
    assert job.sizes._claimed  # the scan is over: the thread has it
    assert job.sizes_note is not None and "NCCL's 420 NVTX ranges" in job.sizes_note
    ingest.release_rank(job.ranks[0])
