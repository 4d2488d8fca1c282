"""The package's boundaries: pure modules import nothing from Airflow, and no module imports itself back.

A module is *pure* when its docstring says so, the house convention: a sentence starting with "Pure"
("Pure logic.", "Pure: ...") or the words "no Airflow" / "nor Airflow" ("Pure, no Airflow import").
Both checks read the package from disk, so modules are found wherever they move. The import graph has
an edge per module-level import, to the module named (``from x import y``: to ``x.y`` when that is a
module), as import-linter and pylint count them; the package ``__init__`` that Python runs on the way is
not an edge of its own. Imports made inside functions count too: they close the same circle, only later.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = "airflow_leastaction"
ROOT = Path(importlib.util.find_spec(PACKAGE).origin).parent  # found without importing the package
PURE = re.compile(r"(?:^|[.:;!?]\s+)Pure\b|\b(?:no|nor) Airflow\b")
#: What the pure modules must hold between them: the rules of both gate models, wherever they live.
KNOWN_PURE = {
    "check_parent_interval",
    "cron_granularity",
    "TaskIdentity",
    "judge_parent",
    "judge_whole_interval",
    "decide",
    "judge_upstream_task",
    "RunCondition",
    "evaluate",
    "GateSpec",
    "WaitPolicy",
    "check_condition",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules() -> dict[str, ast.Module]:
    """Every module of the package, parsed. Package data (migration scripts) is not imported as modules."""
    return {
        module_name(p): ast.parse(p.read_text(encoding="utf-8"), str(p))
        for p in sorted(ROOT.rglob("*.py"))
        if "migrations" not in p.relative_to(ROOT).parts
    }


MODULES = package_modules()
PURE_MODULES = sorted(name for name, tree in MODULES.items() if PURE.search(ast.get_docstring(tree) or ""))


def test_pure_modules_are_found_by_their_docstrings():
    defined = {
        node.name
        for name in PURE_MODULES
        for node in MODULES[name].body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef))
    }
    assert PURE_MODULES, "no module of the package says it is pure logic in its docstring"
    assert defined >= KNOWN_PURE, f"rules not in a pure module: {sorted(KNOWN_PURE - defined)}"


@pytest.mark.parametrize("module", PURE_MODULES)
def test_importing_a_pure_module_leaves_airflow_out(module):
    # A fresh interpreter per module: whatever an earlier import pulled in cannot hide this one's imports.
    code = (
        f"import importlib, sys; importlib.import_module({module!r}); "
        "print(' '.join(sorted(m for m in sys.modules if m == 'airflow' or m.startswith('airflow.'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [], f"{module} imports Airflow: {done.stdout.split()[:5]}"


# -- import cycles ------------------------------------------------------------------------------------------
def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_level_imports(body: list[ast.stmt]):
    """Imports run when the module is imported: top level, and inside top-level if/try/with blocks, but
    not in functions, nor under ``if TYPE_CHECKING:``."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _module_level_imports(node.body)
            yield from _module_level_imports(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                yield from _module_level_imports(block)
        elif isinstance(node, (ast.With, ast.ClassDef)):
            yield from _module_level_imports(node.body)


def is_package(module: str) -> bool:
    return (ROOT.parent / Path(*module.split(".")) / "__init__.py").exists()


def _imported(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The package modules ``node`` imports: ``from x import y`` is module ``x.y`` when that exists."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.split(".") if is_package(module) else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    return [f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES else source for alias in node.names]


def _every_import(body: list[ast.stmt]):
    """Every import of a module, also those made inside functions (they close a circle when called), but
    not those under ``if TYPE_CHECKING:``."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _every_import(node.orelse)
        else:
            for child in ast.iter_child_nodes(node):
                yield from _every_import([child]) if isinstance(child, ast.stmt) else ()


def import_graph(imports=_module_level_imports) -> dict[str, set[str]]:
    return {
        name: {
            target
            for node in imports(tree.body)
            for target in _imported(name, node)
            if target in MODULES and target != name
        }
        for name, tree in MODULES.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` as the list of its modules (first repeated at the end), or None. Iterative DFS."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if start in state:
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph[nxt])))
    return None


def test_the_cycle_finder_finds_a_cycle_and_only_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_only_imports_run_at_import_time_count():
    source = """
import a
from b import c
if TYPE_CHECKING:
    import typing_only
if sys.version_info >= (3, 12):
    import new
else:
    import old
try:
    import fast
except ImportError:
    import slow
def later():
    import inside_a_function
class Holder:
    import in_a_class_body
"""
    found = [
        alias.name if isinstance(n, ast.Import) else n.module
        for n in _module_level_imports(ast.parse(source).body)
        for alias in n.names[:1]
    ]
    assert found == ["a", "b", "new", "old", "fast", "slow", "in_a_class_body"]


def test_relative_imports_resolve_to_the_package_modules():
    # Taken from the package as it is, so the check holds wherever modules move: a subpackage, one of its
    # modules, and the package holding the subpackage.
    modules_of = {m: [o for o in MODULES if o.rpartition(".")[0] == m and not is_package(o)] for m in MODULES}
    package = next(m for m in MODULES if m.count(".") >= 1 and is_package(m) and modules_of[m])
    child = modules_of[package][0]
    short = package.rpartition(".")[2]
    leaf = child.rpartition(".")[2]

    def resolve(module: str, line: str) -> list[str]:
        return _imported(module, ast.parse(line).body[0])

    assert resolve(child, f"from . import {leaf}") == [child]
    assert resolve(child, f"from .{leaf} import anything") == [child]
    assert resolve(package, f"from . import {leaf}") == [child]
    assert resolve(child, f"from .. import {short}") == [package]
    assert resolve(child, f"from ..{short}.{leaf} import anything") == [child]
    assert resolve(child, "import json") == ["json"]


def test_the_import_graph_sees_the_package_imports():
    graph = import_graph()
    assert sum(len(targets) for targets in graph.values()) > len(graph) / 2, "the graph lost the package imports"


def test_the_package_has_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def _imports_airflow_anywhere(tree: ast.Module) -> bool:
    """Any import of Airflow, at module level or inside a function."""
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        if any(n == "airflow" or n.startswith("airflow.") for n in names):
            return True
    return False


def test_the_modules_the_contributing_guide_calls_pure_import_no_airflow_anywhere():
    text = " ".join((ROOT.parent / "docs" / "contributing.md").read_text().split())
    rule = re.search(r"\*\*Pure modules import no Airflow\.\*\*(.*?)(?=\s- \*\*)", text).group(1)
    pure_part, _, exceptions = rule.partition("are the exceptions")
    named = re.findall(r"`([\w/]+(?:\.py)?)`", pure_part.split("runs without Airflow")[0])
    excepted = {
        f"{PACKAGE}.{p.removesuffix('.py').replace('/', '.')}".removesuffix(".__init__")
        for p in re.findall(r"`([\w/]+\.py)`", exceptions)
    }
    prefixes = [f"{PACKAGE}.{p.rstrip('/').removesuffix('.py').replace('/', '.')}" for p in named]
    covered = [m for m in MODULES if any(m == p or m.startswith(p + ".") for p in prefixes) and m not in excepted]
    assert len(covered) > len(prefixes), covered
    assert [m for m in covered if _imports_airflow_anywhere(MODULES[m])] == []


def test_imports_inside_functions_are_seen_but_not_those_for_type_checkers():
    source = """
import a
def later():
    import inside_a_function
    if x:
        from b import c
class Holder:
    def method(self):
        import in_a_method
if TYPE_CHECKING:
    import typing_only
"""
    found = [
        alias.name if isinstance(n, ast.Import) else n.module
        for n in _every_import(ast.parse(source).body)
        for alias in n.names[:1]
    ]
    assert found == ["a", "inside_a_function", "b", "in_a_method"]


def test_no_import_cycle_closes_through_an_import_inside_a_function():
    cycle = find_cycle(import_graph(_every_import))
    assert cycle is None, "import cycle (counting imports inside functions): " + " -> ".join(cycle)
