"""Hostile inputs end in a one-line error within their first megabytes, not after gigabytes.

Synthetic inputs, scaled down by setting the limits of :mod:`tcreport.ingest.common.limits` low
through their environment variables (the overrides a user would set); the full-size cases (a 4 GiB
string in 4 MB of gzip, a 5 GB sparse file) are measured by ``benchmarks/memory_bombs.py``.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tcreport import api
from tcreport.errors import InputError
from tcreport.ingest.common import limits
from tcreport.ingest.kineto import reader as kineto

MIB = 1 << 20
PARSERS = [pytest.param(True, id="msgspec"), pytest.param(False, id="json")]


def _gz(path: Path, *parts: bytes) -> Path:
    with gzip.open(path, "wb", compresslevel=1) as gz:
        for p in parts:
            gz.write(p)
    return path


def _one_line_error(path: Path, use_msgspec: bool = True) -> str:
    if use_msgspec and kineto.fast is None:
        pytest.skip("msgspec not installed")
    with pytest.raises(InputError) as info:
        kineto.read_with(path, use_msgspec=use_msgspec)
    msg = str(info.value)
    assert "\n" not in msg and str(path) in msg
    return msg


@pytest.mark.parametrize("use_msgspec", PARSERS)
def test_a_sparse_file_of_nul_bytes_fails_on_its_first_read(
    tmp_path: Path, use_msgspec: bool
) -> None:
    path = tmp_path / "sparse_synthetic.json"
    with path.open("wb") as fh:
        fh.write(b'{"traceEvents":[')
        fh.truncate(1 << 30)  # 1 GiB, no disk used
    assert kineto.sniff(path)  # it claims to be a trace ...
    msg = _one_line_error(path, use_msgspec)  # ... and is refused at the first NUL
    assert "NUL byte at offset 16" in msg


def test_one_huge_string_in_a_gzip_is_refused_past_the_value_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TCREPORT_MAX_VALUE_MB", "4")
    path = _gz(
        tmp_path / "bomb_synthetic.json.gz",
        b'{"traceEvents":[{"name":"',
        b"a" * (16 * MIB),
        b'"}]}',
    )
    msg = _one_line_error(path)
    assert (
        "one JSON value of more than" in msg
        and "(limit 4 MiB)" in msg
        and "TCREPORT_MAX_VALUE_MB" in msg
    )


def test_whitespace_before_trace_events_is_refused_past_the_value_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TCREPORT_MAX_VALUE_MB", "4")
    path = _gz(tmp_path / "spaces_synthetic.json.gz", b"{", b" " * (16 * MIB), b'"traceEvents":[]}')
    assert "TCREPORT_MAX_VALUE_MB" in _one_line_error(path)


@pytest.mark.parametrize("use_msgspec", PARSERS)
def test_a_gzip_bomb_is_refused_by_its_ratio(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, use_msgspec: bool
) -> None:
    monkeypatch.setattr(limits, "RATIO_AFTER", 4 * MIB)
    path = _gz(
        tmp_path / "events_synthetic.json.gz", b'{"traceEvents":[', b"{}," * (8 * MIB), b"{}]}"
    )
    msg = _one_line_error(path, use_msgspec)
    assert "gzip bomb" in msg and "TCREPORT_MAX_GZIP_RATIO" in msg


@pytest.mark.parametrize("use_msgspec", PARSERS)
def test_total_text_is_bounded_and_the_override_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, use_msgspec: bool
) -> None:
    events = b",".join(
        b'{"ph":"X","cat":"kernel","name":"k%d","pid":0,"tid":7,"ts":%d,"dur":1,"args":{}}' % (i, i)
        for i in range(60_000)
    )
    path = tmp_path / "big_synthetic.json"
    path.write_bytes(b'{"traceEvents":[' + events + b"]}")
    monkeypatch.setenv("TCREPORT_MAX_INPUT_MB", "2")
    assert "TCREPORT_MAX_INPUT_MB" in _one_line_error(path, use_msgspec)
    monkeypatch.setenv("TCREPORT_MAX_INPUT_MB", "0")  # 0 turns the limit off
    run = kineto.read_with(path, use_msgspec=use_msgspec and kineto.fast is not None)
    assert run.kernels is not None and run.kernels.num_rows == 60_000


def test_an_absurdly_large_report_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TCREPORT_MAX_REPORT_MB", "1")
    path = tmp_path / "dlprof_kernel.csv"
    path.write_bytes(b"Kernel Report\nKernel Name,Total GPU Time (ns)\n" + b"k,1\n" * MIB)
    with pytest.raises(InputError) as info:
        api.load(path)
    assert "TCREPORT_MAX_REPORT_MB" in str(info.value) and "\n" not in str(info.value)
