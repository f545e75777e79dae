"""Counter evidence: the override in classify_kernels, merging ncu runs into traces, disagreements."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import budget
from synthetic import run_meta
from trace_paths import REALTRACES, ROOT

from tcreport import api, schema
from tcreport.analysis import counters
from tcreport.analysis import tc_kernels as tk
from tcreport.errors import InputError
from tcreport.ingest.ncu import reader as ncu_csv
from tcreport.model import Gpu, Granularity, IterationInfo, Run, SourceFormat

K = schema.TableKind.KERNELS
RAW = ROOT / "tests" / "fixtures" / "ncu_synthetic" / "ncu_raw_synthetic.csv"
V100 = REALTRACES / "kineto" / "v100-legacy-resnet50" / "worker0.1623143089861.pt.trace.json.gz"
HMMA = (
    "void cudnn::detail::hmma_fprop_kernel<float, 128, 6, 7, 3, 3, 5, true>"
    "(cudnn::detail::Params, float const*, float*)"
)
FILL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
    "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"
)


def table(names: list[str], **cols: Sequence[object]) -> pa.Table:
    n = len(names)
    data: dict[str, object] = {"name": names, "calls": [1] * n}
    data["duration_ns"] = cols.pop("duration_ns", [10] * n)
    for key in ("counter_uses_tc", "profiler_uses_tc"):
        if key in cols:
            data[key] = pa.array(cols.pop(key), pa.bool_())
    data.update(cols)
    return schema.conform(data, K)


def run_of(
    kernels: pa.Table, granularity: Granularity = Granularity.LAUNCH, cc: str = "7.0"
) -> Run:
    meta = run_meta(
        format=SourceFormat.KINETO_JSON,
        path="trace.json",
        kernel_granularity=granularity,
        op_granularity=Granularity.NONE,
        iterations=IterationInfo(),
        gpus=(Gpu(0, "GPU", cc),),
        files=("trace.json",),
    )
    return Run(meta=meta, kernels=kernels)


def ncu_of(names: list[str], verdicts: list[bool | None], cc: str = "7.0") -> Run:
    meta = run_meta(
        format=SourceFormat.NCU_CSV,
        path="ncu.csv",
        gpus=(Gpu(0, None, cc),),
        files=("ncu.csv",),
        iterations=IterationInfo(),
        kernel_granularity=Granularity.NONE,
        op_granularity=Granularity.NONE,
    )
    return Run(meta=meta, kernels=table(names, counter_uses_tc=verdicts))


def verdicts(run: Run) -> list[bool | None]:
    assert run.kernels is not None
    values: list[bool | None] = run.kernels.column("counter_uses_tc").to_pylist()
    return values


# --- the override -----------------------------------------------------------------------------------


def test_counter_overrides_name_rule_and_name_verdict_stays_available() -> None:
    t = table(
        [
            "volta_sgemm_128x64_nn",
            "cudnn_hmma_conv_kernel",
            "triton_tem_fused_mm_0",
            "nvjet_x",
            "x",
        ],
        counter_uses_tc=[True, False, True, None, None],
        profiler_uses_tc=[None, None, None, None, True],
    )
    out = tk.classify_kernels(t)
    schema.validate(out, K)
    assert out.column("uses_tc").to_pylist() == [True, False, True, True, True]
    assert out.column("tc_rule").to_pylist() == [
        tk.COUNTER_RULE, tk.COUNTER_RULE, tk.COUNTER_RULE, "cublaslt-nvjet", tk.PROFILER_LABEL]  # fmt: skip
    names_only = tk.classify_kernels(t, counters=False)
    assert names_only.column("uses_tc").to_pylist() == [False, True, None, True, True]
    assert names_only.column("tc_rule").to_pylist() == [
        "sgemm", "hmma", "triton-unknown", "cublaslt-nvjet", tk.PROFILER_LABEL]  # fmt: skip
    assert tk.classified_share(out) == 1.0


def test_counter_rule_id_is_reserved() -> None:
    with pytest.raises(InputError, match="ncu-counter"):
        tk.parse_rule_pack(
            '[pack]\nid="x"\nversion="1"\n'
            '[[rule]]\nid="ncu-counter"\npattern="a"\nverdict="no"\nsource="s"\n'
        )


# --- disagreements ----------------------------------------------------------------------------------


def test_disagreements_list_every_contradiction_with_launches_and_time() -> None:
    k = ncu_csv.read(RAW).kernels
    assert k is not None
    got = counters.disagreements(tk.classify_kernels(k))
    # the sgemm's bare HMMA count is no verdict (it may be HFMA2.MMA moves), so only the cuDNN
    # kernel whose every tensor counter is 0 contradicts its name
    assert got == (
        counters.CounterDisagreement("hmma_fprop_kernel", True, "hmma", False, 1, 310_250),
    )


def test_no_counters_no_disagreements_and_unknown_names_are_not_contradicted() -> None:
    assert counters.disagreements(table(["volta_sgemm_x"])) == ()
    assert counters.disagreements(schema.empty(K)) == ()
    t = table(["triton_tem_fused_mm_0", "nvjet_a"], counter_uses_tc=[True, True])
    assert counters.disagreements(t) == ()


def test_profiler_label_contradicted_by_counter_is_listed() -> None:
    t = table(["mystery"], counter_uses_tc=[False], profiler_uses_tc=[True])
    (d,) = counters.disagreements(t)
    assert (d.name_verdict, d.name_rule, d.counter_verdict) == (True, tk.PROFILER_LABEL, False)


# --- merge --------------------------------------------------------------------------------------------


def test_merge_by_name_levels() -> None:
    trace = table(
        [
            "volta_sgemm_128x64_nn",
            "volta_sgemm_128x64_nn",
            HMMA,
            FILL.replace(", ", ",  "),  # whitespace differs from ncu's spelling
            "triton_tem_fused_mm_0",
            "reduce_kernel",  # not profiled by ncu
        ],
        start_ns=[10, 20, 30, 40, 50, 60],
        duration_ns=[5, 6, 7, 8, 9, 10],
    )
    merged = counters.merge(run_of(trace), ncu_csv.read(RAW))
    # sgemm and Triton matched, but their bare HMMA counts give no verdict (HFMA2.MMA moves)
    assert verdicts(merged) == [None, None, False, False, None, None]
    assert merged.kernels is not None
    assert merged.kernels.column("duration_ns").to_pylist() == [5, 6, 7, 8, 9, 10]  # trace's times
    assert merged.meta.files == ("trace.json", RAW.name)
    note = merged.meta.notes[-1]
    assert (
        "4 of 5 kernel names matched" in note
        and "33% of kernel time" in note
        and "launch by" not in note
    )


def test_bare_ncu_names_match_full_signatures_but_full_signatures_must_agree() -> None:
    trace = table([FILL, "void ns::Kernel2<A>(int)", "void other::Kernel2<B>(int)"])
    ncu = ncu_of(["vectorized_elementwise_kernel", "void ns::Kernel2<C>(int)"], [False, True])
    # the bare ncu name (--print-kernel-base function) matches; different templates do not
    assert verdicts(counters.merge(run_of(trace), ncu)) == [False, None, None]


def test_conflicting_candidates_leave_the_kernel_unknown() -> None:
    ncu = ncu_of(["void a::Kernel2<X>(int)", "void b::Kernel2<Y>(int)"], [True, False])
    merged = counters.merge(run_of(table(["Kernel2"])), ncu)
    assert verdicts(merged) == [None]
    assert "1 ambiguous names left unknown" in merged.meta.notes[-1]
    agreeing = ncu_of(["void a::Kernel2<X>(int)", "void b::Kernel2<Y>(int)"], [True, True])
    assert verdicts(counters.merge(run_of(table(["Kernel2"])), agreeing)) == [True]


def test_two_trace_kernels_on_one_key_are_not_given_one_ncu_kernels_verdict() -> None:
    """Spelled alike only once namespaces go (ncu drops some): ncu measured one of them, and
    which one is unknown, so neither takes its verdict."""
    trace = ["void a::inner::k<float>(float*)", "void b::inner::k<float>(float*)"]
    ncu = ncu_of(["void inner::k<float>(T1 *)"], [True])
    merged = counters.merge(run_of(table(trace)), ncu)
    assert verdicts(merged) == [None, None]
    assert "2 ambiguous names left unknown" in merged.meta.notes[-1]
    assert verdicts(counters.merge(run_of(table(trace[:1])), ncu)) == [True]


def test_a_repeated_ncu_pass_is_matched_launch_by_launch() -> None:
    """ncu profiled a warm-up pass and the measured one: the last pass answers for the trace."""
    ncu = ncu_of(["k"] * 4, [True, False, True, False])
    trace = table(["k", "k"], start_ns=[20, 10])
    assert verdicts(counters.merge(run_of(trace), ncu)) == [False, True]
    uneven = ncu_of(["k"] * 4, [True, False, False, False])  # the passes differ: any launch
    assert verdicts(counters.merge(run_of(trace), uneven)) == [True, True]


def test_launch_order_when_counts_match() -> None:
    ncu = ncu_of(["k_mixed"] * 3 + ["k_other"], [True, False, True, False])
    trace = table(["k_mixed", "k_other", "k_mixed", "k_mixed"], start_ns=[300, 5, 100, 200])
    # time order of the k_mixed launches: rows 2 (100), 3 (200), 0 (300) -> ncu launches 0, 1, 2
    assert verdicts(counters.merge(run_of(trace), ncu)) == [True, False, True, False]
    assert "(1 launch by launch)" in counters.merge(run_of(trace), ncu).meta.notes[-1]
    fewer = table(["k_mixed", "k_mixed"], start_ns=[1, 2])  # counts differ: any launch used TC
    assert verdicts(counters.merge(run_of(fewer), ncu)) == [True, True]
    aggregated = run_of(table(["k_mixed"] * 3), Granularity.AGGREGATE)
    assert verdicts(counters.merge(aggregated, ncu)) == [True, True, True]


def test_merge_keeps_existing_counters_gpu_note_and_errors() -> None:
    trace = table(["a", "b"], counter_uses_tc=[False, None])
    merged = counters.merge(run_of(trace, cc="9.0"), ncu_of(["b"], [True], cc="8.0"))
    assert verdicts(merged) == [False, True]
    assert "compute capability 8.0, the trace ran on 9.0" in merged.meta.notes[-1]
    with pytest.raises(InputError, match="no kernel rows to attach"):
        counters.merge(Run(meta=run_of(trace).meta), ncu_of(["b"], [True]))
    with pytest.raises(InputError, match="no kernel rows in the Nsight Compute run"):
        counters.merge(run_of(trace), Run(meta=ncu_of(["b"], [True]).meta))


def test_chunked_trace_with_different_dictionaries() -> None:
    a = table(["volta_sgemm_128x64_nn", "x"], start_ns=[1, 2])
    b = table(["y", "volta_sgemm_128x64_nn"], start_ns=[3, 4])
    t = pa.concat_tables([a, b])
    assert t.column("name").num_chunks == 2
    ncu = ncu_of(["volta_sgemm_128x64_nn"], [True])
    assert verdicts(counters.merge(run_of(t), ncu)) == [True, None, None, True]


@settings(max_examples=budget(60), deadline=None)
@given(
    names=st.lists(
        st.sampled_from(["a", "b", "void n::b<int>(int)", "c", "k(int)", ""]), max_size=25
    ),
    ncu=st.lists(
        st.tuples(st.sampled_from(["a", "b", "d", "k"]), st.one_of(st.none(), st.booleans())),
        max_size=10,
    ),
)
def test_merge_invariants(names: list[str], ncu: list[tuple[str, bool | None]]) -> None:
    trace = table(names, start_ns=list(range(len(names), 0, -1)), duration_ns=[3] * len(names))
    try:
        merged = counters.merge(run_of(trace), ncu_of([n for n, _ in ncu], [v for _, v in ncu]))
    except InputError as exc:  # a CSV that matches no kernel at all is refused, nothing else
        distinct = {n for n in names if n}
        assert f"(0 of {len(distinct)} matched)" in str(exc) and distinct
        assert not distinct & {n for n, _ in ncu}  # an exact name always matches
        return
    assert merged.kernels is not None
    schema.validate(merged.kernels, K)
    assert merged.kernels.num_rows == len(names)
    assert merged.kernels.column("name").to_pylist() == names
    profiled = {n for n, v in ncu if v is not None}
    for name, v in zip(names, verdicts(merged), strict=True):
        if v is not None:
            assert counters.name_keys(name)[0][-1] in profiled


# --- a real trace with counters attached ---------------------------------------------------------


def _ncu_for_v100(tmp_path: Path) -> Path:
    """ncu CSV naming real kernels of the V100 trace; the counter values are invented: sgemm is
    made to contradict its name so the disagreement path runs on real data. The invented evidence
    is a tensor-path operation count: a bare HMMA count would be no verdict (HFMA2.MMA moves)."""
    head = (
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
        '"Block Size","Grid Size","Device","CC","gpu__time_duration.sum",'
        '"sm__ops_path_tensor_src_fp16.sum"\n' + ",".join(['""'] * 11) + ',"usecond","inst"\n'
    )
    rows = [
        ("volta_sgemm_64x64_nt", "4,096"),
        ("dgrad_engine", "0"),  # --print-kernel-base function: bare name
        ("volta_scudnn_128x128_stridedB_splitK_small_nn_v1", "0"),
    ]
    body = "".join(
        f'"{i}","1","p","h","{n}","1","7","(128, 1, 1)","(4, 1, 1)","0","7.0","100.00","{v}"\n'
        for i, (n, v) in enumerate(rows)
    )
    p = tmp_path / "ncu_v100_synthetic.csv"
    p.write_text(head + body, encoding="utf-8")
    return p


@pytest.mark.realtraces
def test_counters_on_the_real_v100_trace(tmp_path: Path) -> None:
    if not V100.exists():
        pytest.skip(f"real trace not available: {V100}")
    run = counters.merge(api.load(V100), api.load(_ncu_for_v100(tmp_path)))
    a = api.analyze(run).analysis
    assert a.verdict.counter_disagreements == (
        counters.CounterDisagreement(
            "volta_sgemm_64x64_nt", False, "sgemm", True, launches=102, gpu_ns=21_084_000
        ),
    )
    rows = {k.name: k for k in a.breakdown.kernels}
    assert rows["volta_sgemm_64x64_nt"].tc_rule == tk.COUNTER_RULE
    dgrad = [k for k in a.breakdown.kernels if "dgrad_engine" in k.name]
    assert dgrad and all(k.tc_rule == tk.COUNTER_RULE and k.uses_tc is False for k in dgrad)
    assert "3 of" in run.meta.notes[-1]


def test_cli_counters_option_lists_disagreements_in_json_and_html(tmp_path: Path) -> None:
    """End to end: --counters on a real trace puts the contradictions in the summary and report."""
    if not V100.exists():
        pytest.skip("real trace not available")
    from typer.testing import CliRunner

    from tcreport.cli import app

    ncu = _ncu_for_v100(tmp_path)
    runner = CliRunner()
    result = runner.invoke(app, ["summary", str(V100), "--json", "--counters", str(ncu)])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["counter_disagreements"], "the invented sgemm counters contradict the name rule"
    first = data["counter_disagreements"][0]
    assert first["counter_verdict"] is True and first["name_verdict"] is False
    out = tmp_path / "r.html"
    result = runner.invoke(app, ["report", str(V100), "-o", str(out), "--counters", str(ncu)])
    assert result.exit_code == 0, result.stderr
    html = out.read_text()
    assert 'id="t-counters"' in html and first["name"].split("(")[0][:40] in html


def test_cli_counters_refuses_a_non_ncu_file(tmp_path: Path) -> None:
    if not V100.exists():
        pytest.skip("real trace not available")
    from typer.testing import CliRunner

    from tcreport.cli import app

    result = CliRunner().invoke(app, ["summary", str(V100), "--counters", str(V100)])
    assert result.exit_code == 2
    assert "Nsight Compute CSV" in result.stderr
