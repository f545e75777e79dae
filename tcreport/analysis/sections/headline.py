"""What a section says first: a figure, what it is, the detail behind it, and whether it is good
or bad news. The section decides all four (its words, its thresholds); a renderer only styles
them, so a card, a heading and a terminal row cannot disagree on whether 27 % is bad."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Tone(StrEnum):
    """Whether a figure is good or bad news, judged by its section's thresholds."""

    GOOD = "good"
    NEUTRAL = "neutral"
    BAD = "bad"
    UNKNOWN = "unknown"  # the input does not give the figure


@dataclass(frozen=True)
class Headline:
    """One section's one-line verdict, plain text (a renderer escapes and styles it)."""

    value: str  # the figure as the reader sees it ("27.3 %")
    label: str  # what it is ("of GPU kernel time on AMD Matrix Cores")
    detail: str  # the figures behind it ("30.2 µs of 110.9 µs")
    tone: Tone
