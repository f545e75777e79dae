"""Doc sentences a newcomer relies on, checked against the code they describe."""

from __future__ import annotations

import re
from pathlib import Path

from tcreport.model import SourceFormat

ROOT = Path(__file__).resolve().parents[2]


def test_summary_json_doc_lists_every_source_format() -> None:
    """A TensorFlow xplane or an Nsight Compute CSV given alone reports ``tf-xplane`` /
    ``ncu-csv`` as ``source.format``; the contract's table must name every value."""
    text = (ROOT / "docs" / "summary-json.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `source.format` |"))
    listed = set(re.findall(r"`([a-z-]+)`", row.split("|")[2]))
    assert listed == {f.value for f in SourceFormat}
