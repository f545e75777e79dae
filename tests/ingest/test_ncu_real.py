"""Real Nsight Compute output (H200, ncu 2025.3.1): the reader and the counter verdict.

``sample_traces/h200-torch-cnn-ncu`` holds ncu CSVs of programs whose Tensor Core use is known:
``mix.py`` by construction, the example CNN from the tensor-path operation counts. The oracle is
``make/ground_truth.py``'s definition, recomputed here with the standard library: a launch used
the Tensor Cores when its ``sm__ops_path_tensor_src_*.sum`` columns add up above 0.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from trace_paths import H200_NCU

from tcreport import api
from tcreport.errors import InputError
from tcreport.ingest import detect
from tcreport.ingest.common import counters
from tcreport.ingest.ncu import reader as ncu_csv
from tcreport.model import SourceFormat

NCU = H200_NCU / "ncu"
PIPE = "sm__inst_executed_pipe_tensor"
HFMA2 = "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2"
DECIDING = ["ncu3_mix.csv", "ncu3_cnn_fp32.csv", "ncu3_cnn_fp16.csv", "ncu3_cnn_bf16fixed.csv"]
#: file -> (profiled launches, launches that used the Tensor Cores), from GROUND_TRUTH.md
SHAPES = {
    "ncu3_mix.csv": (56, 14),
    "ncu3_cnn_fp32.csv": (144, 9),
    "ncu3_cnn_fp16.csv": (198, 30),
    "ncu3_cnn_bf16fixed.csv": (300, 109),
    "ncu3_cnn_fp16_mangled.csv": (198, 0),
    "ncu3_cnn_fp16_function.csv": (198, 0),
    "ncu_details_mix_h.csv": (56, 14),
}


def _oracle(path: Path) -> list[bool]:
    """Per launch in ncu's ID order: tensor-path operations above 0."""
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if not ln.startswith("==")]
    head, _units, *rows = csv.reader(lines)
    out = {}
    for r in rows:
        d = dict(zip(head, r, strict=True))
        ops = sum(
            float(v.replace(",", ""))
            for k, v in d.items()
            if k.startswith("sm__ops_path_tensor_src_") and k.endswith(".sum")
        )
        out[int(d["ID"])] = ops > 0
    return [out[i] for i in sorted(out)]


def _launch_metrics(path: Path) -> list[dict[str, tuple[str, str]]]:
    header, rows = ncu_csv._table(path)
    return [x.metrics for x in ncu_csv._order(ncu_csv._wide(header, rows, path))]


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_every_real_csv_reads(name: str) -> None:
    path = NCU / name
    assert detect(path) is SourceFormat.NCU_CSV
    run = api.load(path)
    k = run.kernels
    assert k is not None
    launches, tc = SHAPES[name]
    assert k.num_rows == launches
    assert k.column("counter_uses_tc").to_pylist().count(True) == tc
    assert k.column("duration_ns").null_count == 0 and min(k.column("duration_ns").to_pylist()) > 0
    assert run.meta.gpus[0].compute_capability == "9.0"
    assert "127.0.0.1" not in run.meta.to_json()  # the host column is never kept


@pytest.mark.parametrize("name", DECIDING)
def test_counter_verdict_is_the_ground_truth_on_every_launch(name: str) -> None:
    k = ncu_csv.read(NCU / name).kernels
    assert k is not None
    assert k.column("counter_uses_tc").to_pylist() == _oracle(NCU / name)


@pytest.mark.parametrize("name", DECIDING)
def test_pipe_minus_hfma2_decides_alone_without_tensor_path_ops(name: str) -> None:
    """Branch 2: with the ``sm__ops_path_tensor_*`` columns removed, tensor-pipe instructions
    minus HFMA2.MMA give the same verdict on every launch; with neither, a bare count is none."""
    truth = _oracle(NCU / name)
    no_ops, bare = [], []
    for m in _launch_metrics(NCU / name):
        kept = {k: v for k, v in m.items() if "ops_path_tensor" not in k}
        no_ops.append(ncu_csv.tensor_verdict(kept))
        only_pipe = {k: v for k, v in kept.items() if k == "sm__inst_executed_pipe_tensor.sum"}
        bare.append(ncu_csv.tensor_evidence(only_pipe))
    assert no_ops == truth
    moves = [e for e, t in zip(bare, truth, strict=True) if not t]
    assert counters.TensorEvidence.UNDECIDED in moves  # a real non-MMA kernel with a pipe count


