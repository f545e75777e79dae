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


def _folder_synthetic(tmp_path: Path) -> Path:
    from synthetic import synthetic_run

    return api.ingest(synthetic_run("fp32"), tmp_path / "run")


def _edit_manifest(folder: Path, edit: dict[str, object]) -> None:
    path = folder / "tcreport-run.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    for dotted, value in edit.items():
        node = manifest
        *parents, last = dotted.split(".")
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[last] = value
    path.write_text(json.dumps(manifest), encoding="utf-8")


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("meta.profiler_version", 7, "expected text or null"),  # was a TypeError in run_header
        ("meta.framework", 3, "expected text or null"),  # was .lower() on an int in why_not
        ("meta.framework", [1], "expected text or null"),
        ("meta.framework", {"a": 1}, "expected text or null"),
        ("meta.profiler", True, "expected text or null"),
        ("meta.format", "pdf", "expected one of"),
        ("meta.path", None, "expected text"),
        ("meta.gpus", "A100", "expected a list"),
        ("meta.gpus", [7], "expected an object"),
        ("meta.gpus.0.device_id", -1, "a whole number from 0"),
        ("meta.gpus.0.sm_count", 1.5, "a whole number or null"),
        ("meta.gpus.0.name", ["x"], "expected text or null"),
        ("meta.iterations.total", -3, "a whole number from 0"),
        ("meta.iterations.mean_ns", float("nan"), "a number from 0"),
        ("meta.reported.gpu_kernel_ns", 2**63, "a whole number from 0"),
        ("meta.reported.gpu_utilization", 1.5, "a number from 0 to 1"),
        ("meta.settings.amp_enabled", "yes", "true, false or null"),
        ("meta.notes", "one note", "expected a list"),
        ("meta.notes", [1], "expected text"),
        ("meta.kernel_granularity", 1, "expected one of"),
        ("meta.started_at", "yesterday", "an ISO 8601 time"),
        ("meta.source_findings", [{"id": 1}], "expected text"),
        ("meta", [], "expected an object"),
    ],
)
def test_a_manifest_field_of_the_wrong_type_or_range_is_one_input_error_synthetic(
    tmp_path: Path, field: str, value: object, says: str
) -> None:
    """Every meta field is checked against its declared type and range before a RunMeta is
    built: one line naming the manifest, the field and the value, exit 2, never a traceback."""
    folder = _folder_synthetic(tmp_path)
    if field == "meta.gpus.0.device_id" or field.startswith("meta.gpus.0."):
        _edit_manifest(folder, {"meta.gpus": [{"device_id": 0, "name": "A100"}]})
    _edit_manifest(folder, {field: value})
    with pytest.raises(InputError) as info:
        api.load(folder)
    msg = str(info.value)
    assert "tcreport-run.json: " + field.replace(".0.", "[0].") in msg, msg
    assert says in msg and "\n" not in msg and info.value.exit_code == 2


def test_a_manifest_with_sound_fields_of_every_kind_reads_synthetic(tmp_path: Path) -> None:
    folder = _folder_synthetic(tmp_path)
    _edit_manifest(
        folder,
        {
            "meta.framework": "PyTorch 2.3",
            "meta.gpus": [{"device_id": 0, "name": "A100", "sm_count": 108}],
            "meta.reported.gpu_utilization": 0.5,
            "meta.iterations.mean_ns": 12,  # an int where a number is declared is fine
            "meta.started_at": "2024-05-01T12:00:00Z",
            "meta.written_by_a_newer_tcreport": {"x": 1},  # not read
        },
    )
    meta = api.load(folder).meta
    assert meta.framework == "PyTorch 2.3" and meta.gpus[0].sm_count == 108
    assert meta.iterations.mean_ns == 12.0 and meta.reported.gpu_utilization == 0.5


def test_a_run_with_a_model_audit_reads_back_from_its_ingest_folder(tmp_path: Path) -> None:
    """A newcomer ingested the H200 CNN run (``profile --backend torch`` output, whose
    ``tcreport-capture.json`` holds the model audit) and could not read the folder back: the
    layers' ``dims`` are ``tuple[tuple[str, int], ...]`` and the manifest checked every pair's
    number against the first type, text. The round trip gives the same audit and report."""
    from trace_paths import H200_NCU

    run = api.load(H200_NCU / "cnn_fp16")
    assert run.meta.audit is not None and run.meta.audit.layers
    assert any(d for layer in run.meta.audit.layers for d in layer.dims)
    back = api.load(api.ingest(run, tmp_path / "ing16"))
    assert back.meta.audit == run.meta.audit
    assert api.render_json(api.analyze(back)) == api.render_json(api.analyze(run))


@pytest.mark.parametrize("dims", [[["C", 3, 4]], [["C"]], [[3, "C"]]])
def test_a_damaged_dims_pair_is_an_input_error_synthetic(tmp_path: Path, dims: object) -> None:
    from trace_paths import H200_NCU

    out = api.ingest(api.load(H200_NCU / "cnn_fp16"), tmp_path / "run")
    _edit_manifest(out, {"meta.audit.layers.0.dims": dims})
    with pytest.raises(InputError) as info:
        api.load(out)
    assert "meta.audit.layers[0].dims[0]" in str(info.value) and "\n" not in str(info.value)
