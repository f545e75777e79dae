"""Hostile reproductions (branch hostile5) where the msgspec Kineto parser reads a file differently
from the ``json`` parser, which fast.py promises never happens (it hands over instead).

Each was marked xfail(strict=True) until branch kineto25 fixed it. ``fast.PIECE`` is made small so that a
few hundred events give first, middle and last pieces; the default 2 MiB shows the same with
files a few MiB long."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tcreport.ingest.kineto import reader

fast = pytest.importorskip("tcreport.ingest.kineto.fast")


def _kernel(i: int, **args: Any) -> dict[str, Any]:
    return {
        "ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7,
        "ts": 1000 + 10 * i, "dur": 5,
        "args": {"correlation": i, "device": 0, "stream": 7, **args},
    }  # fmt: skip


def _launch(i: int, **args: Any) -> dict[str, Any]:
    return {
        "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
        "ts": 995 + 10 * i, "dur": 2, "args": {"correlation": i, **args},
    }  # fmt: skip


def _both(path: Path) -> tuple[Any, Any]:
    return reader.read_with(path, use_msgspec=True), reader.read_with(path, use_msgspec=False)


def test_literal_sentinel_does_not_pull_in_other_arrays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fast, "PIECE", 4096)
    events = [e for i in range(5) for e in (_launch(i), _kernel(i))]  # within the first piece
    events.append({"ph": "\u0000tcreport:cut"})  # written by the file, not by the parser
    other = [_kernel(10_000 + i) for i in range(400)]  # not events: a key after traceEvents
    path = tmp_path / "sentinel_synthetic.json"
    path.write_text(json.dumps({"traceEvents": events, "zzz": other}))
    quick, ref = _both(path)
    assert ref.kernels.num_rows == 5
    assert quick.kernels.num_rows == ref.kernels.num_rows


def test_int64_min_correlation_is_read_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fast, "PIECE", 4096)
    events = [e for i in range(300) for e in (_launch(i), _kernel(i))]
    events[1]["args"]["correlation"] = 1.5  # a float among the kernels' correlations (first piece)
    events[-2]["args"]["correlation"] = events[-1]["args"]["correlation"] = -(2**63)  # last piece
    path = tmp_path / "int64min_synthetic.json"
    path.write_text(json.dumps({"traceEvents": events}))
    quick, ref = _both(path)
    assert quick.kernels["correlation_id"].equals(ref.kernels["correlation_id"])
    assert quick.kernels["launch_ns"].equals(ref.kernels["launch_ns"])


def test_many_braces_in_strings_are_not_one_huge_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TCREPORT_MAX_VALUE_MB", "1")
    events = [
        e
        for i in range(600)
        for e in (_launch(i), {**_kernel(i), "name": "k" + "{" * 5000})  # 5 KB events, 3 MiB
    ]
    path = tmp_path / "braces_synthetic.json"
    path.write_text(json.dumps({"traceEvents": events}))
    ref, quick = reader.read_with(path, use_msgspec=False), reader.read_with(path, True)
    assert ref.kernels is not None and ref.kernels.num_rows == 600
    assert quick.kernels is not None and quick.kernels.num_rows == 600


def test_literal_sentinel_opening_a_later_duplicate_key_is_read_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found with the first case (branch kineto25): the last piece, opened with the sentinel, was
    accepted when a later duplicate ``traceEvents`` (the one ``json`` keeps) began with a literal
    sentinel, so the earlier array's events were read too."""
    monkeypatch.setattr(fast, "PIECE", 4096)
    events = [e for i in range(300) for e in (_launch(i), _kernel(i))]
    later = [{"ph": "\u0000tcreport:cut"}, _launch(7_000), _kernel(7_000)]
    path = tmp_path / "duplicate_sentinel_synthetic.json"
    path.write_text(f'{{"traceEvents": {json.dumps(events)}, "traceEvents": {json.dumps(later)}}}')
    quick, ref = _both(path)
    assert ref.kernels.num_rows == 1
    assert quick.kernels.equals(ref.kernels)


@pytest.mark.parametrize("value_mb", ["1", "0"])
def test_cut_lookalikes_in_strings_are_read_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value_mb: str
) -> None:
    """Strings full of ``}, {`` make most guessed cuts fall inside a string: the msgspec parser
    either finds the real ones or, past the value limit, hands the file to ``json`` (it is not
    one huge value); either way both read it alike."""
    monkeypatch.setenv("TCREPORT_MAX_VALUE_MB", value_mb)
    monkeypatch.setattr(fast, "PIECE", 64 << 10)
    events = [
        e for i in range(400) for e in (_launch(i), {**_kernel(i), "zz": "}, {" * 1000})
    ]  # 4 KB a kernel, 1.6 MiB
    path = tmp_path / "lookalikes_synthetic.json"
    path.write_text(json.dumps({"traceEvents": events}))
    quick, ref = _both(path)
    assert ref.kernels.num_rows == 400
    assert quick.kernels.equals(ref.kernels)


def test_a_string_of_cut_lookalikes_alone_goes_to_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One event whose string is 2 MiB of ``}, {``: every guess is refused, so past the value
    limit the msgspec parser hands over (json reads it) instead of calling it too large, which
    it still does for a value with no lookalike (tests/hostile/test_input_limits.py)."""
    monkeypatch.setenv("TCREPORT_MAX_VALUE_MB", "1")
    path = tmp_path / "one_lookalike_string_synthetic.json"
    path.write_text(
        json.dumps({"traceEvents": [_launch(0), {**_kernel(0), "s": "}, {" * 700_000}]})
    )
    with pytest.raises(fast.FastPathError):
        fast.parse(path)
    kernels = reader.read_with(path, use_msgspec=True).kernels
    assert kernels is not None and kernels.num_rows == 1


def test_many_braces_in_strings_hide_no_cut() -> None:
    """The third case's root: the search for a cut looked at 4,096 ``{`` at most, from the end, so
    a string holding more hid the cut before it (and each later search starts where it ended)."""
    buf = bytearray(b'{"ph":"X"}, {"name":"k' + b"{" * 10_000)
    assert fast._last_cut(buf, 0) == (10, 12)
    assert fast._last_cut(buf, 13) is None  # only cuts whose ``{`` is at or after ``lo``
