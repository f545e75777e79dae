"""tcreport.analysis._codes against a naive reference computed on Python strings."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Hashable, Sequence
from typing import TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import budget

from tcreport.analysis import _codes

SETTINGS = settings(
    max_examples=budget(100), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

Col: TypeAlias = pa.Array | pa.ChunkedArray

# ---------------------------------------------------------------------------------------------
# strategies: (column, the same column as Python strings)

_VALUES = st.sampled_from(["a", "b", "c", "ab", "B", "", "é", "a b"])


@st.composite
def _dict_chunk(draw: st.DrawFn, index_type: pa.DataType) -> pa.DictionaryArray:
    """A hand-built dictionary chunk: the dictionary may repeat values and hold unused ones."""
    dictionary = draw(st.lists(_VALUES, max_size=6))
    n = draw(st.integers(0, 8))
    idx = st.one_of(st.none(), st.integers(0, len(dictionary) - 1)) if dictionary else st.none()
    indices = draw(st.lists(idx, min_size=n, max_size=n))
    return pa.DictionaryArray.from_arrays(
        pa.array(indices, index_type), pa.array(dictionary, pa.string())
    )


@st.composite
def columns(draw: st.DrawFn) -> tuple[Col, list[str | None]]:
    kind = draw(
        st.sampled_from(
            ["plain", "plain_chunked", "encoded", "dict", "dict_chunked", "empty_chunked"]
        )
    )
    index_type = draw(st.sampled_from([pa.int32(), pa.int64(), pa.int8()]))
    col: Col
    if kind == "plain":
        col = pa.array(draw(st.lists(st.one_of(st.none(), _VALUES), max_size=10)), pa.string())
    elif kind == "plain_chunked":
        parts = draw(st.lists(st.lists(st.one_of(st.none(), _VALUES), max_size=5), max_size=4))
        col = pa.chunked_array([pa.array(p, pa.string()) for p in parts], pa.string())
    elif kind == "encoded":
        col = pa.array(
            draw(st.lists(st.one_of(st.none(), _VALUES), max_size=10)), pa.string()
        ).dictionary_encode()
    elif kind == "dict":
        col = draw(_dict_chunk(index_type))
    elif kind == "dict_chunked":
        chunks = draw(st.lists(_dict_chunk(index_type), min_size=1, max_size=4))
        col = pa.chunked_array(chunks, pa.dictionary(index_type, pa.string()))
    else:
        col = pa.chunked_array(
            [], draw(st.sampled_from([pa.string(), pa.dictionary(index_type, pa.string())]))
        )
    return col, col.to_pylist()


# ---------------------------------------------------------------------------------------------
# codes / Codes.take / as_strings / count_distinct


def _check_codes(col: Col, expected: list[str | None]) -> _codes.Codes:
    c = _codes.codes(col)
    assert c.codes.dtype in (np.int32, np.int64)  # int32 unless the indices are 64-bit
    assert len(c.codes) == len(expected)
    values = c.values.to_pylist()
    assert len(set(values)) == len(values), "small dictionaries are de-duplicated"
    for i, s in enumerate(expected):
        if s is None:
            assert c.codes[i] == -1
        else:
            assert 0 <= c.codes[i] < len(values)
            assert values[c.codes[i]] == s
    # equal strings <-> equal codes
    for i, a in enumerate(expected):
        for j, b in enumerate(expected):
            if a is not None and b is not None:
                assert (c.codes[i] == c.codes[j]) == (a == b)
    assert c.take(c.codes) == expected
    assert c.valid().tolist() == [s is not None for s in expected]
    return c


@SETTINGS
@given(columns())
def test_codes_match_strings(case: tuple[Col, list[str | None]]) -> None:
    col, expected = case
    _check_codes(col, expected)


@SETTINGS
@given(columns())
def test_as_strings_and_count_distinct(case: tuple[Col, list[str | None]]) -> None:
    col, expected = case
    distinct = {s for s in expected if s is not None}
    got = _codes.as_strings(col)
    assert len(got) == len(set(got))
    assert set(got) == distinct
    assert _codes.count_distinct(col) == len(distinct)


@SETTINGS
@given(columns(), st.sampled_from([1, 2, 3, 1 << 20]))
def test_value_counts_and_index_column_match_codes(
    case: tuple[Col, list[str | None]], slice_rows: int
) -> None:
    """Counted a slice at a time or not; the index column says what codes() says."""
    col, expected = case
    c = _codes.codes(col)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(_codes, "_COUNT_SLICE", slice_rows)
        counts = _codes.value_counts(c)
    want = {v: expected.count(v) for v in expected if v is not None}
    values = c.values.to_pylist()
    assert {values[i]: int(n) for i, n in enumerate(counts) if n} == want
    dictionary, index = _codes.index_column(col)
    assert pa.types.is_int32(index.type)
    got = index.to_pylist()
    assert [None if i is None else dictionary[i].as_py() for i in got] == expected


def test_codes_plain_strings_first_appearance() -> None:
    c = _check_codes(pa.array(["b", "a", None, "b"]), ["b", "a", None, "b"])
    assert c.codes.tolist() == [0, 1, -1, 0]
    assert c.values.to_pylist() == ["b", "a"]


def test_codes_dictionary_with_repeated_value() -> None:
    col = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2]), pa.array(["a", "b", "a"]))
    c = _check_codes(col, ["a", "b", "a"])
    assert c.codes.tolist() == [0, 1, 0]
    assert c.values.to_pylist() == ["a", "b"]
    assert _codes.count_distinct(col) == 2
    assert sorted(_codes.as_strings(col)) == ["a", "b"]


def test_codes_repeated_value_with_null_indices() -> None:
    col = pa.DictionaryArray.from_arrays(
        pa.array([2, None, 0, 1, None], pa.int32()), pa.array(["x", "y", "x"])
    )
    c = _check_codes(col, ["x", None, "x", "y", None])
    assert c.codes.tolist() == [0, -1, 0, 1, -1]


def test_codes_of_a_large_dictionary_again_from_the_remembered_answer() -> None:
    """A dictionary coded again (the op ids, a dozen times per analysis) gives the same codes
    whether it is distinct or not; only its buffers identify it, so a new array with the same
    text is hashed afresh and a slice of the same buffers is not taken for the whole."""
    n = _codes._SEEN_MIN
    distinct = pa.array([f"op{i}" for i in range(n)])
    repeated = pa.array([f"op{i % (n // 2)}" for i in range(n)])
    for values in (distinct, repeated, distinct, repeated):
        col = pa.DictionaryArray.from_arrays(pa.array([n - 1, 0, None, n // 2], pa.int32()), values)
        c = _codes.codes(col)
        want = [n - 1, 0, -1, n // 2] if values is distinct else [n // 2 - 1, 0, -1, 0]
        assert c.codes.tolist() == want
        assert len(c.values) == (n if values is distinct else n // 2)
    part = repeated.slice(0, n // 2)  # the same buffers, another offset and length: distinct
    c = _codes.codes(pa.DictionaryArray.from_arrays(pa.array([0, n // 2 - 1]), part))
    assert c.codes.tolist() == [0, n // 2 - 1]
    assert len(c.values) == n // 2


def test_codes_chunks_with_different_dictionaries() -> None:
    a = pa.DictionaryArray.from_arrays(pa.array([0, 1, None]), pa.array(["a", "b"]))
    b = pa.DictionaryArray.from_arrays(pa.array([1, 0, 2]), pa.array(["b", "c", "a"]))
    col = pa.chunked_array([a, b])
    c = _check_codes(col, ["a", "b", None, "c", "b", "a"])
    assert c.codes[[0, 5]].tolist() == [c.codes[0]] * 2
    assert c.codes[[1, 4]].tolist() == [c.codes[1]] * 2
    assert len({int(c.codes[0]), int(c.codes[1]), int(c.codes[3])}) == 3
    assert _codes.count_distinct(col) == 3


@pytest.mark.parametrize(
    "col",
    [
        pa.array([], pa.string()),
        pa.array([], pa.string()).dictionary_encode(),
        pa.chunked_array([], pa.string()),
        pa.chunked_array([], pa.dictionary(pa.int32(), pa.string())),
        pa.chunked_array([pa.array([], pa.string()), pa.array([], pa.string())]),
    ],
)
def test_codes_empty(col: Col) -> None:
    c = _codes.codes(col)
    assert c.codes.tolist() == []
    assert c.take(c.codes) == []
    assert _codes.as_strings(col) == []
    assert _codes.count_distinct(col) == 0


def test_codes_all_null() -> None:
    col = pa.chunked_array([pa.array([None, None], pa.string()), pa.array([None], pa.string())])
    c = _check_codes(col, [None, None, None])
    assert c.codes.tolist() == [-1, -1, -1]
    assert _codes.count_distinct(col) == 0
    assert _codes.as_strings(col) == []


def test_take_minus_one_is_none() -> None:
    c = _codes.codes(pa.array(["p", "q"]))
    assert c.take(np.array([1, -1, 0, 1])) == ["q", None, "p", "q"]
    assert c.take(np.array([], np.int64)) == []


# A dictionary may itself hold a null (``dictionary_encode(null_encoding="encode")`` makes one):
# such a row is null (``to_pylist`` gives None) and gets code -1, in the de-duplicated path and
# in the large-dictionary path alike (it once got INT64_MIN, which combine() merged with code 0).
_NULL_IN_DICT = [
    pa.DictionaryArray.from_arrays(pa.array([0, 1, 2]), pa.array(["a", None, "a"])),
    pa.DictionaryArray.from_arrays(pa.array([0, 1]), pa.array(["a", None])),
    pa.array(["a", None, "a"]).dictionary_encode(null_encoding="encode"),
]


@pytest.mark.parametrize("dedupe_max", [_codes._DEDUPE_MAX, -1])
@pytest.mark.parametrize("col", _NULL_IN_DICT)
def test_codes_null_dictionary_entry_is_minus_one(
    col: Col, dedupe_max: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_codes, "_DEDUPE_MAX", dedupe_max)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        c = _codes.codes(col)
    expected = col.to_pylist()
    assert all(
        (code == -1) == (s is None) for code, s in zip(c.codes.tolist(), expected, strict=True)
    )
    assert c.take(c.codes) == expected


def test_combine_null_dictionary_entry_not_merged() -> None:
    col = pa.DictionaryArray.from_arrays(pa.array([0, 1]), pa.array(["a", None]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        c = _codes.codes(col)
    key = _codes.combine(c.codes, np.array([0, 0]))
    assert key.tolist() == [0, 1]  # ("a", 0) and (null, 0) are different tuples


def test_null_dictionary_entry_is_false_and_not_counted() -> None:
    """What does work with a null dictionary entry: per-value lookups and the counts."""
    col = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2]), pa.array(["a", None, "a"]))
    assert _codes.equals(col, "a").to_pylist() == [True, False, True]
    assert _codes.matches(col, "a").to_pylist() == [True, False, True]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert _codes.count_distinct(col) == 1
        assert _codes.as_strings(col) == ["a"]


# ---------------------------------------------------------------------------------------------
# joint


def _check_joint(
    ops_col: Col, other_col: Col, ops: list[str | None], other: list[str | None]
) -> _codes.Joint:
    j = _codes.joint(ops_col, other_col)
    assert len(j.ops) == len(ops) and len(j.other) == len(other)
    assert j.size >= 0
    for codes_, strings in ((j.ops, ops), (j.other, other)):
        for code, s in zip(codes_.tolist(), strings, strict=True):
            if s is None:
                assert code == -1
            else:
                assert 0 <= code < j.size
    for i, a in enumerate(ops):
        for k, b in enumerate(other):
            joined = bool(j.ops[i] == j.other[k] and j.ops[i] >= 0)
            assert joined == (a is not None and b is not None and a == b), (i, k, a, b)
    # within one side, equal strings <-> equal codes too
    for codes_, strings in ((j.ops, ops), (j.other, other)):
        for i, a in enumerate(strings):
            for k, b in enumerate(strings):
                if a is not None and b is not None:
                    assert (codes_[i] == codes_[k]) == (a == b)
    return j


@SETTINGS
@given(columns(), columns())
def test_joint_property_different_columns(
    ops_case: tuple[Col, list[str | None]], other_case: tuple[Col, list[str | None]]
) -> None:
    _check_joint(ops_case[0], other_case[0], ops_case[1], other_case[1])


@st.composite
def _shared_dictionary(draw: st.DrawFn) -> tuple[Col, Col]:
    """Two columns over ONE dictionary object (the readers' fast path), maybe chunked."""
    dictionary = pa.array(draw(st.lists(_VALUES, min_size=1, max_size=6)), pa.string())
    idx = st.one_of(st.none(), st.integers(0, len(dictionary) - 1))

    def side() -> Col:
        arr = pa.DictionaryArray.from_arrays(
            pa.array(draw(st.lists(idx, max_size=10)), pa.int32()), dictionary
        )
        if draw(st.booleans()):
            return pa.chunked_array([arr])
        return arr

    return side(), side()


@SETTINGS
@given(_shared_dictionary())
def test_joint_property_shared_dictionary(case: tuple[Col, Col]) -> None:
    ops_col, other_col = case
    _check_joint(ops_col, other_col, ops_col.to_pylist(), other_col.to_pylist())


def test_joint_fast_path_same_dictionary_object() -> None:
    d = pa.array(["x", "y", "z"])
    ops = pa.DictionaryArray.from_arrays(pa.array([0, 1, None]), d)
    ker = pa.DictionaryArray.from_arrays(pa.array([1, 1, 2, None, 0]), d)
    j = _check_joint(ops, ker, ["x", "y", None], ["y", "y", "z", None, "x"])
    assert j.ops.tolist() == [0, 1, -1]
    assert j.other.tolist() == [1, 1, 2, -1, 0]  # the indices themselves
    assert j.size == 3


def test_joint_equal_but_distinct_dictionaries() -> None:
    ops = pa.DictionaryArray.from_arrays(pa.array([2, 0]), pa.array(["x", "y", "z"]))
    ker = pa.DictionaryArray.from_arrays(pa.array([0, 2, 1, None]), pa.array(["x", "y", "z"]))
    j = _check_joint(ops, ker, ["z", "x"], ["x", "z", "y", None])
    assert j.ops.tolist() == [2, 0]
    assert j.other.tolist() == [0, 2, 1, -1]
    assert j.size == 3


def test_joint_partial_overlap_and_absent_ids() -> None:
    ops = pa.DictionaryArray.from_arrays(pa.array([0, 1, None, 2]), pa.array(["o1", "o2", "o3"]))
    ker = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, None, 0]), pa.array(["o3", "k9", "o1"]))
    j = _check_joint(ops, ker, ["o1", "o2", None, "o3"], ["o3", "k9", "o1", None, "o3"])
    assert j.ops.tolist() == [0, 1, -1, 2]
    assert j.other[[0, 2, 3, 4]].tolist() == [2, 0, -1, 2]
    # "k9" is no op: it must match no op row (it has a key of its own, not -1; see report)
    assert int(j.other[1]) not in set(j.ops.tolist())
    assert j.size == 4


