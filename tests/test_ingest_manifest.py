"""A damaged ``tcreport ingest`` manifest is a one-line InputError, never a ValueError."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trace_paths import REALTRACES

from tcreport import api
from tcreport.errors import InputError

TRACE = REALTRACES / "kineto" / "a100-tf32-alexnet"


@pytest.mark.parametrize(
    "tables", [["kernels", "no_such_table"], "kernels", [1], [None], {"kernels": 1}]
)
def test_an_unknown_table_in_the_manifest_is_an_input_error(tmp_path: Path, tables: object) -> None:
    traces = sorted(TRACE.glob("*.json.gz"))
    if not traces:
        pytest.skip("real traces not available")
    out = api.ingest(api.load(traces[0]), tmp_path / "run")
    manifest_path = next(out.glob("*.json"))
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["tables"] = tables
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(InputError) as info:
        api.load(out)
    assert "'tables' must list some of" in str(info.value)
    assert "\n" not in str(info.value)
