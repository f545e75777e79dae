"""tcreport._arrays.exact_sums against Python's integer sums, in slices or not."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import budget

from tcreport import _arrays


@settings(max_examples=budget(100), deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, (1 << 62) // 64)), min_size=0, max_size=60
    ),
    st.sampled_from([1, 2, 7, 1 << 20]),
)
def test_exact_sums_are_python_sums(rows: list[tuple[int, int]], slice_rows: int) -> None:
    """Weights up to 2**56 (past bincount's exact float range) summed exactly, whatever the
    slices the rows are summed in."""
    index = np.array([i for i, _ in rows], np.int32)
    weights = np.array([w for _, w in rows], np.int64)
    want = [sum(w for i, w in rows if i == k) for k in range(6)]
    with pytest.MonkeyPatch.context() as m:
        m.setattr(_arrays, "_SUM_SLICE", slice_rows)
        got = _arrays.exact_sums(index, weights, 6)
    assert got.dtype == np.int64
    assert got.tolist() == want


def test_sum_slice_slices_rows_only_while_the_sums_are_few() -> None:
    """A loop that adds each slice's sums (as long as all the sums) into running totals costs
    slices x sums: with millions of sums (a stream per launch) it takes every row at once."""
    assert _arrays.sum_slice(10_000_000, 8) == _arrays._SUM_SLICE
    assert _arrays.sum_slice(10_000_000, 5_000_000) == 10_000_000
    assert _arrays.sum_slice(0, 5_000_000) == 1  # range() needs a positive step


def test_a_handoff_gives_its_value_once() -> None:
    """The callee holds the only reference after take(): a second take() is a bug, not a copy."""
    value = [1, 2, 3]
    box = _arrays.Handoff(value)
    assert box.take() is value
    with pytest.raises(IndexError):
        box.take()
