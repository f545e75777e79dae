"""The msgspec and standard-library Kineto parsers give identical tables on every input: a
derandomized property test over events whose ``ts``/``dur`` (and a few ids) are mutated to the
values that once split them (booleans, integers beyond 2**53 and int64), wherever the msgspec
path happens to cut the trace into pieces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import budget

from tcreport.errors import InputError
from tcreport.ingest.kineto import reader as kineto_json
from tcreport.model import Run
from tcreport.schema import TableKind

SYNTHETIC = Path(__file__).parents[1] / "fixtures" / "kineto_edge_cases_synthetic.json"

pytestmark = pytest.mark.skipif(
    kineto_json.fast is None, reason="msgspec (the [fast] extra) is not installed"
)

_NUMBERS = st.one_of(
    st.booleans(),
    st.integers(-(2**64), 2**64),
    st.sampled_from([2**53, 2**53 + 1, 2**62, 2**63 - 1, -(2**63), 4 * 10**15, 4 * 10**15 + 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
    st.text(max_size=3),
)
_FIELDS = ("ts", "dur", "pid", "tid")


def _outcome(path: Path, use_msgspec: bool) -> Run | str:
    try:
        return kineto_json.read_with(path, use_msgspec=use_msgspec)
    except InputError as exc:
        return exc.reason


def _assert_same(path: Path) -> None:
    fast, slow = _outcome(path, True), _outcome(path, False)
    assert isinstance(fast, Run) == isinstance(slow, Run), (fast, slow)
    if not isinstance(fast, Run) or not isinstance(slow, Run):
        assert fast == slow
        return
    assert fast.meta == slow.meta
    for kind in TableKind:
        a, b = getattr(fast, kind.value), getattr(slow, kind.value)
        assert (a is None) == (b is None), kind
        if a is not None:
            assert a.equals(b, check_metadata=True), kind


@settings(
    max_examples=budget(120),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_parsers_agree_on_mutated_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: st.DataObject
) -> None:
    monkeypatch.setattr(kineto_json.fast, "PIECE", data.draw(st.sampled_from([256, 1024, 1 << 21])))
    doc: dict[str, Any] = json.loads(SYNTHETIC.read_text())
    events = [e for e in doc["traceEvents"] if isinstance(e, dict)]
    for _ in range(data.draw(st.integers(1, 8))):
        e = events[data.draw(st.integers(0, len(events) - 1))]
        e[data.draw(st.sampled_from(_FIELDS))] = data.draw(_NUMBERS)
    doc["traceEvents"] = events
    path = tmp_path / "mutated_synthetic.json"
    path.write_text(json.dumps(doc))
    _assert_same(path)


@pytest.mark.parametrize("value", [True, False, 2**53 + 1, 2**62, 2**63 - 1, -(2**63)], ids=repr)
@pytest.mark.parametrize("field", ["ts", "dur"])
def test_synthetic_boolean_and_huge_times_are_malformed_in_both(
    tmp_path: Path, field: str, value: object
) -> None:
    doc: dict[str, Any] = json.loads(SYNTHETIC.read_text())
    kernels = [e for e in doc["traceEvents"] if isinstance(e, dict) and e.get("cat") == "kernel"]
    kernels[0][field] = value
    path = tmp_path / "one_bad_time_synthetic.json"
    path.write_text(json.dumps(doc))
    _assert_same(path)
    run = kineto_json.read_with(path, use_msgspec=False)
    assert run.kernels is not None
    assert kernels[0]["name"] not in set(run.kernels["name"].cast("string").to_pylist())
    assert any("malformed events skipped" in n for n in run.meta.notes)
