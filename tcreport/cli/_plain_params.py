"""Command-line values converted without pydantic where the conversion is plain.

Typer >= 0.29 converts every parameter's value through a pydantic ``TypeAdapter``, built on the
parameter's first use: importing pydantic and building a command's adapters is ~70 ms of CPU,
an eighth of a small trace's ``summary``, paid by every ``check`` in CI and every trace of a
``batch`` run as its own process. Typer offers no setting that skips it (``parser=`` builds an
adapter too), so each parameter gets a runtime converter that handles the values whose meaning
is beyond doubt -- a string for ``str``, ``Path(text)`` for a path, an integer or a decimal
number within the declared bounds, a choice's exact name -- and hands every other value
(``1.0`` for an integer, out of bounds, an unknown choice, bytes) to Typer's own converter. So
a value is converted as Typer converts it and every error is Typer's own message; a test
compares the two on every parameter of every command (tests/cli/test_plain_params.py).

A Typer without these internals (an older one converts through Click's types, without pydantic)
is left as it is.
"""

from __future__ import annotations

import re
from enum import Enum
from functools import cached_property
from pathlib import Path
from typing import Any

#: Decimal text every converter reads as the same number (no ``_``, ``inf``, hex or blanks).
_INT = re.compile(r"-?[0-9]{1,18}")
_FLOAT = re.compile(r"-?(?:[0-9]{1,15}(?:\.[0-9]{0,15})?|\.[0-9]{1,15})")


class _Miss(Exception):
    """The value is not one of the plain cases: Typer's own converter decides."""


try:  # Typer >= 0.29: its runtime coercion layer
    from typer._coercion import RuntimeParam, TypeDescriptor, build_runtime_param
    from typer._param_types import coerce_cli_choice, coerce_cli_path
    from typer.core import _TyperParameter
except ImportError:  # pragma: no cover - another Typer: nothing to replace
    RuntimeParam = None  # type: ignore[assignment,misc]


def _bounded(number: Any, info: Any) -> Any:
    if (info.min is not None and number < info.min) or (info.max is not None and number > info.max):
        raise _Miss
    return number


def _plain_value(value: Any, annotation: Any, info: Any, param: Any, ctx: Any) -> Any:
    """``value`` converted where its meaning is beyond doubt; :class:`_Miss` otherwise."""
    if annotation is str and type(value) is str:
        return value
    if annotation is int and not info.clamp:
        if type(value) is int:
            return _bounded(value, info)
        if type(value) is str and _INT.fullmatch(value):
            return _bounded(int(value), info)
    if annotation is float and not info.clamp:
        if type(value) is float:
            return _bounded(value, info)
        if type(value) is str and _FLOAT.fullmatch(value):
            return _bounded(float(value), info)
    if annotation is Path and info.path_type is None and type(value) is str and value:
        return coerce_cli_path(Path(value), info, path_type=Path, param=param, ctx=ctx)
    if isinstance(annotation, type) and issubclass(annotation, Enum) and type(value) is str:
        try:
            return coerce_cli_choice(
                value, choices=list(annotation), case_sensitive=info.case_sensitive, ctx=ctx
            )
        except ValueError:
            raise _Miss from None
    if annotation == list[str] and type(value) is tuple and all(type(v) is str for v in value):
        return list(value)
    paths = annotation == list[Path] and info.path_type is None and type(value) is tuple
    if paths and value and all(type(v) is str and v for v in value):
        return [coerce_cli_path(Path(v), info, path_type=Path, param=param, ctx=ctx) for v in value]
    raise _Miss


if RuntimeParam is not None:

    class PlainRuntimeParam(RuntimeParam):
        """Plain values converted here, the rest by the converter Typer would have built."""

        descriptor: TypeDescriptor  # set once in __init__ (the dataclass above is frozen)

        def __init__(self, descriptor: TypeDescriptor) -> None:
            super().__init__(
                parameter_info=descriptor.parameter_info, annotation=descriptor.annotation
            )
            object.__setattr__(self, "descriptor", descriptor)

        @cached_property
        def typers_own(self) -> RuntimeParam:
            return build_runtime_param(self.descriptor)

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            try:
                return _plain_value(value, self.annotation, self.parameter_info, param, ctx)
            except _Miss:
                pass
            except (AttributeError, TypeError):  # a Typer whose helpers changed shape: its way
                pass
            return self.typers_own._coerce_value(value, param=param, ctx=ctx)


def install() -> None:
    """Every Typer parameter converts plain values without pydantic from now on."""
    if RuntimeParam is None or not hasattr(_TyperParameter, "get_runtime_param"):
        return  # pragma: no cover
    typers_own = _TyperParameter.get_runtime_param

    def get_runtime_param(self: _TyperParameter) -> RuntimeParam:
        try:
            if self._runtime_param is None and self.type_descriptor.file_annotation is None:
                self._runtime_param = PlainRuntimeParam(self.type_descriptor)
        except (AttributeError, TypeError):  # internals of another shape: Typer's own converter
            pass
        return typers_own(self)

    _TyperParameter.get_runtime_param = get_runtime_param  # type: ignore[method-assign]
