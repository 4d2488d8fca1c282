"""The package's boundaries: pure modules import nothing from Airflow, no module imports itself back, and
no module imports from a layer above its own (docs/architecture.md draws the layers).

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


# -- layers -------------------------------------------------------------------------------------------------
# docs/architecture.md draws them. A module may import its own layer and the layers below it, never one
# above. Imports for type checkers only (``if TYPE_CHECKING:``) do not count: they run nowhere.
KERNEL, RULES, STORE, SEAM, COMPONENTS, SURFACE = range(6)
LAYER_NAMES = ("kernel", "rules", "store", "seam", "components", "surface")

#: Each package's layer, and the modules of a package that spans layers. The most specific name wins.
#: The package root has no default: a new top-level module, or a new package, must be given a layer here.
LAYERS = {
    # The shared kernel: what every layer may use.
    f"{PACKAGE}.identity": KERNEL,
    f"{PACKAGE}.states": KERNEL,
    f"{PACKAGE}.exceptions": KERNEL,
    f"{PACKAGE}.config": KERNEL,
    f"{PACKAGE}.version_compat": KERNEL,
    f"{PACKAGE}.crash_points": KERNEL,
    f"{PACKAGE}.instants": KERNEL,
    # Pure judges: the rules of each model, and the names DAG code gives catalog tasks.
    f"{PACKAGE}.refs": RULES,
    f"{PACKAGE}.gating": RULES,
    f"{PACKAGE}.intervals": RULES,
    f"{PACKAGE}.run_conditions": RULES,
    f"{PACKAGE}.reruns.plan": RULES,
    f"{PACKAGE}.dbt.policy": RULES,
    f"{PACKAGE}.dbt.request_key": RULES,
    f"{PACKAGE}.dbt.reuse": RULES,
    f"{PACKAGE}.dbt.manifest": RULES,
    f"{PACKAGE}.dbt.planner": RULES,  # asks the runner it is given; imports it for type checkers only
    f"{PACKAGE}.triggers.wire": RULES,  # the vocabulary between a task, its trigger and an asset's state
    f"{PACKAGE}.assets.keys": RULES,
    f"{PACKAGE}.expectations": RULES,  # the expected-time rule; its reads are the store's
    # The stores: the catalog's, the dbt queue's, and the named operations features run through them.
    f"{PACKAGE}.catalog": STORE,
    f"{PACKAGE}.dbt": STORE,
    f"{PACKAGE}.gating.admission": STORE,
    f"{PACKAGE}.reruns.plan_reads": STORE,
    f"{PACKAGE}.expectations.reads": STORE,
    f"{PACKAGE}.expectations.history": STORE,
    # The seams: where the provider meets Airflow, and the one module that invokes dbt.
    f"{PACKAGE}.airflow_seam": SEAM,
    f"{PACKAGE}.rows": SEAM,
    f"{PACKAGE}.dbt.runner": SEAM,
    # Airflow's components, and the features that act through Airflow.
    PACKAGE: COMPONENTS,  # the provider's entry point for Airflow (provider info) and report_completion
    f"{PACKAGE}.run_conditions.__init__": COMPONENTS,  # the declaration helpers build the gate operators
    f"{PACKAGE}.run_conditions.native": COMPONENTS,  # the pre-execute hook of a native run condition
    f"{PACKAGE}.catalog.outcomes": COMPONENTS,  # a recorded completion sweeps for late arrivals
    f"{PACKAGE}.catalog.external": COMPONENTS,  # report_completion: the same writer path, from outside
    f"{PACKAGE}.reruns": COMPONENTS,
    f"{PACKAGE}.dbt.demand": STORE,
    f"{PACKAGE}.dbt.passes": COMPONENTS,
    f"{PACKAGE}.dbt.worker": COMPONENTS,
    f"{PACKAGE}.dbt.heartbeat": COMPONENTS,
    f"{PACKAGE}.triggers": COMPONENTS,
    f"{PACKAGE}.operators": COMPONENTS,
    f"{PACKAGE}.sensors": COMPONENTS,
    f"{PACKAGE}.listeners": COMPONENTS,
    f"{PACKAGE}.timetables": COMPONENTS,
    f"{PACKAGE}.assets": COMPONENTS,
    f"{PACKAGE}.lineage": COMPONENTS,
    f"{PACKAGE}.hooks": COMPONENTS,
    # What people use: the UI inside Airflow, the plugin that registers it, the command line.
    f"{PACKAGE}.www": SURFACE,
    f"{PACKAGE}.plugins": SURFACE,
    f"{PACKAGE}.cli": SURFACE,
}


def layer_of(module: str) -> int | None:
    """The layer of ``module``: its own entry, else its package's (a package's ``__init__`` is the package
    itself unless ``<package>.__init__`` has an entry), else None. The package root is no default."""
    if is_package(module) and f"{module}.__init__" in LAYERS:
        return LAYERS[f"{module}.__init__"]
    if module in LAYERS:
        return LAYERS[module]
    parts = module.split(".")
    for end in range(len(parts) - 1, 1, -1):
        if ".".join(parts[:end]) in LAYERS:
            return LAYERS[".".join(parts[:end])]
    return None


def upward_imports(modules: dict[str, ast.Module]) -> list[str]:
    """Every import of a module from a higher layer than its own, as ``importer (layer) -> imported (layer),
    line N``; imports inside functions count, those for type checkers do not."""
    found = []
    for name, tree in sorted(modules.items()):
        for node in _every_import(tree.body):
            for target in _imported(name, node):
                if target in MODULES and target != name and layer_of(target) > layer_of(name):
                    found.append(
                        f"{name} ({LAYER_NAMES[layer_of(name)]}) -> {target} "
                        f"({LAYER_NAMES[layer_of(target)]}), line {node.lineno}"
                    )
    return found


def test_every_module_has_a_layer():
    assert [m for m in MODULES if layer_of(m) is None] == [], "give each of these modules a layer in LAYERS"


def test_every_layer_entry_names_a_module_or_a_package():
    stale = [n for n in LAYERS if n not in MODULES and n.removesuffix(".__init__") not in MODULES]
    assert stale == [], f"LAYERS names what the package no longer has: {stale}"


def test_the_layer_check_finds_an_upward_import_also_inside_a_function_but_not_for_type_checkers():
    kernel, store, ui = f"{PACKAGE}.identity", f"{PACKAGE}.catalog.store", f"{PACKAGE}.www.app"
    source = f"""
import {store}
def later():
    from {PACKAGE}.www import app
if TYPE_CHECKING:
    from {PACKAGE}.cli import main
"""
    assert (layer_of(kernel), layer_of(store), layer_of(ui)) == (KERNEL, STORE, SURFACE)
    assert upward_imports({kernel: ast.parse(source)}) == [
        f"{kernel} (kernel) -> {store} (store), line 2",
        f"{kernel} (kernel) -> {ui} (surface), line 4",
    ]
    assert upward_imports({ui: ast.parse(f"import {kernel}")}) == []


def test_no_module_imports_from_a_higher_layer():
    found = upward_imports(MODULES)
    assert found == [], "imports from a higher layer (see docs/architecture.md):\n" + "\n".join(found)