def test_joint_other_ids_all_absent() -> None:
    ops = pa.array(["a", "b"]).dictionary_encode()
    ker = pa.array(["c", None, "d"]).dictionary_encode()
    j = _check_joint(ops, ker, ["a", "b"], ["c", None, "d"])
    assert not np.isin(j.other, j.ops).any()


def test_joint_slow_path_ops_dictionary_repeats_value() -> None:
    ops = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, None]), pa.array(["a", "b", "a"]))
    ker = pa.DictionaryArray.from_arrays(pa.array([1, 0, None, 2]), pa.array(["b", "a", "c"]))
    j = _check_joint(ops, ker, ["a", "b", "a", None], ["a", "b", None, "c"])
    assert j.ops.tolist() == [0, 1, 0, -1]
    assert j.other.tolist()[:3] == [0, 1, -1]
    assert j.other[3] not in (0, 1, -1)


def test_joint_fast_path_dictionary_repeats_value() -> None:
    d = pa.array(["a", "b", "a"])
    ops = pa.DictionaryArray.from_arrays(pa.array([0, 1]), d)
    ker = pa.DictionaryArray.from_arrays(pa.array([2, 1, 0]), d)
    j = _check_joint(ops, ker, ["a", "b"], ["a", "b", "a"])
    assert j.other.tolist() == [j.ops[0], j.ops[1], j.ops[0]]


