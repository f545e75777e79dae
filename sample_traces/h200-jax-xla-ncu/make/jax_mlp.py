"""A small JAX training step under jax.jit, for a real XLA-on-GPU profile and Nsight Compute counters.

A 3x3 convolution (NHWC, 3 -> 64 channels), average pooling, then a 1000-wide (not a multiple of 8)
and a 1024-wide dense layer with GELU and layer norm, a 10-way softmax cross-entropy, plain SGD.

    --precision bf16          parameters and inputs in bfloat16
    --precision fp32          float32, JAX's default matmul precision
    --precision fp32-highest  float32 with jax_default_matmul_precision="highest"

--trace DIR wraps the steps after two warm-up steps in jax.profiler.trace(DIR), each step in
StepTraceAnnotation("train_step"); the loss is fetched every step (the loop's only sync).
--cache DIR keeps compiled programs (and their autotuning) so a second run, under ncu, runs the
same kernels without autotuning again.
"""

from __future__ import annotations

import argparse
import functools


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--precision", choices=["bf16", "fp32", "fp32-highest"], default="bf16")
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--trace", default=None)
    p.add_argument("--cache", default=None)
    a = p.parse_args()
    import jax
    import jax.numpy as jnp

    if a.cache:
        jax.config.update("jax_compilation_cache_dir", a.cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    if a.precision == "fp32-highest":
        jax.config.update("jax_default_matmul_precision", "highest")
    dtype = jnp.bfloat16 if a.precision == "bf16" else jnp.float32
    key = jax.random.PRNGKey(0)
    k1, k2, k3, k4, kx, ky = jax.random.split(key, 6)

    def dense(k, n_in, n_out):
        w = jax.random.normal(k, (n_in, n_out), jnp.float32) / jnp.sqrt(n_in)
        return {"w": w.astype(dtype), "b": jnp.zeros((n_out,), dtype)}

    params = {
        "conv": (jax.random.normal(k1, (3, 3, 3, 64), jnp.float32) * 0.2).astype(dtype),
        "d1": dense(k2, 16 * 16 * 64, 1000),
        "d2": dense(k3, 1000, 1024),
        "out": dense(k4, 1024, 10),
    }

    def layer_norm(x):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) * jax.lax.rsqrt(v + 1e-5)

    def forward(ps, x):
        y = jax.lax.conv_general_dilated(
            x, ps["conv"], (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
        y = jax.nn.relu(y)
        n = y.shape[0]
        y = y.reshape(n, 16, 2, 16, 2, 64).mean(axis=(2, 4)).reshape(n, -1)
        for name in ("d1", "d2"):
            y = layer_norm(jax.nn.gelu(y @ ps[name]["w"] + ps[name]["b"]))
        return y @ ps["out"]["w"] + ps["out"]["b"]

    def loss_fn(ps, x, labels):
        logits = forward(ps, x).astype(jnp.float32)
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * labels, axis=-1))

    @functools.partial(jax.jit, donate_argnums=0)
    def train_step(ps, x, labels):
        loss, grads = jax.value_and_grad(loss_fn)(ps, x, labels)
        ps = jax.tree_util.tree_map(lambda w, g: w - (0.01 * g).astype(w.dtype), ps, grads)
        return ps, loss

    x = jax.random.normal(kx, (a.batch_size, 32, 32, 3), jnp.float32).astype(dtype)
    labels = jax.nn.one_hot(jax.random.randint(ky, (a.batch_size,), 0, 10), 10)
    for _ in range(2):
        params, loss = train_step(params, x, labels)
    print("warm-up loss", float(loss), "devices", jax.devices(), flush=True)
    if a.trace:
        jax.profiler.start_trace(a.trace)
    for i in range(a.steps):
        with jax.profiler.StepTraceAnnotation("train_step", step_num=i):
            params, loss = train_step(params, x, labels)
            lv = float(loss)
    if a.trace:
        jax.profiler.stop_trace()
    print("final loss", lv, flush=True)


if __name__ == "__main__":
    main()
