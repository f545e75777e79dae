"""Number and name formatting for everything a person reads: findings text and every renderer.

Finding rules (plain text) and the renderers (HTML, Markdown, terminal, diff, gates) format durations,
shares and names here, so one figure reads the same wherever it appears. Nothing here computes a
figure; it only turns one into text.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, TypeVar


def ns(value: int | float | None, digits: int = 1) -> str:
    """Human duration from nanoseconds: 589147 -> '589.1 µs'; ``digits=0`` for a round threshold
    in a label (100_000 -> '100 µs')."""
    if value is None:
        return "n/a"
    v = float(value)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.{digits}f} {unit}"
    return f"{v:.0f} ns"


def flops(value: int) -> str:
    """A floating-point operation count: 4_406_888_448 -> '4.41 GFLOP'."""
    for unit, scale in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6)):
        if value >= scale:
            return f"{value / scale:.2f} {unit}"
    return f"{value} FLOP"


def tflops(value: float, unit: bool = True) -> str:
    """An achieved rate in TFLOP/s: 106.757 -> '106.76 TFLOP/s'; ``unit=False`` for a table
    column whose header names the unit ('106.76')."""
    return f"{value:.2f} TFLOP/s" if unit else f"{value:.2f}"


#: What a heading says for a GPU whose model the trace does not name.
UNKNOWN_GPU = "unknown GPU"


class GpuLike(Protocol):
    """What :func:`gpus` reads of a :class:`tcreport.model.Gpu` (fmt sits beside model, below it
    in no layer, so it takes the shape rather than the class)."""

    @property
    def device_id(self) -> int: ...
    @property
    def name(self) -> str | None: ...
    @property
    def compute_capability(self) -> str | None: ...


G = TypeVar("G", bound=GpuLike)


def gpus(
    devices: Iterable[G],
    *,
    per_device: bool = False,
    unnamed: str | Callable[[G], str] | None = None,
) -> str:
    """A run's GPUs for a heading: the distinct model names, sorted, ``unnamed`` (else
    ``UNKNOWN_GPU``) for a missing name or an empty list ('NVIDIA A100-SXM4-80GB'). ``per_device``:
    every device with its compute capability, for the run's metadata table ('0: NVIDIA H100 (sm
    9.0); 1: unknown'). ``unnamed`` is the analysis' word for a GPU the trace does not name
    (:attr:`tcreport.analysis.gpu_arch.GpuIdentity.inferred`), or per device its word for each
    (:meth:`~tcreport.analysis.gpu_arch.GpuIdentity.unnamed_device`: unnamed GPUs of several
    capabilities are each named by their own)."""
    if per_device:

        def word(g: G) -> str:
            return (unnamed(g) if callable(unnamed) else unnamed) or "unknown"

        return "; ".join(
            f"{g.device_id}: {g.name or word(g)}"
            + (f" (sm {g.compute_capability})" if g.compute_capability else "")
            for g in devices
        )
    missing = (None if callable(unnamed) else unnamed) or UNKNOWN_GPU
    return ", ".join(sorted({g.name or missing for g in devices})) or missing


def pct(value: float | None, digits: int = 1) -> str:
    """A share in a table cell or card: 0.595 -> '59.5 %'."""
    return "n/a" if value is None else f"{value * 100:.{digits}f} %"


def pct_number(value: float | None) -> str:
    """A share in a column whose head names the unit ("% of GPU kernel time"): 0.595 -> '59.5'
    (empty when unknown, so a sorted column keeps it apart from a real 0)."""
    return "" if value is None else f"{value * 100:.1f}"


def ms_number(value: int | float | None) -> str:
    """A time in a column whose head says "ms": 5_912_000 -> '5.912' (empty when unknown)."""
    return "" if value is None else f"{value / 1e6:,.3f}"


def pct_text(value: float | None) -> str:
    """A share inside a sentence (finding titles and details): 0.595 -> '59.5%'."""
    return "n/a" if value is None else f"{value:.1%}"


def yes_no(value: bool | None) -> str:
    return "unknown" if value is None else ("yes" if value else "no")


def count(value: int | None) -> str:
    return "n/a" if value is None else f"{value:,}"


def nbytes(value: int) -> str:
    """Sizes in binary units: 65536 -> '64 KiB', 19267840 -> '18.4 MiB'."""
    v = float(value)
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(v) >= scale:
            return f"{v / scale:.3g} {unit}" if v % scale else f"{v / scale:.0f} {unit}"
    return f"{v:.0f} B"


def noun(n: int | None, word: str, many: str | None = None) -> str:
    """``word`` for one, its plural (``many``, else ``word + "s"``) for any other count or an
    unknown one: a sentence built around a count agrees with it ("1 op takes", "2 ops take")."""
    return word if n == 1 else (many or f"{word}s")


def plural(n: int, word: str, many: str | None = None) -> str:
    """The count and its noun: ``plural(1, "copy", "copies")`` -> '1 copy'."""
    return f"{n} {noun(n, word, many)}"


#: Footnote marks, in order of first use (an op table has at most a few distinct notes).
MARKS = ("†", "‡", "§", "¶")


def footnotes(notes: Sequence[str | None]) -> tuple[list[str], list[tuple[str, str]]]:
    """Per row, the mark of its note ("" without one), and each distinct note once with its mark:
    a table cell that cannot hold a sentence points to it under the table."""
    marks: dict[str, str] = {}
    for n in notes:
        if n and n not in marks and len(marks) < len(MARKS):
            marks[n] = MARKS[len(marks)]
    return [marks.get(n, "") if n else "" for n in notes], [(m, n) for n, m in marks.items()]


def tail(text: str, width: int = 60) -> str:
    """Keep the end of a long scope path, where the op's own name is: '…/Conv2d::forward/conv2d'."""
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def cells(text: str) -> int:
    """How many terminal cells ``text`` takes: a wide (CJK) character two, a combining mark none."""
    if text.isascii():
        return len(text)
    return sum(
        2 if unicodedata.east_asian_width(c) in "WF" else 0 if unicodedata.combining(c) else 1
        for c in text
    )


