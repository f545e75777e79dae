"""DLProf JSON reader: the real CSVs converted to JSON read to exactly the CSV reader's tables."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import shutil
import tempfile
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import budget
from trace_paths import DLPROF_CNN

from tcreport.errors import InputError
from tcreport.ingest import detect
from tcreport.ingest.dlprof import csv_reader as dlprof_csv
from tcreport.ingest.dlprof import json_reader as dlprof_json
from tcreport.model import Run, SourceFormat
from tcreport.schema import TableKind, validate

CONVERTER = (
    Path(__file__).parents[1]
    / "fixtures"
    / "dlprof_v1.8_json_synthetic_from_real_csv"
    / "csv_to_json.py"
)


def _converter() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dlprof_csv_to_json_synthetic", CONVERTER)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def json_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not DLPROF_CNN.exists():
        pytest.skip(f"real trace not available: {DLPROF_CNN}")
    out = tmp_path_factory.mktemp("dlprof_json_synthetic")
    _converter().convert_dir(DLPROF_CNN, out)
    return out


def test_sniff(json_dir: Path) -> None:
    assert dlprof_json.sniff(json_dir)
    assert dlprof_json.sniff(json_dir / "dlprof_summary.json")
    assert not dlprof_csv.sniff(json_dir)
    assert not dlprof_json.sniff(DLPROF_CNN)  # CSV reports are not JSON ones
    assert not dlprof_json.sniff(DLPROF_CNN / "nsys_profile.sqlite")
    assert detect(json_dir) is SourceFormat.DLPROF_JSON


def test_json_reads_to_the_same_run_as_csv(json_dir: Path, tmp_path: Path) -> None:
    # as DLProf leaves a result folder: the reports beside the Nsight Systems export they came from
    folder = tmp_path / "json"
    shutil.copytree(json_dir, folder)
    shutil.copyfile(DLPROF_CNN / "nsys_profile.sqlite", folder / "nsys_profile.sqlite")
    from_csv, from_json = dlprof_csv.read(DLPROF_CNN), dlprof_json.read(folder)
    for kind in (TableKind.KERNELS, TableKind.OPS):
        table = getattr(from_json, kind.value)
        validate(table, kind)
        assert table.equals(getattr(from_csv, kind.value)), kind
    assert from_json.memory is from_csv.memory is None
    assert from_json.meta.format is SourceFormat.DLPROF_JSON
    same = dataclasses.replace(
        from_json.meta,
        format=from_csv.meta.format,
        path=from_csv.meta.path,
        files=from_csv.meta.files,
    )
    assert same == from_csv.meta
    assert from_json.meta.files == tuple(n.replace(".csv", ".json") for n in from_csv.meta.files)
    assert (
        from_json.meta.reported.gpu_kernel_ns == 589147
        and from_json.meta.reported.eligible_op_count == 5
    )


def test_only_summary_json(json_dir: Path, tmp_path: Path) -> None:
    shutil.copy(json_dir / "dlprof_summary.json", tmp_path)
    run = dlprof_json.read(tmp_path)
    assert run.kernels is None and run.ops is None
    assert (
        run.meta.reported.wall_ns == 2840562182
        and run.meta.gpus[0].name == "NVIDIA GeForce RTX 2070 SUPER"
    )


def test_empty_report_list_is_an_empty_table(tmp_path: Path) -> None:
    f = tmp_path / "x_expert_systems.json"
    f.write_text(json.dumps({"Expert Systems Feedback": []}))
    assert dlprof_json.read(f).meta.source_findings == ()


def _error(path: Path) -> str:
    with pytest.raises(InputError) as info:
        dlprof_json.read(path)
    return str(info.value)


@pytest.mark.parametrize(
    ("content", "expect"),
    [
        (b"", "empty"),
        (b'{"Kernel Report": [{"Kernel Name": "k", "Total GPU Time (ns)": 5}', "invalid JSON"),
        (b'{"Kernel Report": [{"Kernel Name": "caf\xe9"}]}', "UTF-8"),
        (b'[{"a": 1}]', "not a JSON object"),
        (b'{"a": 1, "b": 2}', "no DLProf report title"),
        (b'{"Kernel Report": [{"Op ID": "X", "Total GPU Time (ns)": 5}]}', "'Kernel Name'"),
        (b'{"Kernel Report": [{"Kernel Name": "k", "Total GPU Time (ns)": "soon"}]}', "record 1"),
        (
            b'{"Kernel Report": [{"Kernel Name": {"x": 1}, "Total GPU Time (ns)": 5}]}',
            "nested dict",
        ),
        (b'{"Kernel Report": 7}', "expected a list of records"),
    ],
)
def test_bad_json(tmp_path: Path, content: bytes, expect: str) -> None:
    f = tmp_path / "dlprof_kernel.json"
    f.write_bytes(content)
    msg = _error(f)
    assert "dlprof_kernel.json" in msg and expect in msg


def test_directory_without_reports(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"a": 1}')
    assert not dlprof_json.sniff(tmp_path)
    assert "no DLProf JSON reports" in _error(tmp_path)


@settings(max_examples=budget(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_json_reads_or_raises_input_error(json_dir: Path, data: st.DataObject) -> None:
    files = sorted(p.name for p in json_dir.iterdir())
    name = data.draw(st.sampled_from(files))
    raw = bytearray((json_dir / name).read_bytes())
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, max(len(raw) - 1, 0)))
        raw[i : i + 1] = data.draw(
            st.sampled_from([b"", b"0", b'"', b"{", b"]", b"-", b"\xff", b"null", b"1e999"])
        )
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / name
        f.write_bytes(bytes(raw))
        try:
            run: Run = dlprof_json.read(f)
        except InputError as exc:
            assert "dlprof_" in str(exc)
        else:
            for kind in (TableKind.KERNELS, TableKind.OPS):
                if (table := getattr(run, kind.value)) is not None:
                    validate(table, kind)


def test_integer_past_pythons_digit_limit_is_an_input_error(tmp_path: Path) -> None:
    """Found in review: json.loads raises a plain ValueError for a 5000-digit integer."""
    p = tmp_path / "dlprof_huge_int_synthetic.json"
    p.write_text(
        '{"Kernel Report": [{"Kernel Name": "k", "Total GPU Time (ns)": ' + "9" * 5000 + "}]}"
    )
    with pytest.raises(InputError, match="invalid JSON"):
        dlprof_json.read(p)


def test_byte_order_mark_alone_is_an_empty_file(tmp_path: Path) -> None:
    p = tmp_path / "dlprof_bom_synthetic.json"
    p.write_bytes(b"\xef\xbb\xbf")
    with pytest.raises(InputError, match="empty"):
        dlprof_json._load(p)


@pytest.mark.parametrize("where", ["file", "folder"])
def test_deeply_nested_json_is_one_json_error_not_a_csv_one(tmp_path: Path, where: str) -> None:
    """Found by fuzzing: the CSV sniffer took ``{"Summary Report": [[[...`` for a CSV title and
    the CSV parser answered "field larger than field limit"."""
    from tcreport import api

    f = tmp_path / "dlprof_summary.json"
    f.write_text('{"Summary Report": ' + "[" * 200_000 + "]" * 200_000 + "}")
    with pytest.raises(InputError) as info:
        api.load(f if where == "file" else tmp_path)
    msg = str(info.value)
    assert "nested too deeply" in msg and "field limit" not in msg and "\n" not in msg
