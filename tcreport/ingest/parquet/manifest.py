"""The ``meta`` of an ingest folder's manifest, checked field by field against :class:`RunMeta`.

The manifest is JSON anyone can edit, and everything after ingest trusts the metadata's types: a
``profiler_version`` of ``7`` reached the HTML header's ``in`` test, a ``framework`` of ``[1]`` the
rules' ``.lower()``, each a traceback. So every field is checked against the type its dataclass
declares (text, whole number, number, yes/no, a closed set, a list, a nested object), and numbers
against their range (no negative count, time or id; shares within 0-1), before a :class:`RunMeta`
is built. A field that fails is one :class:`InputError` naming the manifest, the field's path and
its value; a field absent from the manifest takes the dataclass default, as for older folders, and
one this tcreport does not know (a newer version's) is not read.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any, Union

from tcreport.errors import InputError
from tcreport.model import RunMeta

MANIFEST = "tcreport-run.json"
#: Whole numbers in the metadata are counts, ids and nanosecond totals: never negative, and
#: small enough that the analysis' sums of them fit int64.
_MAX_INT = 2**60
#: Shares stored as fractions (DLProf's utilisations).
_SHARES = frozenset({"gpu_utilization", "tc_kernel_utilization"})


class _Bad(Exception):
    """A field that does not fit, with its path (``meta.gpus[0].name``) and what was expected."""

    def __init__(self, where: str, value: object, expected: str) -> None:
        super().__init__(where)
        self.where, self.value, self.expected = where, value, expected


def parse_meta(raw: object, path: Path) -> RunMeta:
    """The manifest's ``meta`` as a :class:`RunMeta`, or an :class:`InputError` naming the field."""
    try:
        meta = _object(RunMeta, raw, "meta")
    except _Bad as bad:
        shown = repr(bad.value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise InputError(
            f"{MANIFEST}: {bad.where} is {shown}; expected {bad.expected}", path
        ) from None
    assert isinstance(meta, RunMeta)
    return meta


def _object(cls: type[Any], raw: object, where: str) -> object:
    if not isinstance(raw, dict):
        raise _Bad(where, raw, "an object")
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}  # others (a newer tcreport's) unused
    values: dict[str, object] = {}
    for name, f in known.items():
        if name in raw:
            values[name] = _value(hints[name], raw[name], f"{where}.{name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise _Bad(f"{where}.{name}", None, "a value (the field is required)")
    return cls(**values)


def _value(tp: Any, v: object, where: str, nullable: bool = False) -> object:
    """``v`` as the declared type ``tp``, or :class:`_Bad`."""
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        arms = typing.get_args(tp)
        if v is None and type(None) in arms:
            return None
        (arm,) = [a for a in arms if a is not type(None)]  # every Optional field has one arm
        return _value(arm, v, where, nullable=type(None) in arms)
    if origin is tuple:
        if not isinstance(v, list):
            raise _Bad(where, v, "a list")
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:  # tuple[X, ...]: any length of X
            return tuple(_value(args[0], x, f"{where}[{i}]") for i, x in enumerate(v))
        if len(v) != len(args):  # tuple[X, Y]: a pair, each of its own type
            raise _Bad(where, v, f"a list of {len(args)}")
        return tuple(
            _value(a, x, f"{where}[{i}]") for i, (a, x) in enumerate(zip(args, v, strict=True))
        )
    if dataclasses.is_dataclass(tp):
        return _object(typing.cast("type[Any]", tp), v, where)
    if isinstance(tp, type) and issubclass(tp, Enum):
        allowed = [e.value for e in tp]
        if v not in allowed:
            raise _Bad(where, v, "one of " + ", ".join(map(str, allowed)))
        return tp(v)
    return _scalar(tp, v, where, " or null" if nullable else "")


def _scalar(tp: Any, v: object, where: str, null: str) -> object:
    if tp is str:
        if not isinstance(v, str):
            raise _Bad(where, v, "text" + null)
        if where == "meta.started_at":  # batch files the run under this date
            try:
                datetime.fromisoformat(v.replace("Z", "+00:00"))
            except ValueError:
                raise _Bad(where, v, "an ISO 8601 time such as 2024-05-01T12:00:00Z") from None
        return v
    if tp is bool:
        if not isinstance(v, bool):
            raise _Bad(where, v, "true, false" + null if null else "true or false")
        return v
    if tp is int:
        if not isinstance(v, int) or isinstance(v, bool):
            raise _Bad(where, v, "a whole number" + null)
        if not 0 <= v < _MAX_INT:
            raise _Bad(where, v, "a whole number from 0 to 2**60")
        return v
    if tp is float:
        if not isinstance(v, int | float) or isinstance(v, bool):
            raise _Bad(where, v, "a number" + null)
        top = 1.0 if where.rsplit(".", 1)[-1] in _SHARES else float(_MAX_INT)
        if not (math.isfinite(v) and 0 <= v <= top):
            raise _Bad(where, v, f"a number from 0 to {top:g}")
        return float(v)
    raise TypeError(f"RunMeta field {where} has an unchecked type {tp!r}")  # a tcreport bug
