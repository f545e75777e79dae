"""Hostile tests of what landed on main after 01ab7dd's parents (hostile17).

* ingest folders' manifest checks (7b33032): a damaged manifest is one ``InputError`` naming the
  file, never a traceback;
* the share gates' words (b70083e, ``gates.apart``): the figure and the limit are told apart
  whenever they differ, for a run and for the real two-rank job.

Real traces first: the bundled H200 CNN run (its ingest folder holds a model audit) and the bundled
2x H100 Nsight Systems job; damaged manifests and limits are ``*synthetic*``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from trace_paths import H200_NCU, SAMPLES

from tcreport import api
from tcreport.errors import InputError

JOB = SAMPLES / "nsys-h100x2-bf16"
ALEXNET = next((SAMPLES / "kineto-a100-tf32-alexnet").glob("*.json.gz"))

# -- 1. a manifest nested past Python's recursion limit -------------------------------------------


def test_a_deeply_nested_manifest_is_an_input_error_synthetic(tmp_path: Path) -> None:
    """The real CNN run's ingest folder with its first layer's ``dims`` nested 100,000 lists deep:
    ``json.loads`` raised RecursionError, a traceback out of ``summary``, where every other
    unreadable manifest is one line naming the file."""
    out = api.ingest(api.load(H200_NCU / "cnn_fp16"), tmp_path / "run")
    manifest = out / "tcreport-run.json"
    doc = json.loads(manifest.read_text(encoding="utf-8"))
    doc["meta"]["audit"]["layers"][0]["dims"] = "@@deep@@"
    text = json.dumps(doc).replace('"@@deep@@"', "[" * 100_000 + "]" * 100_000)
    manifest.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        api.load(out)
    msg = str(info.value)
    assert "tcreport-run.json" in msg and "\n" not in msg


# -- 2. the share gates tell the figure and its limit apart -------------------------------------


def _limits(share: float) -> list[float]:
    """Limits a hair above and below ``share``: a copied figure, a nudged one (``*synthetic*``)."""
    return [
        math.nextafter(share, 1.0),
        math.nextafter(share, 0.0),
        share + 1e-7,
        share - 1e-7,
        share + 1e-9,
        share - 1e-9,
    ]


def _told_apart(message: str, rel: str) -> None:
    """``message`` holds 'X % <rel> (minimum|maximum) Y %' with X and Y different."""
    head, _, tail = message.partition(f" {rel} ")
    shown = head.rsplit(" ", 2)[-2]
    bound = tail.split(" ")[1]
    assert shown != bound, message


@pytest.mark.parametrize("limit_of", range(6))
def test_the_jobs_share_gate_tells_a_limit_beside_its_share_apart_synthetic(limit_of: int) -> None:
    """The real job's TC share (59.9727...%) against a limit a hair away: 'job TC share 59.9727 %
    < minimum 59.9727 %' contradicted the verdict it explains, which gates.apart exists to stop."""
    jr = api.analyze_job(JOB)
    share = jr.section.verdict.tc_share
    assert share is not None
    limit = _limits(share)[limit_of]
    (r,) = api.check_job(jr, min_tc_share=limit).results
    assert r.passed is (share >= limit)
    _told_apart(r.message, ">=" if r.passed else "<")


@pytest.mark.parametrize("limit_of", range(6))
def test_a_runs_share_gate_tells_a_limit_beside_its_share_apart_synthetic(limit_of: int) -> None:
    """The same for a run (the real A100 AlexNet trace): its gates share gates.apart."""
    view = api.analyze(api.load(ALEXNET))
    share = view.analysis.verdict.tc_share
    assert share is not None
    limit = _limits(share)[limit_of]
    (r,) = api.check(view, min_tc_share=limit).results
    assert r.passed is (share >= limit)
    _told_apart(r.message, ">=" if r.passed else "<")
