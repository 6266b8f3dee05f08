"""The shipped code stays one a reader can hold: short functions and modules, no import circles, no test support.

The limits are the developers' guide's: no function over 80 lines and no module
over 450 in the product packages; classgrader's modules import each other in one
direction (an import for the type checker only does not count); and nothing
shipped imports ``devtools`` (the tests' and benchmarks' support).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PRODUCT = ("sdpa_course", "nbgrader_tools", "classgrader", "_ext")
MAX_FUNCTION = 80
MAX_MODULE = 450


def product_files() -> list[Path]:
    return sorted(p for pkg in PRODUCT for p in (REPO / pkg).rglob("*.py") if "node_modules" not in p.parts)


def too_long(path: Path, source: str) -> list[str]:
    """``file:line name (n lines)`` for each function over the limit, and the module if it is over its own."""
    found = []
    lines = source.count("\n") + (not source.endswith("\n"))
    if lines > MAX_MODULE:
        found.append(f"{path}: module of {lines} lines")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION:
                found.append(f"{path}:{node.lineno} {node.name} ({length} lines)")
    return found


def runtime_imports(source: str, package: str) -> set[str]:
    """The modules of ``package`` that ``source`` imports when it runs (not under ``if TYPE_CHECKING:``)."""
    tree = ast.parse(source)
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
        for inner in ast.walk(node)
    }
    found = set()
    inside = lambda name: name == package or name.startswith(package + ".")  # noqa: E731
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if inside(alias.name))
        elif isinstance(node, ast.ImportFrom) and node.module and inside(node.module):
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each circle of imports in ``graph`` (module -> the modules it imports), once."""
    edges = {m: {d for d in deps if d in graph and d != m and not m.startswith(d + ".")} for m, deps in graph.items()}
    cycles: set[tuple[str, ...]] = set()

    def walk(path: list[str]) -> None:
        for nxt in edges[path[-1]]:
            if nxt in path:
                cycle = path[path.index(nxt) :]
                first = cycle.index(min(cycle))
                cycles.add(tuple(cycle[first:] + cycle[:first]))
            elif len(path) < len(edges):
                walk([*path, nxt])

    for module in edges:
        walk([module])
    return [list(c) for c in sorted(cycles)]


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_function_over_80_lines_in_the_product():
    # A long module is a hint to look at, not a reason to cut it into pieces: it is listed, not failed.
    found = [line for path in product_files() for line in too_long(path.relative_to(REPO), path.read_text())]
    print("\n".join(line for line in found if "module of" in line))
    functions = [line for line in found if "module of" not in line]
    assert not functions, "\n".join(functions)


def test_the_length_scan_finds_a_long_function_and_a_long_module():
    long_function = "def f():\n" + "    x = 1\n" * MAX_FUNCTION
    assert too_long(Path("a.py"), long_function) == [f"a.py:1 f ({MAX_FUNCTION + 1} lines)"]
    long_module = "x = 1\n" * (MAX_MODULE + 1)
    assert too_long(Path("b.py"), long_module) == [f"b.py: module of {MAX_MODULE + 1} lines"]
    assert too_long(Path("c.py"), "def f():\n" + "    x = 1\n" * (MAX_FUNCTION - 1)) == []


def test_classgrader_has_no_import_circle():
    graph = {
        module_name(p): runtime_imports(p.read_text(), "classgrader")
        for p in sorted((REPO / "classgrader").rglob("*.py"))
    }
    assert len(graph) > 30
    assert not import_cycles(graph), import_cycles(graph)


def test_the_cycle_scan_finds_a_circle_and_ignores_type_only_imports():
    a = "from pkg.b import thing\n"
    b = "from pkg import c\n"
    c = "def f():\n    from pkg.a import other\n"
    graph = {"pkg.a": runtime_imports(a, "pkg"), "pkg.b": runtime_imports(b, "pkg"), "pkg.c": runtime_imports(c, "pkg")}
    assert import_cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import other\n"
    graph["pkg.c"] = runtime_imports(typed, "pkg")
    assert import_cycles(graph) == []
    assert runtime_imports("import pkg.a\nimport other\n", "pkg") == {"pkg.a"}


@pytest.mark.parametrize("package", PRODUCT)
def test_nothing_shipped_imports_the_test_support(package):
    users = [
        str(p.relative_to(REPO))
        for p in sorted((REPO / package).rglob("*.py"))
        if "node_modules" not in p.parts and runtime_imports(p.read_text(), "devtools")
    ]
    assert not users, users
