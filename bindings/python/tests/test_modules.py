"""The package's modules import downwards only: no import cycles, and no imports hidden in
functions to get round one."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Set

PACKAGE = Path(__file__).resolve().parent.parent / "loadstate"


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _package_imports(node: ast.AST, module: str) -> List[str]:
    """The package modules an import statement names (relative or absolute)."""
    names: List[str] = []
    if isinstance(node, ast.ImportFrom):
        if node.level == 1:
            if node.module:
                names.append(node.module.split(".")[0])
            else:
                names.extend(alias.name for alias in node.names)
        elif node.module and node.module.split(".")[0] == "loadstate":
            parts = node.module.split(".")
            names.extend([parts[1]] if len(parts) > 1 else [alias.name for alias in node.names])
    elif isinstance(node, ast.Import):
        names.extend(alias.name.split(".")[1] for alias in node.names
                     if alias.name.startswith("loadstate.") and alias.name.count(".") >= 1)
    return [name for name in names if name != module and (PACKAGE / f"{name}.py").exists()]


def _graph() -> Dict[str, Set[str]]:
    """Module -> the package modules it imports when it is imported (TYPE_CHECKING imports left out)."""
    graph: Dict[str, Set[str]] = {}
    for path in sorted(PACKAGE.glob("*.py")):
        module = path.stem
        tree = ast.parse(path.read_text(), str(path))
        imports: Set[str] = set()
        for node in tree.body:
            if isinstance(node, ast.If) and _is_type_checking(node):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    imports.update(_package_imports(inner, module))
        graph[module] = imports
    return graph


def test_no_module_imports_the_package_inside_a_function():
    hidden = []
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in ast.walk(node):
                    if isinstance(inner, (ast.Import, ast.ImportFrom)) and _package_imports(inner, path.stem):
                        hidden.append(f"{path.name}:{inner.lineno} in {node.name}")
    assert hidden == []


def test_the_package_modules_import_without_cycles():
    graph = _graph()
    order: List[str] = []
    done: Set[str] = set()

    def visit(module: str, path: List[str]) -> None:
        if module in path:
            raise AssertionError("import cycle: " + " -> ".join(path[path.index(module):] + [module]))
        if module in done:
            return
        for imported in sorted(graph[module]):
            visit(imported, path + [module])
        done.add(module)
        order.append(module)

    for module in sorted(graph):
        visit(module, [])
    assert order.index("enums") < order.index("errors") < order.index("types") < order.index("cells")
    assert graph["enums"] == set()


# Imports one module of the package with an empty package around it (the
# package's __init__, which imports every module, does not run first).
_ALONE = """
import importlib, sys, types
package = types.ModuleType("loadstate")
package.__path__ = [sys.argv[1]]
sys.modules["loadstate"] = package
importlib.import_module("loadstate." + sys.argv[2])
"""


def test_each_module_imports_on_its_own():
    modules = sorted(path.stem for path in PACKAGE.glob("*.py") if path.stem != "__init__")
    for module in modules:
        result = subprocess.run([sys.executable, "-c", _ALONE, str(PACKAGE), module], capture_output=True, text=True)
        assert result.returncode == 0, f"loadstate.{module}: {result.stderr}"
