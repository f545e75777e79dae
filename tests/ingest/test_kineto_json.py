"""The PyTorch profiler (Kineto) JSON reader against three real traces (H100 torch 2.6, A100 with
``deviceProperties``, the 2021 legacy V100 format) and a synthetic trace for what they lack.

Every count and total is recomputed here from the raw JSON, independently of the reader, so a
reader that drops or double-counts events fails."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import budget
from trace_paths import real_or_bundled

from tcreport import api
from tcreport.errors import InputError
from tcreport.ingest import detect
from tcreport.ingest.kineto import links
from tcreport.ingest.kineto import reader as kineto_json
from tcreport.model import Granularity, IterationMethod, Run, SourceFormat
from tcreport.schema import MemoryKind, TableKind, validate

ROOT = Path(__file__).resolve().parents[2]
KINETO = (
    Path(os.environ.get("TCREPORT_REALTRACES", ROOT.parent / "shared" / "realtraces")) / "kineto"
)
H100 = KINETO / "h100-bf16-bert-small" / "gaunernst_bert-small-uncased__1016001.redacted.json.gz"
A100 = real_or_bundled(  # bundled in sample_traces/ too
    "kineto/a100-tf32-alexnet/benchmark_result_2869224_1695835535_trace.json.gz"
)
V100 = KINETO / "v100-legacy-resnet50" / "worker0.1623143089861.pt.trace.json.gz"
SYNTHETIC = Path(__file__).parents[1] / "fixtures" / "kineto_edge_cases_synthetic.json"

KERNEL_CATS = {"kernel", "Kernel"}
MEMORY_CATS = {"gpu_memcpy", "gpu_memset", "Memcpy", "Memset"}
OP_CATS = {"cpu_op", "Operator"}
#: Lower bounds on the share of kernel time attributed to an op (measured: 1.0 for all three; the
#: A100 trace only by time nesting, its External ids being correlation numbers).
MIN_ATTRIBUTED = {H100: 0.99, A100: 0.99, V100: 0.99}
GPU = {
    H100: ("NVIDIA H100 80GB HBM3", "9.0", 132),
    A100: ("NVIDIA A100-PG509-200", "8.0", 108),
    V100: ("Tesla V100-DGXS-32GB", "7.0", 80),
}

_runs: dict[Path, Run] = {}


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"real trace not available: {path}")
    return path


def _read(path: Path) -> Run:
    if path not in _runs:
        _runs[path] = kineto_json.read(need(path))
    return _runs[path]


def _raw(path: Path) -> dict[str, Any]:
    with gzip.open(need(path), "rt", encoding="utf-8") as fh:
        doc: dict[str, Any] = json.load(fh)
    return doc


def _complete(doc: dict[str, Any], cats: set[str]) -> list[dict[str, Any]]:
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") in cats]


REAL = [pytest.param(p, id=p.parent.name) for p in (H100, A100, V100)]


# ----------------------------------------------------------------------------- real traces


@pytest.mark.realtraces
@pytest.mark.parametrize("path", REAL)
def test_real_trace_is_sniffed_and_detected(path: Path) -> None:
    assert kineto_json.sniff(need(path))
    assert detect(path) is SourceFormat.KINETO_JSON


@pytest.mark.realtraces
@pytest.mark.parametrize("path", REAL)
def test_tables_are_canonical(path: Path) -> None:
    run = _read(path)
    for kind in TableKind:
        table = getattr(run, kind.value)
        if table is not None:
            validate(table, kind)
    assert run.meta.kernel_granularity is Granularity.LAUNCH
    assert run.meta.op_granularity is Granularity.LAUNCH
    assert run.meta.profiler == "PyTorch Profiler (Kineto)"
    assert run.meta.files == (path.name,)


@pytest.mark.realtraces
@pytest.mark.parametrize("path", REAL)
def test_counts_and_kernel_time_match_the_raw_events(path: Path) -> None:
    doc, run = _raw(path), _read(path)
    kernels = _complete(doc, KERNEL_CATS)
    memory = _complete(doc, MEMORY_CATS)
    ops = [e for e in _complete(doc, OP_CATS) if not e["name"].startswith("ProfilerStep#")]
    assert run.kernels is not None and run.memory is not None and run.ops is not None
    assert run.kernels.num_rows == len(kernels)
    assert run.memory.num_rows == len(memory)
    assert run.ops.num_rows == len(ops)
    assert pc.sum(run.kernels["duration_ns"]).as_py() == sum(
        round(e["dur"] * 1000) for e in kernels
    )
    assert pc.sum(run.memory["duration_ns"]).as_py() == sum(round(e["dur"] * 1000) for e in memory)
    # every kernel is launched by exactly one runtime call, found through its correlation id
    assert run.kernels["launch_ns"].null_count == 0
    assert pc.all(pc.less_equal(run.kernels["launch_ns"], run.kernels["start_ns"])).as_py()
    by_kind = Counter(run.memory["kind"].to_pylist())
    raw_kind = Counter(
        "memset" if "set" in e["cat"].lower() else "memcpy " + e["name"].split()[1] for e in memory
    )
    assert by_kind == raw_kind


@pytest.mark.realtraces
@pytest.mark.parametrize("path", REAL)
def test_kernel_time_is_attributed_to_innermost_ops(path: Path) -> None:
    run = _read(path)
    assert run.kernels is not None and run.ops is not None
    total = pc.sum(run.kernels["duration_ns"]).as_py()
    attributed = run.kernels.filter(pc.is_valid(run.kernels["op_id"]))
    share = pc.sum(attributed["duration_ns"]).as_py() / total
    print(f"{path.parent.name}: {share:.1%} of kernel time attributed to an op")
    assert share >= MIN_ATTRIBUTED[path]
    # innermost only: op GPU time adds up to the attributed kernel time, no double counting
    assert pc.sum(run.ops["gpu_ns"]).as_py() == pc.sum(attributed["duration_ns"]).as_py()
    assert pc.sum(run.ops["kernel_calls"]).as_py() == attributed.num_rows
    assert set(attributed["op_id"].to_pylist()) <= set(run.ops["op_id"].to_pylist())
    assert len(set(run.ops["op_id"].to_pylist())) == run.ops.num_rows


@pytest.mark.realtraces
@pytest.mark.parametrize("path", REAL)
def test_gpu_from_device_properties(path: Path) -> None:
    name, cc, sms = GPU[path]
    gpus = _read(path).meta.gpus
    assert [(g.device_id, g.name, g.compute_capability, g.sm_count) for g in gpus] == [
        (0, name, cc, sms)
    ]


@pytest.mark.realtraces
def test_h100_modern_trace() -> None:
    run = _read(H100)
    assert run.meta.framework == "PyTorch 2.6.0+cu124"
    assert run.meta.cuda_version == "12.4"
    assert run.meta.iterations.method is IterationMethod.PROFILER_STEP
    assert (run.meta.iterations.total, run.meta.iterations.start, run.meta.iterations.stop) == (
        1,
        6,
        6,
    )
    assert run.iterations is not None and run.iterations["iteration"].to_pylist() == [6]
    assert run.kernels is not None and set(run.kernels["iteration"].to_pylist()) == {6}
    assert run.ops is not None
    addmm = run.ops.filter(
        pc.and_(pc.equal(run.ops["name"], "aten::addmm"), pc.greater(run.ops["gpu_ns"], 0))
    )
    assert addmm.num_rows > 0
    assert set(addmm["type"].to_pylist()) == {"addmm"}
    assert set(addmm["dtype"].to_pylist()) == {"bfloat16"}
    assert all(
        s and s.startswith("BertLMHeadModel_0/") and "/Linear_" in s
        for s in addmm["scope"].to_pylist()
    )
    assert json.loads(addmm["input_shapes"][0].as_py())[1] == [141, 512]
    # ts are microseconds with three decimals relative to baseTimeNanoseconds: exact ns survive
    raw = _complete(_raw(H100), KERNEL_CATS)[0]
    assert run.kernels["start_ns"][0].as_py() == 1751410836000000000 + round(raw["ts"] * 1000)


@pytest.mark.realtraces
def test_h100_token_in_metadata_never_reaches_the_run() -> None:
    with gzip.open(need(H100), "rb") as fh:
        assert b"hf_REDACTED" in fh.read()  # the environment is in the trace...
    run = _read(H100)
    assert "hf_REDACTED" not in run.meta.to_json()  # ...and nowhere in what tcreport keeps
    assert "HF_TOKEN" not in run.meta.to_json()
    for kind in TableKind:
        table = getattr(run, kind.value)
        if table is not None:
            assert "hf_REDACTED" not in str(table.to_pydict())


@pytest.mark.realtraces
def test_a100_external_ids_that_are_correlations_fall_back_to_nesting() -> None:
    run = _read(A100)
    assert any("time nesting" in n for n in run.meta.notes)
    assert run.iterations is None and run.meta.iterations.method is IterationMethod.WHOLE_RUN
    assert run.ranges is not None and run.ranges.num_rows == 8
    assert run.kernels is not None and run.ops is not None
    names = dict(zip(run.ops["op_id"].to_pylist(), run.ops["name"].to_pylist(), strict=True))
    owner = Counter(
        (names[o], "xmma_fprop" in n, "sgemm" in n)
        for n, o in zip(
            run.kernels["name"].to_pylist(), run.kernels["op_id"].to_pylist(), strict=True
        )
    )
    assert owner[("aten::cudnn_convolution", True, False)] == 6  # TF32 implicit-GEMM convolutions
    assert owner[("aten::addmm", False, True)] == 6


@pytest.mark.realtraces
def test_the_nesting_note_counts_kernels_apart_from_copies() -> None:
    """The note's count beside the report's "79 launches" (kernel launches) names its kinds: a
    bare "98 GPU launches" read as a second, disagreeing count of the same thing."""
    run = _read(A100)
    assert run.kernels is not None and run.memory is not None
    kernels, copies = run.kernels.num_rows, run.memory.num_rows
    assert (kernels, copies) == (79, 19)  # every one attributed by nesting
    (note,) = (n for n in run.meta.notes if "time nesting" in n)
    assert note.startswith(
        f"{kernels + copies} GPU activities ({kernels} kernel launches and {copies} memory "
        "copies/sets) attributed to ops by time nesting"
    )
    view = api.analyze(run)
    assert view.analysis.time.kernel_launches == kernels


@pytest.mark.parametrize(
    ("nested", "words"),
    [
        ([0], "1 GPU activity (1 kernel launch)"),
        ([3], "1 GPU activity (1 memory copy/set)"),
        ([0, 1, 2, 3], "4 GPU activities (2 kernel launches and 2 memory copies/sets)"),
    ],
)
def test_nesting_note_words(nested: list[int], words: str) -> None:
    note = links.nesting_note(np.array(nested, np.int64), kernels=2 if len(nested) > 1 else 1)
    assert note == f"{words} attributed to ops by time nesting (External ids did not match)"


@pytest.mark.realtraces
def test_v100_legacy_format() -> None:
    run = _read(V100)
    assert any("2021 legacy" in n for n in run.meta.notes)
    assert run.iterations is not None and run.iterations["iteration"].to_pylist() == [
        5,
        6,
        7,
        8,
        9,
        10,
    ]
    assert run.meta.iterations.total == 6
    assert run.kernels is not None
    assert Counter(run.kernels["iteration"].to_pylist()) == dict.fromkeys(range(5, 11), 1462)
    assert run.ops is not None
    assert set(run.ops["thread_id"].to_pylist()) == {25738, 25772}  # "tid": "25772" strings
    assert set(run.kernels["stream_id"].to_pylist()) == {7}
    conv = run.ops.filter(pc.equal(run.ops["name"], "aten::cudnn_convolution"))
    assert set(conv["dtype"].to_pylist()) == {"float32"}
    assert run.ranges is not None and run.ranges["name"].to_pylist()[0] == "ProfilerStep#5"


# ----------------------------------------------------------------------------- synthetic edge cases


def test_synthetic_edge_cases() -> None:
    run = kineto_json.read(SYNTHETIC)
    assert run.kernels is not None and run.ops is not None and run.memory is not None
    k = {r["name"]: r for r in run.kernels.to_pylist()}
    gemm = k["sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_synthetic"]
    assert gemm["duration_ns"] == 1005  # 1.005 us: truncating 1.005 * 1000 would give 1004
    assert gemm["launch_ns"] == 125313
    assert (gemm["grid_x"], gemm["grid_y"], gemm["block_x"]) == (4, 2, 128)
    ops = {r["op_id"]: r for r in run.ops.to_pylist()}
    # two ops share External id 5: ids stay unique and the kernel goes to the innermost (addmm)
    assert (ops["5"]["name"], ops["5#1"]["name"]) == ("aten::linear", "aten::addmm")
    assert gemm["op_id"] == "5#1" and ops["5#1"]["gpu_ns"] == 1005 and ops["5"]["gpu_ns"] == 0
    assert ops["5#1"]["scope"] == "Outer_0/Linear_0"
    assert ops["6"]["dtype"] == "float32"  # "float" is a tensor, "double" comes after it
    assert k["no_runtime_kernel_synthetic"]["op_id"] == "6"  # its own External id, no runtime
    assert k["no_runtime_kernel_synthetic"]["grid_x"] is None  # "grid": [1, 2]
    assert k["annotation_only_kernel_synthetic"]["op_id"] is None  # launched inside a range, no op
    assert k["orphan_kernel_synthetic"]["launch_ns"] is None
    assert (
        k["boundary_kernel_synthetic"]["iteration"] == 4
    )  # launched where step 3 ends, step 4 starts
    assert k["bad_device_synthetic"]["device_id"] is None
    assert run.ranges is not None and run.ranges["depth"].to_pylist() == [0, 0, 1]
    kinds = dict(zip(run.memory["name"].to_pylist(), run.memory["kind"].to_pylist(), strict=True))
    assert kinds == {
        "Memcpy DtoD (Device -> Device)": MemoryKind.DTOD,
        "Memcpy PtoP (Device -> Device)": MemoryKind.PEER,
        "Memcpy Strange": MemoryKind.MEMCPY_OTHER,
        "Memset (Device)": MemoryKind.MEMSET,
    }
    assert run.memory["op_id"].to_pylist()[0] == "7"
    assert [g.device_id for g in run.meta.gpus] == [0]  # device 1 is listed but ran nothing
    assert run.meta.gpus[0].compute_capability == "8.6"
    assert any("7 malformed events skipped" in n for n in run.meta.notes)
    assert "SYNTHETIC_SECRET" not in run.meta.to_json()
    assert "SYNTHETIC.host" not in run.meta.to_json()


# ----------------------------------------------------------------------------- the two parsers

needs_msgspec = pytest.mark.skipif(
    kineto_json.fast is None, reason="msgspec (the [fast] extra) is not installed"
)


def _same(a: Run, b: Run) -> None:
    assert a.meta == b.meta
    for kind in TableKind:
        ta, tb = getattr(a, kind.value), getattr(b, kind.value)
        assert (ta is None) == (tb is None), kind
        if ta is not None:
            assert ta.equals(tb, check_metadata=True), kind


def _outcome(path: Path, use_msgspec: bool) -> Run | str:
    try:
        return kineto_json.read_with(path, use_msgspec=use_msgspec)
    except InputError as exc:
        return exc.reason


def _same_outcome(path: Path) -> None:
    fast, slow = _outcome(path, True), _outcome(path, False)
    if isinstance(fast, Run) and isinstance(slow, Run):
        _same(fast, slow)
    else:
        assert fast == slow


@needs_msgspec
@pytest.mark.realtraces
@pytest.mark.parametrize("path", REAL)
def test_parsers_agree_on_real_traces(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert kineto_json.fast.parse(need(path)).parser == "msgspec"  # no fallback to json
    slow = kineto_json.read_with(path, use_msgspec=False)
    _same(kineto_json.read_with(path, use_msgspec=True), slow)
    if path.stat().st_size < 1 << 20:  # and cut into many pieces (V100 makes 17 by itself)
        monkeypatch.setattr(kineto_json.fast, "PIECE", 4096)
        _same(kineto_json.read_with(path, use_msgspec=True), slow)


def _synthetic() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(SYNTHETIC.read_text())
    return doc


def _events_first(doc: dict[str, Any]) -> str:
    """traceEvents first, the pretty-printed deviceProperties list of objects after it."""
    rest = {k: v for k, v in doc.items() if k != "traceEvents"}
    return json.dumps({"traceEvents": doc["traceEvents"], **rest}, indent=1)


def _one_per_line(doc: dict[str, Any]) -> str:
    """Kineto's own layout: one event per line."""
    head = json.dumps({k: v for k, v in doc.items() if k != "traceEvents"})[:-1]
    lines = ",\n  ".join(json.dumps(e) for e in doc["traceEvents"])
    return f'{head}, "traceEvents": [\n  {lines}\n], "baseTimeNanoseconds": 1000}}'