def test_joint_plain_and_chunked_sides() -> None:
    ops = pa.chunked_array(
        [pa.array(["u", "v"]).dictionary_encode(), pa.array(["w", "u"]).dictionary_encode()]
    )
    ker = pa.array(["w", None, "u", "q"])
    j = _check_joint(ops, ker, ["u", "v", "w", "u"], ["w", None, "u", "q"])
    assert j.other[0] == j.ops[2] and j.other[2] == j.ops[0] == j.ops[3]


@pytest.mark.parametrize(
    "ops_col,other_col,ops_codes,other_codes",
    [
        (
            pa.chunked_array([], pa.dictionary(pa.int32(), pa.string())),
            pa.array(["a", None]),
            [],
            [0, -1],
        ),
        (
            pa.array(["a", None]).dictionary_encode(),
            pa.chunked_array([], pa.string()),
            [0, -1],
            [],
        ),
        (pa.array([], pa.string()), pa.array([], pa.string()), [], []),
    ],
)
def test_joint_empty_sides(
    ops_col: Col, other_col: Col, ops_codes: list[int], other_codes: list[int]
) -> None:
    j = _check_joint(ops_col, other_col, ops_col.to_pylist(), other_col.to_pylist())
    assert j.ops.tolist() == ops_codes
    assert j.other.tolist() == other_codes


