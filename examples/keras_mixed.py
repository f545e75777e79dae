"""The Keras model of issue #25, for trying ``tcreport profile``'s model audit on a CPU.

A ``mixed_float16`` classifier with input 100, Dense layers of 1000, 333 and 77 units and a float16
softmax output, trained in a custom loop (``tf.GradientTape``) with no loss scaling and with TF32
switched off: each of those is a finding the audit reports with the line that set it, before any
GPU run. ``--fixed`` is the same model as the audit advises it: sizes padded to multiples of 8, a
float32 output softmax, a ``LossScaleOptimizer``, TF32 left on and XLA compilation.

    tcreport profile examples/keras_mixed.py
    tcreport profile examples/keras_mixed.py -- --fixed
"""

from __future__ import annotations

import argparse


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fixed", action="store_true", help="Apply every fix the audit suggests.")
    p.add_argument("--steps", type=int, default=8, help="Training steps in total.")
    p.add_argument("--batch-size", type=int, default=32)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    import numpy as np
    import tensorflow as tf

    keras = tf.keras
    keras.mixed_precision.set_global_policy("mixed_float16")
    if not args.fixed:
        tf.config.experimental.enable_tensor_float_32_execution(False)
    features, sizes = (104, (1000, 336, 80)) if args.fixed else (100, (1000, 333, 77))

    inputs = keras.Input(shape=(features,))
    x = keras.layers.Dense(sizes[0], activation="relu")(inputs)
    x = keras.layers.Dense(sizes[1], activation="relu")(x)
    if args.fixed:
        x = keras.layers.Dense(sizes[2])(x)
        outputs = keras.layers.Activation("softmax", dtype="float32", name="out_softmax")(x)
    else:
        outputs = keras.layers.Dense(sizes[2], activation="softmax", name="out_softmax")(x)
    model = keras.Model(inputs, outputs)

    optimizer = keras.optimizers.Adam(1e-3)
    if args.fixed:
        optimizer = keras.mixed_precision.LossScaleOptimizer(optimizer)
    loss_fn = keras.losses.SparseCategoricalCrossentropy()

    @tf.function(jit_compile=args.fixed)
    def train_step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
            scaled = optimizer.scale_loss(loss) if args.fixed else loss
        grads = tape.gradient(scaled, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    rng = np.random.default_rng(0)
    for step in range(args.steps):
        x = rng.random((args.batch_size, features), dtype=np.float32)
        y = rng.integers(0, sizes[2], size=(args.batch_size,))
        with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
            train_step(tf.constant(x), tf.constant(y))


if __name__ == "__main__":
    main()
