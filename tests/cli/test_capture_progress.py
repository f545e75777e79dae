"""The step counter ``tcreport profile`` shows on a terminal follows the window it records, also
after a PyTorch key node that never ran made the window fall back to ``optimizer.step()``.

Pure Python: :class:`TorchWindow` takes the profiler's ``step()`` as a callable, so no PyTorch
is needed to drive it (tests/cli/test_profile_torch.py runs the real thing on a TTY).
"""

from __future__ import annotations

import io

from tcreport.capture.progress import StepCounter
from tcreport.capture.torch_window import OPTIMIZER, TorchWindow


def _lines(stream: io.StringIO) -> list[str]:
    """The counter's lines as a terminal shows them one after another (each rewrites the last)."""
    return [part.removeprefix("\x1b[2K") for part in stream.getvalue().split("\r") if part]


def test_the_counter_names_the_window_recorded_after_a_key_node_fell_back() -> None:
    shown = io.StringIO()
    counter = StepCounter(2, 3, stream=shown)
    advanced: list[int] = []
    win = TorchWindow(
        start=2,
        stop=3,
        key_node="train_stepp",  # a typo: never runs
        key_source="functions",
        advance=lambda: advanced.append(1),
        on_step=counter,
        on_move=counter.moved,
    )
    win.began()
    opt = object()
    for _ in range(8):
        win.optimizer_stepped(opt)
    counter.close()
    assert win.fell_back and win.source == OPTIMIZER
    assert (win.start, win.stop) == (3, 4)  # one optimizer step past where it should have opened
    lines = [line for line in _lines(shown) if line]
    assert lines, "the counter printed nothing after the fall-back"
    assert all("recording 3–4" in line for line in lines), lines
    assert "tcreport: step 3, recording 3–4" in lines and "tcreport: step 4, recording 3–4" in lines


def test_the_counter_is_unchanged_when_the_key_node_runs() -> None:
    shown = io.StringIO()
    counter = StepCounter(1, 2, stream=shown)
    win = TorchWindow(
        start=1, stop=2, key_node="my_step", key_source="record_function ranges",
        advance=lambda: None, on_step=counter, on_move=counter.moved,
    )  # fmt: skip
    win.began()
    for _ in range(4):
        win.key_ended()
    assert not win.fell_back
    assert "tcreport: step 1, recording 1–2" in _lines(shown)
