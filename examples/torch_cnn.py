"""A small PyTorch CNN on synthetic data, for trying ``tcreport profile`` and its model audit.

Why this shape: a convolution block, then 333- and 77-wide linear layers, the sizes a first model
often has, and nothing set for speed. It runs on a CPU in seconds (synthetic data, no downloads);
on a GPU it uses CUDA. ``--fixed`` is the same model as the audit and the findings advise it:
sizes padded to multiples of 8, TF32 and cuDNN autotuning on, channels_last, a GradScaler with
float16, and the batch made once on the device instead of drawn on the host each step (GP001's
wait for ``aten::normal_``). It keeps the 3 input (RGB) channels of the first convolution, which
the audit (AU001) and the trace (TC003) still name: padding the images to 8 channels is left to
try. The H200 recordings in sample_traces/h200-torch-cnn-ncu were made before the batch moved to
the device: ``cnn_bf16fixed`` still draws it on the host each step.

    python examples/torch_cnn.py --precision float16
    tcreport profile examples/torch_cnn.py -- --precision float16
    tcreport profile examples/torch_cnn.py -- --precision float16 --fixed
"""

from __future__ import annotations

import argparse


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--precision", choices=["float32", "float16", "bfloat16"], default="float32")
    p.add_argument(
        "--fixed",
        action="store_true",
        help="Apply the audit's and the findings' fixes (all but padding the 3 input channels): "
        "sizes, TF32, cuDNN autotuning, channels_last, a loss scaler, the batch on the device.",
    )
    p.add_argument("--steps", type=int, default=10, help="Training steps in total.")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--image-size", type=int, default=32)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    import torch
    from torch import nn

    device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.fixed:
        torch.backends.cudnn.benchmark = True
        torch.set_float32_matmul_precision("high")
    channels, hidden, classes = (32, 336, 80) if args.fixed else (30, 333, 77)
    model = nn.Sequential(
        nn.Conv2d(3, channels, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(channels, channels, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(channels, hidden),
        nn.ReLU(),
        nn.Linear(hidden, classes),
    ).to(device)
    if args.fixed:
        model = model.to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    half = {"float16": torch.float16, "bfloat16": torch.bfloat16}.get(args.precision)
    scaler = torch.amp.GradScaler(device) if args.fixed and half is torch.float16 else None

    gen = torch.Generator().manual_seed(0)
    shape = (args.batch_size, 3, args.image_size, args.image_size)
    if args.fixed:
        # The batch is made once and lives on the device (channels_last already): no step waits
        # while the host draws random numbers and copies them over (GP001's "aten::normal_").
        # A real input pipeline gets the same from DataLoader(num_workers>0, pin_memory=True)
        # and .to(device, non_blocking=True).
        fixed_batch = (
            torch.randn(shape, generator=gen).to(device, memory_format=torch.channels_last),
            torch.randint(0, classes, (args.batch_size,), generator=gen).to(device),
        )
    for _ in range(args.steps):
        if args.fixed:
            x, y = fixed_batch
        else:  # a new batch on the host each step, copied over: the GPU waits for it
            x = torch.randn(shape, generator=gen)
            y = torch.randint(0, classes, (args.batch_size,), generator=gen)
            x, y = x.to(device), y.to(device)
        with torch.autocast(device, dtype=half or torch.float32, enabled=half is not None):
            loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
