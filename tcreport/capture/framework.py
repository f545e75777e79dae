"""Which framework a script uses, judged from its imports.

The backends need it for flags that only make sense for one framework (DLProf's ``--mode``, nsys's
``--pytorch=autograd-shapes-nvtx``, TF's NVTX environment variables). Parsing the imports is cheap,
runs nothing of the user's code, and is right for ordinary training scripts; a script that imports
its framework indirectly is reported as unknown and gets framework-neutral flags.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tcreport.capture.request import Framework
from tcreport.errors import UsageError

_TF_ROOTS = frozenset({"tensorflow", "keras", "tf_keras"})
_TORCH_ROOTS = frozenset({"torch", "lightning", "pytorch_lightning", "torchvision"})


def imported_roots(source: str) -> set[str]:
    """Top-level package names the module imports (absolute imports only)."""
    roots: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def detect(script: Path) -> Framework:
    try:
        source = script.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read the script: {exc.strerror or exc}", script) from exc
    except UnicodeDecodeError as exc:
        raise UsageError("the script is not UTF-8 text; is it a Python file?", script) from exc
    try:
        roots = imported_roots(source)
    except SyntaxError as exc:
        raise UsageError(f"line {exc.lineno}: not valid Python: {exc.msg}", script) from exc
    if roots & _TORCH_ROOTS:
        return Framework.PYTORCH
    if roots & _TF_ROOTS:
        return Framework.TENSORFLOW
    return Framework.UNKNOWN