def _cut(text: str, width: int) -> str:
    """The longest start of ``text`` that fits ``width`` cells."""
    used, n = 0, 0
    for c in text:
        used += cells(c)
        if used > width:
            break
        n += 1
    return text[:n]


def middle(text: str, width: int) -> str:
    """Shorten ``text`` to ``width`` terminal cells in the middle, keeping both ends: kernel and op
    names differ at the start (family, library) and at the end (tile shape, layout, the op's own
    name). Cells, not characters: a CJK name cut by characters runs past its column, and the
    terminal then cuts off the end that tells two names apart."""
    if cells(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    head = (width - 1) // 2
    return _cut(text, head) + "…" + _cut(text[::-1], width - 1 - head)[::-1]


def middles(texts: Sequence[str], width: int) -> list[str]:
    """:func:`middle` of each of ``texts``, kept apart: where two different texts would shorten
    to the same string (kernels that differ only inside their template arguments), each keeps a
    window on the identifier where it first differs from its closest look-alike (``void at…
    CUDAFunctor_add<c10::BFloat16…(int)#1})``), and any still alike end in ``#1``, ``#2``."""
    base = [middle(t, width) for t in texts]
    short = list(base)
    for i, s in enumerate(base):
        alike = [t for t, o in zip(texts, base, strict=True) if o == s and t != texts[i]]
        if alike:
            short[i] = _window(texts[i], alike, width)
    seen: dict[str, list[int]] = {}
    for i, s in enumerate(short):
        seen.setdefault(s, []).append(i)
    for group in seen.values():
        if len({texts[i] for i in group}) > 1:
            for k, i in enumerate(group, start=1):
                key = f"#{k}"
                short[i] = _cut(short[i], max(0, width - len(key))) + key
    return short


def _window(text: str, alike: Sequence[str], width: int) -> str:
    """``text`` in ``width`` cells as head…window…tail, the window starting at the identifier
    where ``text`` first differs from the most similar of ``alike``. Pieces are measured in cells
    (:func:`_cut`), as :func:`middle`'s are: a wide (CJK) name windowed by characters ran to twice
    its column."""
    head = tail = max(1, width // 4)
    room = width - head - tail - 2
    if room < 1:
        return middle(text, width)
    h, t = _cut(text, head), _cut(text[::-1], tail)[::-1]
    end = len(text) - len(t)  # where the tail starts
    d = max(len(os.path.commonprefix([text, o])) for o in alike)
    start = d
    while (  # back to the identifier's start, by at most half the window's cells
        start > len(h)
        and cells(text[start - 1 : d]) <= room // 2
        and (text[start - 1].isalnum() or text[start - 1] == "_")
    ):
        start -= 1
    start = min(max(start, len(h)), end - len(_cut(text[:end][::-1], room)))
    w = _cut(text[start:], room)
    if start <= len(h) + 1:  # the window joins the head
        return _cut(text, min(cells(text[:start]) + room, width - 1 - cells(t))) + "…" + t
    if start + len(w) >= end - 1:  # ...or the tail
        return h + "…" + text[start:]
    return h + "…" + w + "…" + t


#: C0/C1 controls, the line and paragraph separators (a table row would break at them) and the
#: bidirectional marks and overrides: what a terminal would act on instead of show.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def _shown(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def encodable(text: str) -> str:
    """``text`` with each lone surrogate (a file name's undecodable byte, as Python holds it:
    0xff -> U+DCFF) as its ``\\udcff`` escape: UTF-8 cannot hold it, so Arrow and every written
    file would refuse the name."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def visible(text: str) -> str:
    """``text`` with every control character shown as ``\\xNN`` / ``\\uNNNN``, never sent raw to a
    terminal (the one implementation: :func:`tcreport.render.escape.terminal` and the readers'
    own stderr lines use it)."""
    return _CONTROLS.sub(_shown, text)
