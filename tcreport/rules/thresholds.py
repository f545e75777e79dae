"""Every threshold a rule uses, in one place, with the reason for its value."""

from __future__ import annotations

#: Speed-up assumed when an eligible fp32 op moves to Tensor Cores (fp16/bf16 or TF32). NVIDIA's
#: mixed-precision guide reports 2-8x on GEMM/conv-bound layers; 2x is the conservative end, so the
#: estimated saving is a floor, not a promise.
TC_SPEEDUP = 2.0

#: Below this share of kernel time with a known verdict, the Tensor Core share is not trustworthy.
MIN_CLASSIFIED_SHARE = 0.9

#: An eligible-not-TC op below this share of GPU kernel time is reported but not ranked high.
HIGH_SEVERITY_SHARE = 0.10
