"""A small GAN whose generator upsamples with resize layers, trained by a custom loop.

The custom loop (a ``tf.function`` called ``train_step``, no Keras ``fit``, no step markers) is the
case DLProf's key node was made for: tcreport counts calls of the function named by ``--key-node``
to find the iterations. Resize (``UpSampling2D``, ``tf.image.resize``) runs on CUDA cores, not
Tensor Cores, which the report shows next to the convolutions that can use them.

    python examples/gan_resize.py --precision mixed_float16
    tcreport profile examples/gan_resize.py --backend tf --key-node train_step \
        --iter-start 2 --iter-stop 4 -- --precision mixed_float16
"""

from __future__ import annotations

import argparse


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--precision", choices=["float32", "mixed_float16", "mixed_bfloat16"], default="float32"
    )
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument(
        "--image-size", type=int, default=32, help="Side of the square images (x4 of 8)."
    )
    p.add_argument("--latent", type=int, default=32)
    p.add_argument("--channels", type=int, default=32, help="Width of the conv layers.")
    return p.parse_args(argv)


def build(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    import tensorflow as tf

    keras = tf.keras
    side = args.image_size // 4
    size = args.image_size
    c = args.channels
    generator = keras.Sequential(
        [
            keras.Input(shape=(args.latent,)),
            keras.layers.Dense(side * side * c, activation="relu", name="project"),
            keras.layers.Reshape((side, side, c)),
            keras.layers.UpSampling2D(2, interpolation="nearest", name="upsample_nearest"),
            keras.layers.Conv2D(c, 3, padding="same", activation="relu", name="conv_a"),
            keras.layers.Resizing(size, size, interpolation="bilinear", name="resize_bilinear"),
            keras.layers.Conv2D(3, 3, padding="same", name="to_rgb"),
            keras.layers.Activation("tanh", dtype="float32", name="image"),
        ],
        name="generator",
    )
    discriminator = keras.Sequential(
        [
            keras.Input(shape=(size, size, 3)),
            keras.layers.Conv2D(
                c, 3, strides=2, padding="same", activation="relu", name="d_conv_a"
            ),
            keras.layers.Conv2D(
                2 * c, 3, strides=2, padding="same", activation="relu", name="d_conv_b"
            ),
            keras.layers.Flatten(),
            keras.layers.Dense(1, name="d_logit"),
            keras.layers.Activation("linear", dtype="float32", name="score"),
        ],
        name="discriminator",
    )
    return generator, discriminator


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    import tensorflow as tf

    tf.keras.mixed_precision.set_global_policy(args.precision)
    generator, discriminator = build(args)
    bce = tf.keras.losses.BinaryCrossentropy(from_logits=True)
    g_opt = tf.keras.optimizers.Adam(2e-4)
    d_opt = tf.keras.optimizers.Adam(2e-4)
    if args.precision == "mixed_float16":
        g_opt = tf.keras.mixed_precision.LossScaleOptimizer(g_opt)
        d_opt = tf.keras.mixed_precision.LossScaleOptimizer(d_opt)

    @tf.function
    def train_step(real: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        noise = tf.random.normal((tf.shape(real)[0], args.latent))
        with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
            fake = generator(noise, training=True)
            # tf.image.resize as a plain op, outside any layer: a second resize path in the graph.
            fake = tf.image.resize(fake, (args.image_size, args.image_size), method="bilinear")
            real_score = discriminator(real, training=True)
            fake_score = discriminator(fake, training=True)
            d_loss = bce(tf.ones_like(real_score), real_score) + bce(
                tf.zeros_like(fake_score), fake_score
            )
            g_loss = bce(tf.ones_like(fake_score), fake_score)
        g_opt.apply_gradients(
            zip(
                g_tape.gradient(g_loss, generator.trainable_variables),
                generator.trainable_variables,
                strict=True,
            )
        )
        d_opt.apply_gradients(
            zip(
                d_tape.gradient(d_loss, discriminator.trainable_variables),
                discriminator.trainable_variables,
                strict=True,
            )
        )
        return g_loss, d_loss

    images = tf.random.uniform((args.batch_size, args.image_size, args.image_size, 3), -1.0, 1.0)
    for step in range(args.steps):
        g_loss, d_loss = train_step(images)
        print(f"step {step}: g_loss {float(g_loss):.4f} d_loss {float(d_loss):.4f}")


if __name__ == "__main__":
    main()