def test_hfma2_moves_are_the_whole_pipe_count_of_non_matrix_kernels() -> None:
    """The finding behind the rule: elementwise, reduction and FFMA kernels run tensor-pipe
    instructions, all of them HFMA2.MMA, and no tensor-path operation."""
    seen = 0
    for name in DECIDING:
        for m, tc in zip(_launch_metrics(NCU / name), _oracle(NCU / name), strict=True):
            pipe = ncu_csv.number(m["sm__inst_executed_pipe_tensor.sum"][1]) or 0
            hfma2 = ncu_csv.number(m["sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum"][1])
            if not tc:
                assert pipe == hfma2
                seen += pipe > 0
            else:
                assert pipe > (hfma2 or 0)
    assert seen >= 100


def test_details_page_without_deciding_metrics_leaves_moves_unknown() -> None:
    """``ncu_details_mix_h.csv`` has the tensor-pipe family but neither HFMA2.MMA nor tensor-path
    ops: GMMA/IMMA/DMMA decide yes (branch 3), all-zero decides no, a bare count is unknown."""
    run = ncu_csv.read(NCU / "ncu_details_mix_h.csv")
    k = run.kernels
    assert k is not None
    pairs = list(
        zip(k.column("long_name").to_pylist(), k.column("counter_uses_tc").to_pylist(), strict=True)
    )
    verdicts = [v for _, v in pairs]
    assert (verdicts.count(True), verdicts.count(False), verdicts.count(None)) == (14, 26, 16)
    expect = {
        "nvjet_sm90": True,  # GMMA
        "sm90_xmma_gemm_f64": True,  # DMMA
        "wmma_tensorop_i16": True,  # IMMA
        "softmax_warp_forward": None,  # HFMA2.MMA moves without the count that says so
        "_ffma_": None,
        "CUDAFunctor_add": False,  # every tensor counter 0
    }
    for part, want in expect.items():
        got = {v for name, v in pairs if part in name}
        assert got == {want}, part
    note = next(n for n in run.meta.notes if "no verdict" in n)
    assert note.startswith("16 of 56 profiled launches")
    assert "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum" in note


def test_cycle_noise_is_no_verdict() -> None:
    """The MMA-type cycle metric is above 0 on some non-matrix launches (noise) while their
    tensor-path ops are 0: alone it would be undecided, never a yes."""
    cyc = "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.sum"
    noisy = 0
    for m, tc in zip(
        _launch_metrics(NCU / "ncu3_cnn_bf16fixed.csv"),
        _oracle(NCU / "ncu3_cnn_bf16fixed.csv"),
        strict=True,
    ):
        if not tc and (ncu_csv.number(m[cyc][1]) or 0) > 0:
            noisy += 1
            assert ncu_csv.tensor_verdict({cyc: m[cyc]}) is None
    assert noisy > 0


