"""A small MLP trained under torch.compile(mode="max-autotune-no-cudagraphs") with Inductor's Triton
GEMM templates forced (max_autotune_gemm_backends="TRITON"), for real triton_tem_* kernels.

    --precision bf16        model and input in bfloat16
    --precision fp32-tf32   float32, torch.set_float32_matmul_precision("high") (TF32 allowed)
    --precision fp32        float32, "highest" (no TF32)

--profile DIR: torch.profiler (record_shapes) over 4 steps after 3 warm-up steps, written to DIR
by tensorboard_trace_handler. TORCHINDUCTOR_CACHE_DIR set by the caller keeps the compiled
kernels and autotuning results, so a second run under ncu runs the same kernels.
"""

from __future__ import annotations

import argparse


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--precision", choices=["bf16", "fp32-tf32", "fp32"], default="bf16")
    p.add_argument("--steps", type=int, default=7)
    p.add_argument("--profile", default=None)
    a = p.parse_args()
    import torch
    import torch._inductor.config as ind
    from torch import nn

    ind.max_autotune_gemm_backends = "TRITON" if torch.cuda.is_available() else "ATEN"
    torch.set_float32_matmul_precision("high" if a.precision == "fp32-tf32" else "highest")
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if a.precision == "bf16" else torch.float32
    model = nn.Sequential(
        nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024), nn.LayerNorm(1024),
        nn.Linear(1024, 1000),
    ).to(dev, dtype)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    fast = torch.compile(model, mode="max-autotune-no-cudagraphs")
    x = torch.randn(4096, 1024, device=dev, dtype=dtype)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        loss = fast(x).float().square().mean()
        loss.backward()
        opt.step()

    warm = 3
    for _ in range(warm):
        step()
    torch.cuda.synchronize() if dev == "cuda" else None
    print("compiled and warm", flush=True)
    if not a.profile:
        for _ in range(a.steps - warm):
            step()
        return
    from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == "cuda" else [])
    with profile(
        activities=acts,
        record_shapes=True,
        schedule=schedule(wait=0, warmup=0, active=a.steps - warm),
        on_trace_ready=tensorboard_trace_handler(a.profile),
    ) as prof:
        for _ in range(a.steps - warm):
            step()
            prof.step()
    print("profiled", flush=True)


if __name__ == "__main__":
    main()
