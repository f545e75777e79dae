"""Hostile reproduction (branch hostile5) for the ncu reader's repeated units rows: marked
xfail(strict=True) until its fix flips it."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tcreport.errors import InputError
from tcreport.ingest.ncu import reader

SAMPLE = Path(__file__).parents[2] / "sample_traces/h200-torch-cnn-ncu/ncu/ncu3_cnn_fp16.csv"


def test_second_units_row_is_never_a_launch(tmp_path: Path) -> None:
    """A units row after a repeated header, one unit left blank, is a units row: refused as other
    units (found by hostile5), never a launch with no ID and no name."""
    lines = [ln for ln in SAMPLE.read_text().splitlines(keepends=True) if not ln.startswith("==")]
    rows = list(csv.reader(lines))
    header, units, data = rows[0], rows[1], rows[2:]
    other = list(units)
    other[header.index("gpu__time_duration.sum")] = ""  # the same units row, one unit left out
    path = tmp_path / "cat_units_synthetic.csv"
    with path.open("w", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL).writerows(
            [header, units, *data, header, other, *data]
        )
    try:
        run = reader.read(path)
    except InputError:
        return  # refused, as a second units row with other units is
    assert run.kernels is not None
    assert run.kernels.num_rows == 2 * len(data)


def test_units_after_a_part_without_units_are_refused(tmp_path: Path) -> None:
    """``cat`` of an ncu CSV without a units row and one with: the second part's units row is
    refused in one line, not read as a launch that nulls every duration."""
    lines = [ln for ln in SAMPLE.read_text().splitlines(keepends=True) if not ln.startswith("==")]
    rows = list(csv.reader(lines))
    header, units, data = rows[0], rows[1], rows[2:]
    path = tmp_path / "cat_no_units_then_units_synthetic.csv"
    with path.open("w", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL).writerows([header, *data, header, units, *data])
    with pytest.raises(InputError, match="second units row"):
        reader.read(path)