@pytest.mark.parametrize(
    ("metrics", "evidence"),
    [
        ({"sm__ops_path_tensor_src_fp64.sum": 5.0}, "matrix"),
        ({"smsp__inst_executed_pipe_tensor_op_dmma.sum": 2.0}, "matrix"),
        ({"sm__inst_executed_pipe_tensor.sum": 9.0}, "undecided"),
        (
            {"sm__inst_executed_pipe_tensor.sum": 0.0, "sm__pipe_tensor_cycles_active.sum": 0.0},
            "none",
        ),
        (
            {"sm__inst_executed_pipe_tensor.sum": 9.0, "sm__ops_path_tensor_src_fp16.sum": 0.0},
            "none",
        ),
        (
            {
                "sm__inst_executed_pipe_tensor.sum": 9.0,
                "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum": 9.0,
            },
            "none",
        ),
        (
            {
                "sm__inst_executed_pipe_tensor_op_hmma.sum": 9.0,
                "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.avg": 1.0,
                "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum": 4.0,
            },
            "matrix",
        ),
        (
            {"sm__pipe_tensor_cycles_active.min": -8.0, "sm__pipe_tensor_cycles_active.sum": 0.0},
            "none",
        ),
        ({"dram__bytes_read.sum": 3.0}, "unmeasured"),
        ({"sm__inst_executed_pipe_tensor.sum": None}, "unmeasured"),
        # counts of one rollup are subtracted, never a total and a mean (hostile4)
        ({f"{PIPE}.avg": 0.5, f"{HFMA2}.avg": 0.25, f"{HFMA2}.sum": None}, "matrix"),
        ({f"{PIPE}.avg": 0.03, f"{HFMA2}.avg": 0.03, f"{PIPE}.sum": 4.0}, "none"),
        ({f"sm__{PIPE[4:]}.avg": 0.5, f"smsp__{HFMA2[4:]}.avg": 0.1}, "undecided"),
        ({f"sm__{PIPE[4:]}.sum": 4.0, f"smsp__{HFMA2[4:]}.sum": 4.0}, "none"),
        ({f"{PIPE}.max": 4.0, f"{HFMA2}.max": 2.0}, "undecided"),
        # rates, percentages and damaged values are no counts
        ({"sm__ops_path_tensor_src_fp16.sum.per_second": 1e9}, "unmeasured"),
        ({"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": 80.0}, "unmeasured"),
        ({"sm__ops_path_tensor_src_fp16.sum": -3.0}, "unmeasured"),
        ({"sm__ops_path_tensor_src_fp16.sum": float("inf")}, "unmeasured"),
        ({f"{PIPE}.sum": float("nan"), f"{HFMA2}.sum": 4.0}, "undecided"),
        ({f"{PIPE}.sum": -1.0, f"{PIPE}.avg": 0.5, f"{HFMA2}.avg": 0.5}, "none"),
    ],
)
def test_evidence_rules(metrics: dict[str, float | None], evidence: str) -> None:
    assert counters.tensor_evidence(metrics.items()) == evidence


@pytest.mark.parametrize("damage", ["n/a", "-1", "", "inf"])
def test_a_damaged_hfma2_total_leaves_the_real_verdicts_as_they_are(
    tmp_path: Path, damage: str
) -> None:
    """hostile4: with the HFMA2.MMA total of every launch missing or damaged, the verdict falls
    back to the means (pipe mean minus HFMA2 mean, both per SM), never to a total minus a mean,
    which made every elementwise fp16 kernel "matrix math" (TC share 32 % -> 63 %)."""
    src = NCU / "ncu3_cnn_fp16.csv"
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    head, units, *rows = csv.reader(lines[start:])
    j = head.index(f"{HFMA2}.sum")
    for r in rows:
        r[j] = damage
    out = tmp_path / "damaged.csv"
    with out.open("w", encoding="utf-8", newline="") as fh:
        fh.writelines(lines[:start])
        csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows([head, units, *rows])
    k = ncu_csv.read(out).kernels
    assert k is not None
    assert k.column("counter_uses_tc").to_pylist() == _oracle(src)


@pytest.mark.parametrize(
    "texts",
    [
        ["1,205.00", " 3 ", "0", "1e5", ".5", "5.", "-2", "+1", "1,2,3"],
        ["1", "1e999", "-1e999", "2"],
        ["n/a", "", "-", "nan", "inf", "-inf", "abc", "1_000", "12.5", "0x10", "1,205.00"],
    ],
)
def test_a_column_of_values_parses_as_each_value_does(texts: list[str]) -> None:
    """The ``raw`` page parses a metric column at once; every value as :func:`number` would."""
    got = ncu_csv._numbers(texts).tolist()
    want = [ncu_csv.number(t) for t in texts]
    assert [None if g != g else g for g in got] == want