# ---------------------------------------------------------------------------------------------
# combine / first_rows


def _reference_combine(rows: Sequence[tuple[Hashable, ...]]) -> tuple[list[int], list[int]]:
    seen: dict[tuple[Hashable, ...], int] = {}
    first: list[int] = []
    out = []
    for r, t in enumerate(rows):
        if t not in seen:
            seen[t] = len(seen)
            first.append(r)
        out.append(seen[t])
    return out, first


@st.composite
def _code_arrays(draw: st.DrawFn) -> list[np.ndarray]:
    ncols = draw(st.integers(1, 3))
    n = draw(st.integers(0, 15))
    hi = draw(st.sampled_from([2, 5, 1_000_000]))
    cols = []
    for _ in range(ncols):
        pool = st.one_of(st.just(-1), st.integers(0, 3), st.integers(0, hi))
        cols.append(np.array(draw(st.lists(pool, min_size=n, max_size=n)), np.int64))
    return cols


@SETTINGS
@given(_code_arrays())
def test_combine_and_first_rows_match_reference(cols: list[np.ndarray]) -> None:
    rows = list(zip(*(c.tolist() for c in cols), strict=True))
    expected, first = _reference_combine(rows)
    key = _codes.combine(*cols)
    assert key.tolist() == expected
    assert _codes.first_rows(key).tolist() == first


