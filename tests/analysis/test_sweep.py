"""The one interval sweep (``analysis/sweep.py``) against a brute-force reference.

The sweep packs events into one int64, walks them in chunks and keeps only sums; the reference
below does none of that: it cuts each group's span at every event time and asks, segment by
segment, which intervals cover it. Random intervals (synthetic: ties, zero lengths, nesting,
several groups) must give the same sums on the packed path, on the lexsort path taken when
times are too wide to pack, and with chunks small enough that every boundary is crossed.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import budget

from tcreport.analysis import sweep
from tcreport.analysis.activity import COMPUTE_MASK, IDLE, N_CATS, Cat

LONG_GAP = 50


def reference(
    group: np.ndarray, start: np.ndarray, end: np.ndarray, cat: np.ndarray, ngroups: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple[int, int, int]]]:
    by = np.zeros((ngroups, IDLE + 2), np.int64)
    total = np.zeros(ngroups, np.int64)
    hidden = np.zeros(ngroups, np.int64)
    gaps: list[tuple[int, int, int]] = []
    for g in range(ngroups):
        sel = group == g
        if not sel.any():
            continue
        s, e, c = start[sel], end[sel], cat[sel]
        cuts = np.unique(np.concatenate([s, e]))
        for a, b in zip(cuts[:-1], cuts[1:], strict=True):
            state = 0
            for k in range(s.size):
                if s[k] <= a and b <= e[k]:
                    state |= 1 << int(c[k])
            win = next((x for x in range(N_CATS) if state >> x & 1), IDLE)
            length = int(b - a)
            if win == IDLE and length >= LONG_GAP:
                by[g, sweep.LONG_IDLE] += length
                gaps.append((g, int(a), length))
            else:
                by[g, win] += length
            if state >> Cat.COMM & 1:
                total[g] += length
                if state & COMPUTE_MASK:
                    hidden[g] += length
    return by, total, hidden, gaps


intervals = st.lists(
    st.tuples(
        st.integers(0, 2),  # group
        st.integers(0, 400),  # start
        st.integers(0, 120),  # length (zero included)
        st.integers(0, N_CATS - 1),  # category
    ),
    min_size=1,
    max_size=40,
)


def _arrays(
    rows: list[tuple[int, int, int, int]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    a = np.array(rows, np.int64)
    _, group = np.unique(a[:, 0], return_inverse=True)
    return group.astype(np.int64), a[:, 1], a[:, 1] + a[:, 2], a[:, 3].astype(np.int8)


def _check(rows: list[tuple[int, int, int, int]], offset: int = 0) -> None:
    group, start, end, cat = _arrays(rows)
    start, end = start + offset, end + offset
    ng = int(group.max()) + 1
    got = sweep.sweep(group, start, end, cat, ng, LONG_GAP)
    by, total, hidden, gaps = reference(group, start, end, cat, ng)
    assert got.by_winner.tolist() == by.tolist()
    assert got.comm_total.tolist() == total.tolist()
    assert got.comm_hidden.tolist() == hidden.tolist()
    found = sorted(
        zip(got.gap_group.tolist(), got.gap_start.tolist(), got.gap_length.tolist(), strict=True)
    )
    assert found == sorted(gaps)
    spans = [int(end[group == g].max() - start[group == g].min()) for g in range(ng)]
    assert got.span.tolist() == spans  # each group's segments tile its span exactly


@settings(max_examples=budget(150), deadline=None)
@given(intervals)
def test_synthetic_sweep_matches_brute_force(rows: list[tuple[int, int, int, int]]) -> None:
    _check(rows)


@settings(max_examples=budget(60), deadline=None)
@given(intervals)
def test_synthetic_sweep_in_tiny_chunks(rows: list[tuple[int, int, int, int]]) -> None:
    with pytest.MonkeyPatch.context() as m:
        m.setattr(sweep, "CHUNK", 3)  # every chunk boundary falls inside some interval
        _check(rows)


@settings(max_examples=budget(60), deadline=None)
@given(
    intervals,
    st.sampled_from([1, 2, 5]),
    st.sampled_from([1, 3, 1 << 20]),
    st.sampled_from([2, 3, 16]),
)
def test_synthetic_sweep_in_slabs(
    rows: list[tuple[int, int, int, int]], slab: int, chunk: int, max_slabs: int
) -> None:
    """Events sorted slab by slab, walked in chunks that straddle the slabs; past MAX_SLABS
    the slabs grow instead of multiplying."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(sweep, "SLAB", slab)
        m.setattr(sweep, "CHUNK", chunk)
        m.setattr(sweep, "MAX_SLABS", max_slabs)
        _check(rows)


@settings(max_examples=budget(60), deadline=None)
@given(intervals)
def test_synthetic_sweep_too_wide_to_pack(rows: list[tuple[int, int, int, int]]) -> None:
    group, start, end, cat = _arrays(rows)
    # one interval near the int64 limit makes the packed key overflow: the lexsort path runs
    wide_rows = [*rows, (0, 2**61, 1, 0)]
    assert sweep._packed(*_arrays(wide_rows), int(group.max()) + 2) is None
    _check(wide_rows)


def test_synthetic_sweep_of_nothing() -> None:
    empty = np.empty(0, np.int64)
    got = sweep.sweep(empty, empty, empty, np.empty(0, np.int8), 2, LONG_GAP)
    assert got.by_winner.shape == (2, IDLE + 2) and not got.by_winner.any()
    assert got.gap_start.size == 0