LAYOUTS: dict[str, Callable[[dict[str, Any]], str]] = {
    "pretty": lambda d: json.dumps(d, indent=2),
    "compact": lambda d: json.dumps(d, separators=(",", ":")),
    "one-per-line": _one_per_line,
    "crlf": lambda d: json.dumps(d, indent=2).replace("\n", "\r\n"),
    "bom": lambda d: "\ufeff" + json.dumps(d, indent=2),
    "events-first": _events_first,
    # cut candidates inside events, strings and other top-level values, which must be refused
    "nested-objects": lambda d: json.dumps(
        {
            **d,
            "traceEvents": [
                {**e, "args": {"x": [{"a": "},{"}, {"b": 1}]}}
                for e in d["traceEvents"]
                if isinstance(e, dict)
            ],
        },
        indent=2,
    ),
    "key-in-metadata": lambda d: json.dumps(
        {"metadata": {"traceEvents": [{"a": 1}, {"b": 2}]}, **d}, indent=2
    ),
    "array-after": lambda d: json.dumps({**d, "other": [{"a": 1}, {"b": 2}, {"c": 3}]}, indent=2),
    "duplicate-key": lambda d: (
        json.dumps(d, indent=2)[:-2] + ',\n"traceEvents": [\n{"ph": "X"},\n{"ph": "X"}\n]}'
    ),
    "nan": lambda d: json.dumps(d, indent=2).replace('"dur": 4.0', '"dur": NaN'),
}


