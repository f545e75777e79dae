"""TC006: the GPU is known only by a compute capability that parts without Tensor Cores share.

Compute capability 7.5 is every Turing GPU's: the RTX 20 series, the T4 and Quadro RTX have Tensor
Cores, the TU116/TU117 parts (GeForce GTX 16 series, GeForce MX450/MX550, NVIDIA T400-T2000) have
none. A trace that records 7.5 but no GPU name (or a name the device table does not know) cannot
say which, so the report must not read as if Tensor Cores were certain: the verdict and the advice
stand as for a GPU that has them, and this finding says on which condition, in the analysis' own
words (:func:`tcreport.analysis.gpu_arch.matrix_units_caveat`). On a named GTX 16 the device table
decides instead (TC005).
"""

from __future__ import annotations

from tcreport.analysis.result import Analysis
from tcreport.rules.base import Finding, Severity

ID = "TC006"


def check(analysis: Analysis) -> list[Finding]:
    caveat = analysis.verdict.matrix_units_caveat
    if caveat is None or analysis.verdict.no_matrix_units:
        return []
    return [
        Finding(
            id=ID,
            severity=Severity.INFO,
            title="The GPU may have no Tensor Cores: the trace gives its compute capability only",
            detail=(
                f"{caveat}. The Tensor Core share, the verdicts and the advice in this report "
                "assume the GPU has Tensor Cores; on one of those parts no kernel can use them "
                "and the advice to reach them does not apply."
            ),
            fix=(
                "Check the GPU's model (nvidia-smi --query-gpu=name --format=csv); profile with "
                "a tool that records it (Nsight Systems, the PyTorch profiler) to have it decided."
            ),
        )
    ]
