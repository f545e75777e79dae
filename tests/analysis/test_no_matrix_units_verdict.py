"""A GPU without matrix units: every kernel's verdict is "no", for the architecture's reason.

The Windows Nsight Systems export ran on a GeForce GTX 1060 (Pascal, sm_61). Its user kernels
``test0``..``test4`` were "unknown", so the report said 0 % of kernel time had a known verdict and
advised measuring them with Nsight Compute's tensor-pipe counters (TC002), beside TC005 saying the
GPU has no Tensor Cores. AMD's Instinct GPUs have Matrix Cores and an unidentified GPU may have
anything: neither is touched.
"""

from __future__ import annotations

import pytest
from synthetic import synthetic_vendor_run
from trace_paths import NSYS_WIN2022, REALTRACES, need

from tcreport import api
from tcreport.analysis import result, tc_kernels
from tcreport.errors import InputError
from tcreport.model import Run

MI250 = REALTRACES / "kineto" / "mi250-rocm-minitoy" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"


def _rules(run: Run) -> tuple[list[bool | None], list[str | None]]:
    k = result._classify(run, result.run_vendor(run)).kernels
    assert k is not None
    return k.column("uses_tc").to_pylist(), k.column("tc_rule").cast("string").to_pylist()


@pytest.mark.realtraces
def test_real_pascal_kernels_are_no_for_the_architecture_and_tc002_is_silent() -> None:
    run = api.load(need(NSYS_WIN2022))
    uses, rules = _rules(run)
    assert set(uses) == {False}
    assert set(rules) == {tc_kernels.NO_MATRIX_UNITS_RULE}
    view = api.analyze(run)
    assert view.analysis.verdict.classified_share == pytest.approx(1.0)
    ids = {f.id for f in view.findings}
    assert "TC005" in ids and "TC002" not in ids
    assert "sm__inst_executed_pipe_tensor" not in api.render_markdown(view)


@pytest.mark.realtraces
def test_real_amd_mi250_keeps_its_matrix_core_verdicts() -> None:
    run = api.load(need(MI250))
    uses, rules = _rules(run)
    assert tc_kernels.NO_MATRIX_UNITS_RULE not in rules
    assert True in uses  # the rocBLAS MFMA GEMMs ran on the Matrix Cores
    assert not api.analyze(run).analysis.verdict.no_matrix_units


def test_synthetic_unknown_device_keeps_unknown_verdicts() -> None:
    run = synthetic_vendor_run("Mystery Accelerator 9000", ["test2"])
    uses, rules = _rules(run)
    assert uses == [None] and tc_kernels.NO_MATRIX_UNITS_RULE not in rules


def test_synthetic_pascal_keeps_a_name_rules_own_no_and_fills_the_unknowns() -> None:
    run = synthetic_vendor_run("NVIDIA GeForce GTX 1060 6GB", ["maxwell_sgemm_128x64_nn", "test2"])
    uses, rules = _rules(run)
    assert uses == [False, False]
    assert rules == ["sgemm", tc_kernels.NO_MATRIX_UNITS_RULE]


def test_no_matrix_units_rule_id_is_reserved() -> None:
    bad = (
        '[pack]\nid = "x"\nversion = "1"\n[[rule]]\nid = "no-matrix-units"\npattern = "a"\nverdict = "no"\n'
        + 'arch = "any"\nprecision = "fp32"\nsource = "s"\n'
    )
    with pytest.raises(InputError, match="no-matrix-units"):
        tc_kernels.parse_rule_pack(bad)
