"""The shape of the code: layer contracts hold (and would catch an upward import), no cycles, and
modules and functions small enough to read.

The contracts themselves are in ``pyproject.toml`` (``[tool.importlinter]``) and explained in
``docs/architecture.md``; ``.ci/run`` runs ``lint-imports`` too. This test also proves the checker is
not vacuous: the same contracts on a copy of the package with one deliberate upward import fail.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tcreport"
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 80


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.exists():
        pytest.skip("import-linter is not installed (pip install -e '.[dev]')")
    return subprocess.run(
        [str(lint), "--no-cache"],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"},
        check=False,
    )


def test_layer_contracts_hold() -> None:
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout or "broken" not in result.stdout.split("Contracts:")[-1]


def test_an_upward_import_breaks_the_contracts(tmp_path: Path) -> None:
    """analysis importing the renderer is exactly what the layers forbid: the checker must say so."""
    shutil.copytree(PACKAGE, tmp_path / "tcreport", symlinks=True)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    victim = tmp_path / "tcreport" / "analysis" / "figures.py"
    victim.write_text(victim.read_text() + "\nfrom tcreport.render import html  # noqa\n")
    result = _lint_imports(tmp_path)
    assert result.returncode != 0
    assert "tcreport.analysis is not allowed to import tcreport.render" in result.stdout


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "templates" not in p.parts)


def test_no_module_is_over_the_size_limit() -> None:
    big = {
        str(p.relative_to(ROOT)): n
        for p in _modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert big == {}


def test_no_function_is_over_the_size_limit() -> None:
    long: dict[str, int] = {}
    for p in _modules():
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long[f"{p.relative_to(ROOT)}:{node.name}"] = n
    assert long == {}


def test_no_test_imports_another_test_module() -> None:
    """Shared builders live in tests/synthetic.py and paths in tests/traces.py, not in test files."""
    offenders = []
    for p in sorted((ROOT / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            offenders += [
                f"{p.name}: {n}"
                for n in names
                # a test module, conftest, or a helper imported as tests.X as well as X (two
                # module objects: the double import that kept the suite from type-checking)
                if n.split(".")[-1].startswith("test_")
                or n.split(".")[-1] == "conftest"
                or n.split(".")[0] == "tests"
            ]
    assert offenders == []
