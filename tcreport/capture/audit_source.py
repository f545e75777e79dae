"""Where in the user's code something happened: the file:line an audit finding points at.

A layer's defining line is the innermost frame of the call stack that is the user's own code:
frames inside the interpreter's standard library and installed packages (torch, keras, torchvision,
tcreport itself) are skipped, so ``nn.Linear(100, 333)`` inside ``Net.__init__`` points at that
line, and a torchvision model at the script line that built it. A framework setting is recorded
where the running script set it (a wrapped setter); where no hook can be installed, the last line
of the script's source that sets it stands in.
"""

from __future__ import annotations

import ast
import functools
import os
import sys
import sysconfig
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tcreport.model import AuditKey


def _library_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    roots.update(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    roots.add(str(Path(__file__).resolve().parent.parent))  # tcreport, wherever it is installed
    return tuple(sorted(os.path.realpath(r) + os.sep for r in roots if r))


class Locator:
    """Turns the current call stack into ``file:line`` of the user's innermost frame."""

    def __init__(self, script: Path) -> None:
        self.base = os.path.realpath(script.resolve().parent)
        self._roots = _library_roots()
        self._cache: dict[str, str | None] = {}

    def _shown(self, filename: str) -> str | None:
        """The name to show for a user file, ``None`` for a library file or a frozen module."""
        if filename in self._cache:
            return self._cache[filename]
        shown: str | None = None
        if not filename.startswith("<"):
            real = os.path.realpath(filename)
            if not real.startswith(self._roots):  # a venv may sit inside the script's folder
                rel = os.path.relpath(real, self.base)
                shown = rel if not rel.startswith("..") else os.path.basename(real)
        self._cache[filename] = shown
        return shown

    def here(self, skip: int = 1) -> str | None:
        frame = sys._getframe(skip)
        while frame is not None:
            shown = self._shown(frame.f_code.co_filename)
            if shown is not None:
                return f"{shown}:{frame.f_lineno}"
            frame = frame.f_back  # type: ignore[assignment]
        return None


#: Dotted-name endings that set a framework option, whatever alias the script imported it under.
_ASSIGNED = {
    "cudnn.benchmark": AuditKey.TORCH_CUDNN_BENCHMARK,
    "cudnn.allow_tf32": AuditKey.TORCH_CUDNN_TF32,
    "cudnn.fp32_precision": AuditKey.TORCH_CUDNN_TF32,
    "cudnn.conv.fp32_precision": AuditKey.TORCH_CUDNN_TF32,
    "matmul.allow_tf32": AuditKey.TORCH_MATMUL_TF32,
    "matmul.fp32_precision": AuditKey.TORCH_MATMUL_TF32,
}
_CALLED = {
    "set_float32_matmul_precision": AuditKey.TORCH_MATMUL_PRECISION,
    "enable_tensor_float_32_execution": AuditKey.TF_TF32,
    "set_global_policy": AuditKey.KERAS_POLICY,
}


def _dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts)) if parts else None


def _ends(name: str, suffixes: Iterable[str]) -> str | None:
    for suffix in suffixes:
        if name == suffix or name.endswith("." + suffix):
            return suffix
    return None


def setting_lines(tree: ast.Module, script: Path) -> dict[AuditKey, str]:
    """The last line of the script that sets each framework option, as ``file:line``."""
    found: dict[AuditKey, int] = {}
    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            name = _dotted(target)
            suffix = _ends(name, _ASSIGNED) if name else None
            if suffix is not None:
                key = _ASSIGNED[suffix]
                found[key] = max(found.get(key, 0), target.lineno)  # type: ignore[attr-defined]
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            suffix = _ends(name, _CALLED) if name else None
            if suffix is not None:
                key = _CALLED[suffix]
                found[key] = max(found.get(key, 0), node.lineno)
    return {k: f"{script.name}:{line}" for k, line in found.items()}


@contextmanager
def calls_recorded(
    owner: Any, name: str, key: AuditKey, sink: dict[AuditKey, str], locate: Locator
) -> Iterator[None]:
    """While installed, each call of ``owner.name`` (a framework function that sets an option)
    records the caller's ``file:line`` in ``sink[key]``; the runtime line is exact where the
    script's source has the call in several branches. Missing attributes are left alone."""
    original = getattr(owner, name, None)
    if not callable(original):
        yield
        return

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        where = locate.here(2)
        if where is not None:
            sink[key] = where
        return original(*args, **kwargs)

    setattr(owner, name, wrapper)
    try:
        yield
    finally:
        setattr(owner, name, original)
