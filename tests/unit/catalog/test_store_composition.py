"""The catalog store is composed, not stacked: each part is a class that declares what it uses.

Read from source: for every class under ``catalog/``, each ``self.X`` it reads must be assigned by the class
itself, be one of its methods, properties or class attributes, be a field it declares (a dataclass's or a
named tuple's annotation), or come from a base class defined in the same module or outside the package. An
attribute only a sibling part or a subclass sets (a mixin's ``self.engine``, another part's private method)
fails, naming the module, class and line.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import textwrap
from collections.abc import Iterator
from pathlib import Path

from airflow_leastaction.catalog.store import CatalogStore

PACKAGE = "airflow_leastaction"
CATALOG = Path(importlib.util.find_spec(f"{PACKAGE}.catalog").origin).parent
#: Classes whose bare annotations are fields they are built with.
FIELD_BASES = {"NamedTuple", "TypedDict"}


def _is_dataclass(node: ast.ClassDef) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if ast.unparse(target).split(".")[-1] == "dataclass":
            return True
    return False


def _methods(node: ast.ClassDef) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Each method of ``node`` with the name its instance goes by (static and class methods have none)."""
    for item in node.body:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) or not item.args.args:
            continue
        decorators = {ast.unparse(d) for d in item.decorator_list}
        if not decorators & {"staticmethod", "classmethod"}:
            yield item.args.args[0].arg, item


def _own_names(node: ast.ClassDef) -> set[str]:
    """What ``node`` itself declares: methods, class attributes, fields, and what its methods assign on self."""
    fields = _is_dataclass(node) or any(ast.unparse(b).split(".")[-1] in FIELD_BASES for b in node.bases)
    names = set()
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(item.name)
        elif isinstance(item, ast.Assign):
            names.update(t.id for t in item.targets if isinstance(t, ast.Name))
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and (item.value or fields):
            names.add(item.target.id)  # a bare annotation in a plain class is a promise someone else keeps
    names.update(attr.attr for attr in _on_self(node, ast.Store))
    return names


def _on_self(node: ast.ClassDef, ctx: type[ast.expr_context]) -> Iterator[ast.Attribute]:
    """Each ``self.X`` the methods of ``node`` read (``ast.Load``) or assign (``ast.Store``)."""
    for me, method in _methods(node):
        for sub in ast.walk(method):
            if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ctx) and ast.unparse(sub.value) == me:
                yield sub


def _imported(tree: ast.Module) -> dict[str, str]:
    """Each name the module imports, with the module it comes from."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            found.update((a.asname or a.name, node.module) for a in node.names)
    return found


def _inherited(base: ast.expr, classes: dict[str, ast.ClassDef], imported: dict[str, str]) -> set[str] | None:
    """What ``base`` gives its subclasses: a class of the same module, all it declares; a class from outside the
    package, everything it has; a class of another module of the package, nothing (None: not a plain name)."""
    name = ast.unparse(base)
    if name in classes:
        return _known(classes[name], classes, imported)
    source = imported.get(name)
    if source is None or source.split(".")[0] == PACKAGE:
        return set() if source else None
    return set(dir(getattr(importlib.import_module(source), name)))


def _known(node: ast.ClassDef, classes: dict[str, ast.ClassDef], imported: dict[str, str]) -> set[str]:
    names = _own_names(node) | set(dir(object))
    for base in node.bases:
        names |= _inherited(base, classes, imported) or set()
    return names


def undeclared_reads(source: str, module: str) -> list[str]:
    """``module:line: Class.attr`` for each ``self.attr`` a class of ``source`` reads but never declares."""
    tree = ast.parse(source)
    classes = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    imported = _imported(tree)
    found = []
    for node in classes.values():
        known = _known(node, classes, imported)
        found += [f"{module}:{a.lineno}: {node.name}.{a.attr}" for a in _on_self(node, ast.Load) if a.attr not in known]
    return sorted(set(found))


def test_the_catalog_store_inherits_from_nothing_but_object():
    assert CatalogStore.__bases__ == (object,), "compose the store's parts as attributes, do not inherit them"


def test_every_catalog_class_reads_only_attributes_it_declares():
    found = [
        line
        for path in sorted(CATALOG.rglob("*.py"))
        for line in undeclared_reads(path.read_text(encoding="utf-8"), str(path.relative_to(CATALOG.parent)))
    ]
    assert found == [], "classes read attributes they never assign or declare (pass them to the constructor)"


MIXIN = textwrap.dedent(
    """
    from airflow_leastaction.catalog.transactions import Transactions
    from sqlalchemy.types import TypeDecorator

    class Reads:
        transactions: Transactions

        def read(self):
            return self.transactions.write(), self._sibling()

    class Store(Reads):
        def __init__(self, transactions):
            self.transactions = transactions

    class Column(TypeDecorator):
        def bind(self):
            return self.comparator_factory, self.cache_ok

    class Parts:
        def __init__(self, transactions):
            self.reads = Reads()
            self.transactions = transactions

        @property
        def writes(self):
            return self.transactions

        def both(self):
            return self.reads, self.writes
    """
)


def test_the_check_names_a_mixins_undeclared_attributes_and_nothing_else():
    assert undeclared_reads(MIXIN, "mixin.py") == ["mixin.py:9: Reads._sibling", "mixin.py:9: Reads.transactions"]
