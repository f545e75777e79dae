"""TF32's words per framework: which switch a float32 op depends on, how to turn it on, and what
to do where a library chose a float32 CUDA-core kernel although TF32 ran elsewhere. PyTorch has a
switch per library family (cuDNN's on by default, matmul's off since 1.12), TensorFlow and JAX one
each; :mod:`tcreport.analysis.why_not` and the findings use these words, so none says "TF32 is
off" beside a "TF32 is on" that meant the other switch.
"""

from __future__ import annotations

#: PyTorch's two TF32 switches, one per library family (:func:`tcreport.analysis.why_not.family`).
_TORCH_TF32 = {
    "gemm": "torch.backends.cuda.matmul.allow_tf32 = True (or "
    'torch.set_float32_matmul_precision("high")) for matmuls',
    "conv": "torch.backends.cudnn.allow_tf32 = True for convolutions",
}


#: PyTorch's TF32 switches as a sentence names them: separate (cuDNN's on by default, matmul's off
#: since 1.12), so "TF32 is off" beside "TF32 is on" contradicts itself unless each names its own.
_TORCH_TF32_SWITCH = {
    "gemm": "matmul TF32 (torch.backends.cuda.matmul.allow_tf32)",
    "conv": "cuDNN TF32 (torch.backends.cudnn.allow_tf32)",
}


#: What to do where a library chose a float32 CUDA-core kernel although TF32 ran elsewhere;
#: PyTorch's words only on a PyTorch run.
_PAD = (
    "pad channels to a multiple of 4 (a first convolution with 3 input channels is the usual case)"
)
LIBRARY_FIX = {
    "cuDNN": f"record the ops' shapes to see which calls; {_PAD}",
    "cuBLAS": "record shapes to see which calls; pad M/N/K to multiples of 4 for TF32",
}
LIBRARY_FIX_TORCH = LIBRARY_FIX | {
    "cuDNN": "record shapes (torch.profiler record_shapes=True) to see which calls; set "
    f"torch.backends.cudnn.benchmark = True so cuDNN times its TF32 algorithms too; {_PAD}"
}


def tf32_switch(flavour: str, fam: str) -> str:
    """The TF32 switch a float32 op of family ``fam`` ("conv", "gemm") depends on: PyTorch's own
    switch of that family, else "TF32" (TensorFlow and JAX have one switch for both)."""
    return _TORCH_TF32_SWITCH[fam] if flavour == "torch" else "TF32"


def tf32_fix(flavour: str, families: frozenset[str]) -> str:
    """How to turn TF32 on for float32 ops of these library families ("conv", "gemm"): in PyTorch
    each family has its own switch, and naming the one already on (cuDNN's is by default) would
    be advice to do nothing."""
    if flavour != "torch" or not families:
        return TF32[flavour]
    switches = [_TORCH_TF32[f] for f in ("gemm", "conv") if f in families]
    return "; ".join([*switches, _TORCH_AMP])


_TORCH_AMP = "or AMP: torch.autocast(device_type='cuda', dtype=torch.bfloat16)"
#: JAX's one switch for float32 matmuls and convolutions on TF32 Tensor Cores.
JAX_TF32 = "jax.config.update('jax_default_matmul_precision', 'tensorfloat32')"
TF32 = {
    "torch": f"{_TORCH_TF32['gemm']}; {_TORCH_TF32['conv']}; {_TORCH_AMP}",
    "tf": "tf.config.experimental.enable_tensor_float_32_execution(True), or the mixed_bfloat16 policy",
    "jax": JAX_TF32 + ", or compute in bfloat16",
    "any": "enable TF32 (PyTorch: torch.backends.cuda.matmul.allow_tf32; TensorFlow: "
    "enable_tensor_float_32_execution) or use mixed precision",
}
