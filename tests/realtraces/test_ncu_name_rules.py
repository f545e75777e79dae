"""The kernel-name rules against Nsight Compute's counters on real H200 runs.

``sample_traces/h200-torch-cnn-ncu`` holds PyTorch traces and ncu CSVs of the same programs. Every
name rule that judges a kernel there must agree with the counters; the rules added from this
sample (their ``source`` cites it) must hold on every launch they match. Names the rules leave
unknown (Triton's ``tile_product``, ``tensorTransformGeneric``, ``multi_tensor_apply_kernel``
as ncu spells it, ``globalKernel``, ``convertTensor_kernel``) are completed by the counters, not
contradicted.
"""

from __future__ import annotations

import pytest
from trace_paths import H200_NCU

from tcreport import api
from tcreport.analysis import counters
from tcreport.analysis import tc_kernels as tk

NCU = H200_NCU / "ncu"
CSVS = ["ncu3_mix.csv", "ncu3_cnn_fp32.csv", "ncu3_cnn_fp16.csv", "ncu3_cnn_bf16fixed.csv"]
PAIRS = [("mix/kineto_mix_h.json.gz", "ncu3_mix.csv")] + [
    (f"cnn_{v}", f"ncu3_cnn_{v}.csv") for v in ("fp32", "fp16", "bf16fixed")
]
#: rule id -> (verdict, launches it decides in the sample's CSVs), as each rule's source counts them
FROM_THIS_SAMPLE = {
    "cutlass-warp-mma-tensorop": (True, 28),
    "cudnn-convolve-common-engine": (False, 8),
    "xmma-split-k-reduction": (False, 23),
    "xmma-ffma": (False, 11),  # 14 launches say _ffma_; 3 of them are split-K passes, decided first
    "cudnn-workspace-init": (False, 4),
}


@pytest.mark.parametrize(("trace", "csv"), PAIRS, ids=[c for _, c in PAIRS])
def test_name_rules_agree_with_the_counters_on_the_traces(trace: str, csv: str) -> None:
    run = counters.merge(api.load(H200_NCU / trace), api.load(NCU / csv))
    assert api.analyze(run).analysis.verdict.counter_disagreements == ()


@pytest.mark.parametrize("csv", CSVS)
def test_name_rules_agree_with_the_counters_on_every_profiled_kernel(csv: str) -> None:
    k = api.load(NCU / csv).kernels
    assert k is not None
    assert counters.disagreements(tk.classify_kernels(k)) == ()


def test_the_rules_this_sample_proves_hold_on_every_launch_they_match() -> None:
    seen = dict.fromkeys(FROM_THIS_SAMPLE, 0)
    for csv in CSVS:
        k = api.load(NCU / csv).kernels
        assert k is not None
        named = tk.classify_kernels(k, counters=False)
        for rule, measured in zip(
            named.column("tc_rule").to_pylist(),
            k.column("counter_uses_tc").to_pylist(),
            strict=True,
        ):
            if rule in FROM_THIS_SAMPLE:
                assert measured is FROM_THIS_SAMPLE[rule][0], rule
                seen[rule] += 1
    assert seen == {rule: n for rule, (_, n) in FROM_THIS_SAMPLE.items()}
