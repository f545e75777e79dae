"""DLProf report sections: what the CSV and JSON readers hand over, how each is recognised, and the
typed column access every report mapping uses.

A section is a title plus either a header and rows or the summary's key/value rows. Reports are
recognised by title, then by header (``--profile_name`` renames files), and columns are found by
normalised header name, because DLProf 0.x-1.8 added, dropped and respelt columns.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from tcreport.errors import InputError

Columns = dict[str, list[object]]  # column name -> values, on their way into Arrow


class ReportKind(StrEnum):
    SUMMARY = "summary"
    DETAILED = "detailed"
    ITERATION = "iteration"
    KERNEL = "kernel"
    TENSOR_CORE = "tensor core"
    OP_TYPE = "op type"
    GROUP = "group op"
    EXPERT = "expert systems"


@dataclass(frozen=True)
class Section:
    """A titled block of one file. ``header`` is None for the summary's key/value blocks, whose
    rows are ``(key, value, ...)`` (a multi-GPU ``GPU Name(s)`` row has several values)."""

    title: str
    header: tuple[str, ...] | None
    rows: list[tuple[str, ...]]
    where: list[str]  # "line 12" / "record 3" for each row, for error messages
    header_where: str
    source: Path


_TITLES = {
    "kernel report": ReportKind.KERNEL,
    "tensor core report": ReportKind.TENSOR_CORE,
    "iteration report": ReportKind.ITERATION,
    "op type summary report": ReportKind.OP_TYPE,
    "group op report": ReportKind.GROUP,
    "group node report": ReportKind.GROUP,
    "expert systems feedback": ReportKind.EXPERT,
    "all iterations": ReportKind.DETAILED,
}
SUMMARY_KV = frozenset({"system config", "summary report", "iterations"})
SUMMARY_TABLES = frozenset({"all ops", "all kernels"})
_RANGE_TITLE = re.compile(r"^(aggregated )?iterations? \d+( \d+)?$")  # a detailed report's range
_BY_HEADER = (
    (ReportKind.TENSOR_CORE, {"tc gpu time ns"}),
    (ReportKind.ITERATION, {"kernel name", "gpu start time ns"}),
    (ReportKind.KERNEL, {"kernel name", "total gpu time ns"}),
    (ReportKind.DETAILED, {"tc eligible", "total gpu time ns"}),
    (ReportKind.OP_TYPE, {"op type", "# ops"}),
    (ReportKind.GROUP, {"num tc eligible ops"}),
    (ReportKind.EXPERT, {"problem", "recommendation"}),
)


def norm(name: str) -> str:
    """Header / key spelling that survives DLProf's respellings: case, dots, brackets, spaces."""
    return re.sub(r"[^a-z0-9#%]+", " ", name.lower()).strip()


def is_title(text: str) -> bool:
    t = norm(text)
    return t in _TITLES or t in SUMMARY_KV or t in SUMMARY_TABLES or bool(_RANGE_TITLE.match(t))


def kind_of(sec: Section) -> ReportKind | None:
    t = norm(sec.title)
    if t in SUMMARY_KV or t in SUMMARY_TABLES:
        return ReportKind.SUMMARY
    header = {norm(x) for x in sec.header or ()}
    return _TITLES.get(t) or next((k for k, need in _BY_HEADER if need <= header), None)


# --- values ---------------------------------------------------------------------------------------


def to_float(text: str | None, what: str, where: str, path: Path) -> float | None:
    t = (text or "").strip().rstrip("%").strip()
    if not t:
        return None
    try:
        f = float(t)
    except ValueError:
        f = math.nan
    if not math.isfinite(f):
        raise InputError(f"{where}: {what!r} is {t[:40]!r}, not a number", path)
    return f


def to_int(text: str | None, what: str, where: str, path: Path) -> int | None:
    t = (text or "").strip()
    if 0 < len(t) < 19 and (t.isdigit() or (t[:1] == "-" and t[1:].isdigit())):
        return int(t)
    f = to_float(t, what, where, path)
    if f is not None and abs(f) >= 2.0**63:
        raise InputError(f"{where}: {what!r} is {t[:40]!r}, out of range", path)
    return None if f is None else round(f)


def to_bool(text: str | None, what: str, where: str, path: Path) -> bool | None:
    t = (text or "").strip().lower()
    if t in ("yes", "true", "1", "no", "false", "0", ""):
        return None if not t else t in ("yes", "true", "1")
    raise InputError(f"{where}: {what!r} is {t[:40]!r}, expected yes or no", path)


def _stripped(text: str, *_: object) -> str | None:
    return text.strip() or None


class Table:
    """A table section's columns, looked up by any of several spellings, parsed into lists."""

    def __init__(self, sec: Section, kind: ReportKind) -> None:
        self.sec, self.kind, self.n = sec, kind, len(sec.rows)
        self._idx: dict[str, int] = {}
        for i, h in enumerate(sec.header or ()):
            self._idx.setdefault(norm(h), i)

    def has(self, *names: str) -> int | None:
        return next((self._idx[norm(n)] for n in names if norm(n) in self._idx), None)

    def need(self, *names: str) -> int | None:
        i = self.has(*names)
        if i is None and (self.sec.header or self.sec.rows):  # a JSON report with no records has
            raise InputError(  # no header either: that is an empty table, not a missing column
                f"{self.sec.header_where}: no {names[0]!r} column; is this a DLProf {self.kind} report?",
                self.sec.source,
            )
        return i

    def _map(self, i: int | None, conv: Callable[[str, str, str, Path], object]) -> list[object]:
        if i is None:
            return [None] * self.n
        what, src = (self.sec.header or ())[i], self.sec.source
        return [
            conv(r[i], what, w, src) for r, w in zip(self.sec.rows, self.sec.where, strict=True)
        ]

    def text(self, i: int | None) -> list[object]:
        return self._map(i, _stripped)

    def ints(self, i: int | None) -> list[object]:
        return self._map(i, to_int)

    def floats(self, i: int | None) -> list[object]:
        return self._map(i, to_float)

    def flags(self, i: int | None) -> list[object]:
        return self._map(i, to_bool)

    def require(self, cols: Columns, *fields: str) -> Columns:
        for f in fields:
            if None in cols[f]:
                where = self.sec.where[cols[f].index(None)]
                raise InputError(f"{where}: empty {f} in a {self.kind} report row", self.sec.source)
        return cols
