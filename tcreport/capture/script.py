"""Running the user's script in this interpreter, as ``python script.py`` would.

The in-process backends (``tf``, ``torch``) and the model audit need the script's objects and its
step boundaries, which only exist inside its process. The script runs as ``__main__`` with its own
``sys.argv`` and its folder first on ``sys.path``, both restored afterwards. Its failure is its own:
the traceback is printed as Python prints it and the exit code comes back as a number, while a
:class:`~tcreport.errors.TcreportError` raised by tcreport's hooks inside it (a window that cannot
be reached, known before training starts) passes through unchanged.

A function the user names as the key node (``--key-node train_step``) is counted by adding one
decorator to its definition in the parsed source before it is compiled: line numbers stay the
script's own, and nothing is traced per call (``sys.setprofile`` would slow every call).

A script may ``os.chdir`` (its working folder is restored afterwards; tcreport's own paths are made
absolute before it starts) or ``os.fork``: a child that returns from the script leaves with its own
exit status at once, so only the original process stops the profiler and writes the report.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import os
import sys
import traceback
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tcreport.errors import TcreportError, UsageError

#: The name under which the decorators are visible to the script's module while it runs.
HOOKS = "__tcreport_step_hooks__"


def parse(script: Path) -> ast.Module:
    try:
        source = script.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read the script: {exc.strerror or exc}", script) from exc
    except UnicodeDecodeError as exc:
        raise UsageError("the script is not UTF-8 text; is it a Python file?", script) from exc
    try:
        return ast.parse(source, filename=str(script))
    except SyntaxError as exc:
        raise UsageError(f"line {exc.lineno}: not valid Python: {exc.msg}", script) from exc


def defined_functions(tree: ast.Module) -> list[str]:
    """Names of the functions and methods the script defines, in source order."""
    return [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def _decorated(tree: ast.Module, names: set[str]) -> ast.Module:
    """``tree`` with ``@__tcreport_step_hooks__["name"]`` outermost on each function named."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in names:
            hook = ast.Subscript(
                value=ast.Name(id=HOOKS, ctx=ast.Load()),
                slice=ast.Constant(value=node.name),
                ctx=ast.Load(),
            )
            node.decorator_list.insert(0, ast.copy_location(hook, node))
    return ast.fix_missing_locations(tree)


def run(
    script: Path,
    args: tuple[str, ...],
    decorators: Mapping[str, Callable[[Any], Any]] | None = None,
    on_os_exit: Callable[[int], None] | None = None,
) -> tuple[int, str]:
    """Execute ``script`` as ``__main__``; returns its exit code and, when it failed, its last
    error line ("" otherwise). ``on_os_exit(code)`` runs when the script calls ``os._exit`` in
    this process, which ends it at once: the last chance to save and say what was recorded."""
    tree = parse(script)
    if decorators:
        tree = _decorated(tree, set(decorators))
    code = compile(tree, str(script), "exec", dont_inherit=True)
    module = types.ModuleType("__main__")
    module.__dict__.update(
        __file__=str(script), __builtins__=builtins, __cached__=None, __loader__=None
    )
    module.__dict__[HOOKS] = dict(decorators or {})
    saved_argv, saved_path, saved_main = sys.argv[:], sys.path[:], sys.modules.get("__main__")
    saved_cwd = _cwd()
    parent = os.getpid()
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.resolve().parent))
    sys.modules["__main__"] = module
    real_exit = os._exit

    def hard_exit(code: int) -> None:
        if os.getpid() == parent and on_os_exit is not None:
            os._exit = real_exit
            try:
                on_os_exit(code)  # ends the process itself when all goes well
            finally:
                real_exit(code)  # the script asked for the process to end, whatever happened
        real_exit(code)

    if on_os_exit is not None:
        os._exit = hard_exit  # type: ignore[assignment]
    try:
        exec(code, module.__dict__)
        result = 0, ""
    except SystemExit as exc:
        result = _exit_code(exc)
    except (KeyboardInterrupt, TcreportError):
        if os.getpid() != parent:
            leave_child(1)
        raise
    except BaseException as exc:  # the user's script failed: show its traceback as Python would
        traceback.print_exc()
        result = 1, last_lines(exc)
    finally:
        os._exit = real_exit
        sys.argv, sys.path[:] = saved_argv, saved_path
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
        if saved_cwd is not None and os.getpid() == parent:
            with contextlib.suppress(OSError):  # the folder it started in may be gone
                os.chdir(saved_cwd)
    if os.getpid() != parent:
        leave_child(result[0])
    return result


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:
        return None


def leave_child(code: int) -> None:
    """End a process the script forked that came back out of the script: with its own status,
    without running tcreport's epilogue (the profiler, the report) or atexit handlers that
    belong to the parent."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status(code))


def status(code: int) -> int:
    """The process exit status for a script's exit code: ``sys.exit(256)`` would wrap to 0 (a
    failure reported as success), so any non-zero code outside 1-255 becomes 1."""
    if code == 0:
        return 0
    return code if 0 < code < 256 else 1


def _exit_code(exc: SystemExit) -> tuple[int, str]:
    code = exc.code
    if code is None:
        return 0, ""
    if isinstance(code, int):
        return code, ""
    print(code, file=sys.stderr)
    return 1, str(code)


def last_lines(exc: BaseException) -> str:
    """Where the script raised and what, on one line: its innermost frame and the exception line
    (the full traceback has just been printed above it)."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}: " if frames else ""
    what = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return " ".join(f"{where}{what}".split())[:400]