def test_combine_explicit() -> None:
    a = np.array([0, 0, 1, -1, 0, 1, -1])
    b = np.array([1, 1, 0, -1, 2, 0, 1])
    key = _codes.combine(a, b)
    assert key.tolist() == [0, 0, 1, 2, 3, 1, 4]
    assert _codes.first_rows(key).tolist() == [0, 2, 3, 4, 6]


def test_combine_single_column_renumbers_by_first_appearance() -> None:
    key = _codes.combine(np.array([7, 3, 7, -1, 3, 0]))
    assert key.tolist() == [0, 1, 0, 2, 1, 3]
    assert _codes.first_rows(key).tolist() == [0, 1, 3, 5]


def test_combine_three_columns_and_empty() -> None:
    key = _codes.combine(np.array([0, 0, 0, 0]), np.array([1, 1, 2, 1]), np.array([5, 6, 5, 5]))
    assert key.tolist() == [0, 1, 2, 0]
    assert _codes.first_rows(key).tolist() == [0, 1, 2]
    empty = np.zeros(0, np.int64)
    assert _codes.combine(empty).tolist() == []
    assert _codes.combine(empty, empty).tolist() == []
    assert _codes.first_rows(empty).tolist() == []


@SETTINGS
@given(columns(), columns())
def test_combine_of_column_codes_groups_string_pairs(
    a: tuple[Col, list[str | None]], b: tuple[Col, list[str | None]]
) -> None:
    n = min(len(a[1]), len(b[1]))
    ca = _codes.codes(a[0]).codes[:n]
    cb = _codes.codes(b[0]).codes[:n]
    expected, first = _reference_combine(list(zip(a[1][:n], b[1][:n], strict=True)))
    key = _codes.combine(ca, cb)
    assert key.tolist() == expected
    assert _codes.first_rows(key).tolist() == first


# ---------------------------------------------------------------------------------------------
# per_value / equals / matches


class _Counting:
    def __init__(self, fn: Callable[[pa.Array], pa.Array]) -> None:
        self.fn = fn
        self.seen: list[int] = []

    def __call__(self, values: pa.Array) -> pa.Array:
        self.seen.append(len(values))
        return self.fn(values)