@needs_msgspec
@pytest.mark.parametrize("piece", [64, 1 << 20])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_parsers_agree_on_any_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str, piece: int
) -> None:
    monkeypatch.setattr(kineto_json.fast, "PIECE", piece)
    path = _bad(tmp_path, "layout.json", LAYOUTS[layout](_synthetic()).encode())
    _same_outcome(path)
    if layout not in ("duplicate-key", "nan"):  # those two are left to json, on purpose
        assert kineto_json.fast.parse(path).parser == "msgspec"


def test_reader_works_without_msgspec() -> None:
    code = (
        "import sys; sys.modules['msgspec'] = None\n"  # what `import msgspec` does when absent
        "from pathlib import Path\n"
        "from tcreport.ingest.kineto import reader as kineto_json\n"
        "assert kineto_json.fast is None\n"
        f"print(kineto_json.read(Path({str(SYNTHETIC)!r})).kernels.num_rows)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    kernels = kineto_json.read(SYNTHETIC).kernels
    assert kernels is not None
    assert out.stdout.strip() == str(kernels.num_rows)


@needs_msgspec
def test_what_msgspec_reads_differently_goes_to_json(tmp_path: Path) -> None:
    text = json.dumps(_synthetic(), indent=2).replace('"dur": 4.0', '"dur": NaN')
    path = _bad(tmp_path, "nan.json", text.encode())
    with pytest.raises(kineto_json.fast.FastPathError):
        kineto_json.fast.parse(path)
    run = kineto_json.read(path)
    assert any("8 malformed events skipped" in n for n in run.meta.notes)  # NaN duration


# ----------------------------------------------------------------------------- bad input


def _bad(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def _expect_input_error(path: Path, sniffed: bool | None = None) -> InputError:
    if sniffed is not None:
        assert kineto_json.sniff(path) is sniffed
    with pytest.raises(InputError) as info:
        kineto_json.read(path)
    assert "\n" not in info.value.reason and info.value.path == str(path)
    return info.value


def test_empty_file(tmp_path: Path) -> None:
    assert "empty" in _expect_input_error(_bad(tmp_path, "empty.json", b""), sniffed=False).reason


def test_directory_is_not_sniffed(tmp_path: Path) -> None:
    assert kineto_json.sniff(tmp_path) is False


@pytest.mark.realtraces
def test_truncated_gzip(tmp_path: Path) -> None:
    data = need(H100).read_bytes()
    err = _expect_input_error(_bad(tmp_path, "cut.json.gz", data[: len(data) // 2]), sniffed=True)
    assert "truncated" in err.reason


def test_corrupt_gzip(tmp_path: Path) -> None:
    _expect_input_error(
        _bad(tmp_path, "bad.json.gz", b"\x1f\x8b\x08\x00garbage-garbage-garbage"), sniffed=False
    )
    good = gzip.compress(SYNTHETIC.read_bytes())
    flipped = good[:40] + bytes([good[40] ^ 0xFF]) + good[41:]
    _expect_input_error(_bad(tmp_path, "flipped.json.gz", flipped))


def test_truncated_json(tmp_path: Path) -> None:
    data = SYNTHETIC.read_bytes()
    err = _expect_input_error(_bad(tmp_path, "cut.json", data[: len(data) * 2 // 3]), sniffed=True)
    assert "invalid JSON" in err.reason


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b'{"schemaVersion": 1, "events": []}', "traceEvents"),
        (b'{"traceEvents": {"not": "a list"}}', "not a list"),
        (b'[{"traceEvents": []}]', "not an object"),
        (b'{"traceEvents": [{"name": "\xff\xfe"}]}', "UTF-8"),
        (b'{"traceEvents": [{"Call stack": "\xff\xfe"}]}', "UTF-8"),  # a field msgspec skips
        (b'{"traceEvents": [1' + b"0" * 5000 + b"]}", "JSON"),
    ],
    ids=[
        "no-traceEvents",
        "not-a-list",
        "top-level-array",
        "not-utf8",
        "not-utf8-skipped",
        "huge-int",
    ],
)
def test_malformed_documents(tmp_path: Path, data: bytes, needle: str) -> None:
    assert needle in _expect_input_error(_bad(tmp_path, "bad.json", data)).reason


def test_deep_nesting_is_an_input_error_or_a_skipped_event(tmp_path: Path) -> None:
    deep = b'{"traceEvents": [' + b"[" * 200_000 + b"]" * 200_000 + b"]}"
    path = _bad(tmp_path, "deep.json", deep)
    try:
        run = kineto_json.read(path)
    except InputError:
        return
    assert any("1 malformed" in n for n in run.meta.notes)


def test_no_trace_events_is_not_sniffed(tmp_path: Path) -> None:
    assert kineto_json.sniff(_bad(tmp_path, "x.json", b'{"schemaVersion": 1}')) is False
    assert kineto_json.sniff(_bad(tmp_path, "x.csv", b"Kernel Report\nName,Time\n")) is False


def test_empty_trace_reads_as_empty_tables(tmp_path: Path) -> None:
    run = kineto_json.read(_bad(tmp_path, "e.json", b'{"traceEvents": []}'))
    assert run.kernels is not None and run.kernels.num_rows == 0
    assert run.ops is not None and run.ops.num_rows == 0
    assert run.iterations is None and run.meta.iterations.total == 1 and run.meta.gpus == ()


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(["\ud800", "stream 7", "ProfilerStep#2", "nn.Module: M_0", "Memcpy HtoD"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
_FIELDS = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "args"]
_ARGS = [
    "correlation",
    "External id",
    "external id",
    "device",
    "stream",
    "grid",
    "block",
    "bytes",
    "Input type",
    "Input Dims",
]


@settings(
    max_examples=budget(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_mutated_events_never_raise_anything_but_input_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: st.DataObject
) -> None:
    if kineto_json.fast is not None:  # msgspec reads it in pieces of a few events
        monkeypatch.setattr(kineto_json.fast, "PIECE", 256)
    doc = json.loads(SYNTHETIC.read_text())
    events = [e for e in doc["traceEvents"] if isinstance(e, dict)]
    for _ in range(data.draw(st.integers(1, 6))):
        e = events[data.draw(st.integers(0, len(events) - 1))]
        if data.draw(st.booleans()) and isinstance(e.get("args"), dict):
            e["args"][data.draw(st.sampled_from(_ARGS))] = data.draw(_JSON)
        else:
            e[data.draw(st.sampled_from(_FIELDS))] = data.draw(_JSON)
    doc["traceEvents"] = events
    path = _bad(tmp_path, "mutated.json", json.dumps(doc).encode())
    if kineto_json.fast is not None:
        _same_outcome(path)
    try:
        run = kineto_json.read(path)
    except InputError:
        return
    for kind in TableKind:
        table = getattr(run, kind.value)
        if table is not None:
            validate(table, kind)
    json.loads(run.meta.to_json())


@settings(
    max_examples=budget(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(cut=st.integers(0, 10_000), flip=st.integers(0, 10_000), gz=st.booleans())
def test_damaged_bytes_never_raise_anything_but_input_error(
    tmp_path: Path, cut: int, flip: int, gz: bool
) -> None:
    data = bytearray(gzip.compress(SYNTHETIC.read_bytes()) if gz else SYNTHETIC.read_bytes())
    data[flip % len(data)] ^= 0x5A
    path = _bad(tmp_path, "damaged.json", bytes(data[: max(1, len(data) - cut % len(data))]))
    kineto_json.sniff(path)
    if kineto_json.fast is not None:
        _same_outcome(path)
    try:
        run = kineto_json.read(path)
    except InputError:
        return
    assert isinstance(run.kernels, pa.Table)
