"""A small Keras classifier on synthetic MNIST-shaped data, for trying ``tcreport profile``.

Why synthetic data: the example must run anywhere, offline, in seconds on a CPU, and the point is the
profile (which ops ran, in which precision), not the accuracy. The output layer stays float32 even
under a mixed policy, as the Keras mixed-precision guide recommends for a numerically stable softmax.

    python examples/mnist_keras.py --precision mixed_bfloat16
    tcreport profile examples/mnist_keras.py --backend tf --iter-start 2 --iter-stop 5 \
        -- --precision mixed_bfloat16
"""

from __future__ import annotations

import argparse


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--precision",
        choices=["float32", "mixed_float16", "mixed_bfloat16"],
        default="float32",
        help="Keras dtype policy for the hidden layers.",
    )
    p.add_argument(
        "--loss-scale",
        choices=["dynamic", "fixed", "none"],
        default="dynamic",
        help="Loss scaling under mixed_float16 (ignored otherwise; see _loss_scaled).",
    )
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--steps", type=int, default=10, help="Training steps (batches) in total.")
    p.add_argument("--hidden", type=int, default=256, help="Width of the hidden layers.")
    p.add_argument("--epochs", type=int, default=1)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    import numpy as np
    import tensorflow as tf

    keras = tf.keras
    keras.mixed_precision.set_global_policy(args.precision)

    rng = np.random.default_rng(0)
    n = args.batch_size * args.steps
    x = rng.random((n, 28 * 28), dtype=np.float32)
    y = rng.integers(0, 10, size=(n,), dtype=np.int64)

    model = keras.Sequential(
        [
            keras.Input(shape=(28 * 28,)),
            keras.layers.Dense(args.hidden, activation="relu", name="dense_1"),
            keras.layers.Dense(args.hidden, activation="relu", name="dense_2"),
            keras.layers.Dense(10, name="logits"),
            # float32 output: softmax and the loss stay in full precision under a mixed policy.
            keras.layers.Activation("softmax", dtype="float32", name="predictions"),
        ]
    )
    optimizer = keras.optimizers.Adam(1e-3)
    if args.precision == "mixed_float16" and args.loss_scale != "none":
        optimizer = _loss_scaled(keras, optimizer, fixed=args.loss_scale == "fixed")
    model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy")
    model.fit(x, y, batch_size=args.batch_size, epochs=args.epochs, verbose=2)
    print(f"trained {args.epochs * args.steps} steps with policy {args.precision}")


def _loss_scaled(keras, optimizer, fixed: bool):  # type: ignore[no-untyped-def]
    """Wrap ``optimizer`` for float16 loss scaling.

    Keras 2 has a fixed scale (``dynamic=False``); Keras 3 has only the dynamic one, so "fixed"
    there means a scale that never grows (it still halves on overflow). Keras 3's ``compile``
    wraps a float16 model's optimizer by itself, so "none" only takes effect on Keras 2.
    """
    import inspect

    params = inspect.signature(keras.mixed_precision.LossScaleOptimizer).parameters
    if "dynamic" in params:
        kwargs = {"dynamic": False, "initial_scale": 2.0**15} if fixed else {}
    else:
        kwargs = {"initial_scale": 2.0**15, "dynamic_growth_steps": 2**31 - 1} if fixed else {}
    return keras.mixed_precision.LossScaleOptimizer(optimizer, **kwargs)


if __name__ == "__main__":
    main()
