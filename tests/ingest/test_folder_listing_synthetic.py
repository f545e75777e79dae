"""A folder of folders of traces: the refusal that lists the traces one level down also names
the subfolders it did not search deeper, so the list is not read as all there is (the bundled
sample_traces/ holds h200-torch-cnn-ncu/, whose traces are two levels down)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tcreport import api
from tcreport.errors import UnsupportedFormatError

SAMPLE = Path(__file__).resolve().parents[2] / "sample_traces" / "kineto-a100-tf32-alexnet"


def test_synthetic_deeper_folders_are_named_in_the_refusal(tmp_path: Path) -> None:
    (trace,) = SAMPLE.glob("*.json.gz")
    for sub in ("a", "b", "deep/inner"):
        (tmp_path / sub).mkdir(parents=True)
        shutil.copy(trace, tmp_path / sub / trace.name)
    with pytest.raises(UnsupportedFormatError) as e:
        api.load(tmp_path)
    text = str(e.value)
    assert "holds 2 traces in its subfolders" in text
    assert text.endswith("not searched deeper than one level: deep"), text
