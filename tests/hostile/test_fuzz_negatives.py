"""Fuzz cases whose summary came out with negative totals, replayed: the reader must drop the
damaged rows (with a note), not sum them. Found by running fuzz.py's mutators through the HTML
report with the step breakdown's invariants (the hostile test of session 4)."""

from __future__ import annotations

import random
from pathlib import Path

import fuzzing
import pytest

#: (family, seed): xplane:160 holds a memcpy of duration_ps INT64_MIN, -9.2e15 ns of memory time.
NEGATIVE_BEFORE = [("xplane", 160)]


@pytest.mark.realtraces
@pytest.mark.parametrize(("family", "seed"), NEGATIVE_BEFORE)
def test_synthetic_fuzz_cases_that_summed_negative_totals(
    family: str, seed: int, tmp_path: Path
) -> None:
    if family == "xplane":
        pytest.importorskip("xprof")
    fams = fuzzing.families(tmp_path / "sources")
    if family not in fams:
        pytest.skip(f"no source files for {family}")
    fam = fams[family]
    rng = random.Random(f"{family}:{seed}")
    case = tmp_path / "case"
    case.mkdir()
    v = fuzzing.verdict(fam.mutate(rng, fuzzing.pick_source(rng, fam), case))
    assert v.kind == "ok", v.signature
    assert v.negative == ()