def _chunks(col: Col) -> list[pa.Array]:
    return list(col.chunks) if isinstance(col, pa.ChunkedArray) else [col]


@SETTINGS
@given(columns())
def test_per_value_matches_reference_and_sees_dictionary(
    case: tuple[Col, list[str | None]],
) -> None:
    col, expected = case
    fn = _Counting(pc.utf8_length)
    out = _codes.per_value(col, fn)
    assert isinstance(out, pa.ChunkedArray)
    assert out.to_pylist() == [None if s is None else len(s) for s in expected]
    chunks = _chunks(col)
    if chunks:
        want = [len(c.dictionary) if pa.types.is_dictionary(c.type) else len(c) for c in chunks]
        assert fn.seen == want
    else:
        assert fn.seen == [0]  # only to learn the result type


@SETTINGS
@given(columns(), _VALUES)
def test_equals_matches_reference(case: tuple[Col, list[str | None]], value: str) -> None:
    col, expected = case
    assert _codes.equals(col, value).to_pylist() == [s == value for s in expected]


_PATTERNS = ["^a", "b$", "a|c", "^$", "A", "é", "a b", "^[a-c]+$"]


@SETTINGS
@given(columns(), st.sampled_from(_PATTERNS), st.booleans())
def test_matches_reference(
    case: tuple[Col, list[str | None]], pattern: str, ignore_case: bool
) -> None:
    col, expected = case
    flags = re.IGNORECASE if ignore_case else 0
    want = [s is not None and re.search(pattern, s, flags) is not None for s in expected]
    assert _codes.matches(col, pattern, ignore_case=ignore_case).to_pylist() == want


def test_per_value_called_once_per_distinct_dictionary_value() -> None:
    d = pa.array(["conv", "gemm", "relu"])
    col = pa.DictionaryArray.from_arrays(pa.array([0, 1, 1, None, 0, 2, 0, 0] * 50), d)
    fn = _Counting(lambda v: pc.utf8_upper(v))
    out = _codes.per_value(col, fn)
    assert fn.seen == [3]
    assert out.to_pylist()[:8] == ["CONV", "GEMM", "GEMM", None, "CONV", "RELU", "CONV", "CONV"]
    assert len(out) == 400


def test_per_value_chunked_sees_each_chunk_dictionary() -> None:
    a = pa.DictionaryArray.from_arrays(pa.array([0, 0, None]), pa.array(["aa", "b"]))
    b = pa.DictionaryArray.from_arrays(pa.array([2, 1]), pa.array(["x", "yyy", "zz"]))
    fn = _Counting(pc.utf8_length)
    out = _codes.per_value(pa.chunked_array([a, b]), fn)
    assert fn.seen == [2, 3]
    assert out.to_pylist() == [2, 2, None, 2, 3]


def test_per_value_plain_column_sees_every_row() -> None:
    fn = _Counting(pc.utf8_length)
    out = _codes.per_value(pa.array(["ab", None, "ab"]), fn)
    assert fn.seen == [3]
    assert out.to_pylist() == [2, None, 2]


def test_per_value_zero_chunks_keeps_result_type() -> None:
    out = _codes.per_value(
        pa.chunked_array([], pa.dictionary(pa.int32(), pa.string())), pc.utf8_length
    )
    assert len(out) == 0
    assert out.type == pa.int32()


def test_equals_and_matches_explicit() -> None:
    d = pa.array(["MatMul", "Conv2D", "matmul_grad"])
    col = pa.chunked_array(
        [
            pa.DictionaryArray.from_arrays(pa.array([0, None, 1]), d),
            pa.DictionaryArray.from_arrays(
                pa.array([2, 0]), pa.array(["matmul_grad", "Relu", "MatMul"])
            ),
        ]
    )
    # rows: MatMul, None, Conv2D, MatMul, matmul_grad
    assert _codes.equals(col, "MatMul").to_pylist() == [True, False, False, True, False]
    assert _codes.matches(col, "^matmul").to_pylist() == [False, False, False, False, True]
    got = _codes.matches(col, "^matmul", ignore_case=True).to_pylist()
    assert got == [True, False, False, True, True]
    assert _codes.equals(pa.array([None, "x"]), "x").to_pylist() == [False, True]
    assert _codes.equals(pa.chunked_array([], pa.string()), "x").to_pylist() == []
