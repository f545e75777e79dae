"""The command line's own value converter against Typer's (tcreport/cli/_plain_params.py).

The plain converter skips pydantic for values whose meaning is beyond doubt and hands the rest to
Typer; so on every parameter of every command, for well-formed and malformed text alike, it must
return what Typer's converter returns, or fail with Typer's message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer.main

from tcreport.cli import app

pytest.importorskip("typer._coercion")  # the Typer whose converter needs pydantic

from typer._click import Context  # noqa: E402  (after the skip: only that Typer has it)
from typer._click.exceptions import BadParameter  # noqa: E402
from typer._coercion import build_runtime_param  # noqa: E402

from tcreport.cli._plain_params import PlainRuntimeParam  # noqa: E402

#: Text a user may type for a number, a path, a name or a choice, well-formed or not.
TEXTS = [
    "0", "1", "7", "-1", "-0", "+3", "007", "1_000", " 5", "5 ", "12345678901234567890",
    "0.5", "1.", ".5", "-0.25", "1e3", "1E-2", "inf", "nan", "0x10", "1.0", "", " ", "abc",
    "-", "out.html", "dir/", "~/x", "a b", "text", "json", "TEXT", "markdown", "local", "md",
    "\x1b[31m", "é",
]  # fmt: skip


def _params() -> list[tuple[str, Any, Any]]:
    """(command path, click parameter, context) for every Typer parameter of every command."""
    found: list[tuple[str, Any, Any]] = []

    def walk(command: Any, ctx: Context, path: str) -> None:
        found.extend((path, p, ctx) for p in command.params if hasattr(p, "type_descriptor"))
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, Context(sub, parent=ctx, info_name=name), f"{path} {name}")

    root = typer.main.get_command(app)
    walk(root, Context(root, info_name="tcreport"), "tcreport")
    return found


def _outcome(convert: Any, value: Any, param: Any, ctx: Context) -> tuple[str, Any]:
    try:
        return "value", convert(value, param=param, ctx=ctx)
    except BadParameter as exc:
        return "error", exc.format_message()


def test_every_parameter_converts_as_typer_does() -> None:
    params = _params()
    kinds = {repr(p.type_descriptor.annotation) for _, p, _ in params}
    assert {"<class 'int'>", "<class 'float'>", "<class 'pathlib.Path'>", "<class 'str'>"} <= kinds
    compared = plain_only = 0
    for where, param, ctx in params:
        desc = param.type_descriptor
        if desc.file_annotation is not None or desc.annotation is bool:
            continue
        plain, typers = PlainRuntimeParam(desc), build_runtime_param(desc)
        values: list[Any] = [*TEXTS, 3, 0.5, Path("p")]
        if param.nargs == -1 or param.multiple:  # a repeated option's values come as a tuple
            values = [(), ("a",), ("a", "-b", "c d"), ("", "a"), ("a", 3)]
        for value in values:
            mine = _outcome(plain.coerce, value, param, ctx)
            theirs = _outcome(typers.coerce, value, param, ctx)
            # repr: the same type and value (nan included), or the same message
            assert repr(mine) == repr(theirs), (where, param.name, value)
            compared += 1
        plain = PlainRuntimeParam(desc)
        _outcome(plain.coerce, values[1], param, ctx)  # "1", or ("a",): a plain value
        plain_only += "typers_own" not in vars(plain)  # converted without building Typer's
    assert compared > 1000  # every parameter was tried, not skipped
    assert plain_only >= len(params) - 30  # all but the bool flags took the plain way
