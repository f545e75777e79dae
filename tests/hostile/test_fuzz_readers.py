"""Every reader family on seeded mutations of the real traces: a TcreportError or a result, never a
traceback. Derandomized (case ``i`` of family ``f`` is ``random.Random(f"{f}:{i}")``, as in
``benchmarks/fuzz.py``, which runs the same cases by the ten thousand). Tracebacks that issue 13
fixes (``tests/fuzzing.py: KNOWN_ISSUE_13``) and negative totals (also issue 13) are not asserted
here; the long run counts them."""

from __future__ import annotations

import random
from pathlib import Path

import fuzzing
import pytest

#: Cases per family: a few hundred in all, about a minute on two cores. xplane converts through
#: xprof (seconds a case), so it gets a handful.
CASES = {
    "nsys": 60,
    "kineto": 60,
    "dlprof-csv": 50,
    "dlprof-json": 50,
    "dlprof-sqlite": 40,
    "ncu": 50,
    "xplane": 4,
    "ingest": 60,
}


@pytest.fixture(scope="module")
def families(tmp_path_factory: pytest.TempPathFactory) -> dict[str, fuzzing.Family]:
    fams = fuzzing.families(tmp_path_factory.mktemp("fuzz-sources"))
    if "nsys" not in fams:
        pytest.skip("real traces not available")
    return fams


@pytest.mark.realtraces
@pytest.mark.parametrize("family", sorted(CASES))
def test_mutated_inputs_never_raise_anything_but_tcreport_errors(
    family: str, families: dict[str, fuzzing.Family], tmp_path: Path
) -> None:
    if family == "xplane":
        pytest.importorskip("xprof")
    fam = families.get(family)
    if fam is None:
        pytest.skip(f"no source files for {family}")
    kinds: dict[str, int] = {}
    bugs: list[str] = []
    for i in range(CASES[family]):
        rng = random.Random(f"{family}:{i}")
        case = tmp_path / str(i)
        case.mkdir()
        v = fuzzing.verdict(fam.mutate(rng, fuzzing.pick_source(rng, fam), case))
        kinds[v.kind] = kinds.get(v.kind, 0) + 1
        if v.kind in ("traceback", "invariant"):
            bugs.append(f"case {i}: {v.kind}: {v.signature}")
    assert bugs == []
    assert kinds.get("ok", 0) + kinds.get("rejected", 0) + kinds.get("known", 0) == CASES[family]
    if family not in ("ncu", "xplane"):  # small CSVs and protobuf bytes: most mutations break them
        assert kinds.get("ok", 0) > 0, kinds  # the mutations leave some traces readable


#: Cases the long run (benchmarks/fuzz.py) found tracebacks in, fixed since: replayed every time.
FOUND_BY_THE_LONG_RUN = [
    ("dlprof-sqlite", 4011),
    ("dlprof-sqlite", 9807),
    ("xplane", 468),
    ("xplane", 656),
    ("xplane", 668),
]


@pytest.mark.realtraces
@pytest.mark.parametrize(("family", "seed"), FOUND_BY_THE_LONG_RUN)
def test_cases_the_long_run_found_stay_fixed(
    family: str, seed: int, families: dict[str, fuzzing.Family], tmp_path: Path
) -> None:
    if family == "xplane":
        pytest.importorskip("xprof")
    fam = families[family]
    rng = random.Random(f"{family}:{seed}")
    v = fuzzing.verdict(fam.mutate(rng, fuzzing.pick_source(rng, fam), tmp_path))
    assert v.kind in ("ok", "rejected"), v.signature