@pytest.mark.parametrize("name", DECIDING)
def test_the_column_evidence_is_each_launchs_evidence(name: str) -> None:
    """The table-wide evidence of the ``raw`` page equals the per-launch evidence of its metrics,
    with the deciding columns and without them."""
    launches = ncu_csv._order(ncu_csv._wide(*ncu_csv._table(NCU / name), NCU / name))
    assert [x.evidence for x in launches] == [ncu_csv.tensor_evidence(x.metrics) for x in launches]
    columns = [
        (k, [ncu_csv.number(x.metrics[k][1]) for x in launches])
        for k in launches[0].metrics
        if "ops_path" not in k and "hfma2" not in k
    ]
    bare = counters.evidence_columns(columns, len(launches))
    assert bare == [
        counters.tensor_evidence((k, col[i]) for k, col in columns) for i in range(len(launches))
    ]
    assert counters.TensorEvidence.UNDECIDED in bare


def _joined(tmp_path: Path, *parts: str) -> Path:
    out = tmp_path / "joined.csv"
    out.write_text("".join(parts), encoding="utf-8")
    return out


def _names(path: Path) -> list[str]:
    k = ncu_csv.read(path).kernels
    assert k is not None
    return [str(n) for n in k.column("long_name").to_pylist()]


@pytest.mark.parametrize("second", ["ncu3_cnn_fp16.csv", "ncu3_cnn_bf16fixed.csv"])
def test_two_raw_csvs_joined_by_cat_read_as_both(tmp_path: Path, second: str) -> None:
    """hostile4: ``cat a.csv b.csv`` made the second header a kernel named "Kernel Name" and the
    second units row an unnamed launch. Both are skipped; the launches are both files'."""
    a, b = (NCU / n for n in ("ncu3_cnn_fp16.csv", second))
    joined = _joined(tmp_path, a.read_text(encoding="utf-8"), b.read_text(encoding="utf-8"))
    names = _names(joined)
    assert len(names) == len(_names(a)) + len(_names(b))
    assert "Kernel Name" not in names and "(unnamed)" not in names
    assert sorted(names) == sorted(_names(a) + _names(b))


def test_a_repeated_units_row_is_no_launch(tmp_path: Path) -> None:
    lines = (NCU / "ncu3_cnn_fp16.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    units = lines[start + 1]
    joined = _joined(tmp_path, *lines[: start + 10], units, *lines[start + 10 :])
    assert _names(joined) == _names(NCU / "ncu3_cnn_fp16.csv")


def test_a_second_units_row_with_other_units_is_refused(tmp_path: Path) -> None:
    lines = (NCU / "ncu3_cnn_fp16.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    units = lines[start + 1].replace('"ns"', '"us"', 1)
    assert units != lines[start + 1]
    joined = _joined(tmp_path, *lines[: start + 10], units, *lines[start + 10 :])
    with pytest.raises(InputError, match=r"joined\.csv: line \d+: a second units row"):
        ncu_csv.read(joined)


def test_a_second_header_with_other_columns_is_refused(tmp_path: Path) -> None:
    joined = _joined(
        tmp_path,
        (NCU / "ncu3_cnn_fp16.csv").read_text(encoding="utf-8"),
        (NCU / "ncu_details_mix_h.csv").read_text(encoding="utf-8"),
    )
    with pytest.raises(InputError, match=r"line \d+: a second CSV header with other columns"):
        ncu_csv.read(joined)


@pytest.mark.parametrize("page", ["ncu3_cnn_fp16.csv", "ncu_details_mix_h.csv"])
def test_a_column_named_twice_is_refused(tmp_path: Path, page: str) -> None:
    """hostile4: two columns of one name silently kept the last one's values."""
    lines = (NCU / page).read_text(encoding="utf-8").splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    rows = list(csv.reader(lines[start:]))
    j = rows[0].index("Kernel Name") + 1  # duplicate the column after the kernel name
    rows = [r[:j] + [r[j]] + r[j:] for r in rows]
    out = tmp_path / "twice.csv"
    with out.open("w", encoding="utf-8", newline="") as fh:
        fh.writelines(lines[:start])
        csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    with pytest.raises(InputError, match=r"twice\.csv: column 'Context' appears twice"):
        ncu_csv.read(out)
