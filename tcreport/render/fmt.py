"""Number formatting shared by the text renderers (HTML, Markdown, terminal)."""

from __future__ import annotations


def ns(value: int | float | None) -> str:
    """Human duration from nanoseconds: 589147 -> '589.1 µs'."""
    if value is None:
        return "n/a"
    v = float(value)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.1f} {unit}"
    return f"{v:.0f} ns"


def pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value * 100:.{digits}f} %"


def yes_no(value: bool | None) -> str:
    return "unknown" if value is None else ("yes" if value else "no")


def count(value: int | None) -> str:
    return "n/a" if value is None else f"{value:,}"


def tail(text: str, width: int) -> str:
    """Keep the end of a long scope path, where the op's own name is: '…/Conv2d::forward/conv2d'."""
    return text if len(text) <= width else "…" + text[-(width - 1) :]
